#include "apps/cmd_plan.h"

#include <iostream>

#include "core/atomic_file.h"
#include "drivers/experiment.h"
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
  const wl::TrainingGraph g = wl::build_training_graph(drv::load_model(e), e.plan, e.file, e.at("plan"), e.symmetry);
  write_file_atomically(o.emit_graph, g.graph.to_json().dump(1) + "\n");
  std::cout << "clustersim plan: " << g.graph.size() << " ops on " << g.graph.ranks() << " simulated ranks ("
            << g.graph.mirrored() << " mirrored), " << g.graph.groups().size() << " process groups -> " << o.emit_graph << "\n";
  return 0;
}

}  // namespace cs::cli
