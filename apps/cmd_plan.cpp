#include "apps/cmd_plan.h"

#include <iostream>

#include "core/output_file.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"
#include "sim/collectives/machine.h"
#include "workloads/training_graph.h"

namespace cs::cli {

CLI::App* add_plan_command(CLI::App& app, PlanOptions& o) {
  auto* cmd = app.add_subcommand("plan", "Build the TaskGraph of one training iteration (docs/taskgraph-format.md)");
  cmd->add_option("experiment", o.experiment, "Experiment file")->required();
  cmd->add_option("--set", o.overrides, "Override an experiment value: /json/pointer=value (repeatable)");
  cmd->add_option("--emit-graph", o.emit_graph, "Write the graph as JSON to this file")->required();
  return cmd;
}

int run_plan_command(const PlanOptions& o) {
  const drv::Experiment e = drv::load_experiment(o.experiment, o.overrides);
  // The same checks as `run` (the plan against the cluster too), before anything is built.
  const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, drv::experiment_catalog(e));
  const wl::Model model = drv::load_model(e);
  drv::check_plan_fits(e, machine.cluster, model);
  const wl::TrainingGraph g = wl::build_training_graph(model, e.plan, e.file, e.at("plan"), e.symmetry);
  write_output_file(o.emit_graph, g.graph.to_json().dump(1) + "\n", "--emit-graph");
  // With "--emit-graph -" standard output holds the graph alone; the summary goes to stderr.
  std::ostream& summary = o.emit_graph == "-" ? std::cerr : std::cout;
  summary << "clustersim plan: " << g.graph.size() << " ops on " << g.graph.ranks() << " simulated ranks ("
            << g.graph.mirrored() << " mirrored), " << g.graph.groups().size() << " process groups -> " << o.emit_graph << "\n";
  return 0;
}

}  // namespace cs::cli
