#include "apps/cmd_plan.h"

#include <iostream>

#include "core/errors.h"
#include "core/output_file.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"
#include "sim/collectives/machine.h"
#include "taskgraph/chakra_export.h"
#include "workloads/training_graph.h"

namespace cs::cli {

CLI::App* add_plan_command(CLI::App& app, PlanOptions& o) {
  auto* cmd = app.add_subcommand("plan", "Build the TaskGraph of one training iteration (docs/taskgraph-format.md)");
  cmd->add_option("experiment", o.experiment, "Experiment file")->required();
  cmd->add_option("--set", o.overrides, "Override an experiment value: /json/pointer=value (repeatable)");
  auto* graph = cmd->add_option("--emit-graph", o.emit_graph, "Write the graph as JSON to this file");
  auto* chakra = cmd->add_option("--emit-chakra", o.emit_chakra,
                                 "Write the iteration as Chakra traces, every rank simulated, to this folder: workload.<rank>.et and comm_groups.json "
                                 "(for ASTRA-sim: --workload-configuration DIR/workload --comm-group-configuration DIR/comm_groups.json)");
  cmd->add_flag("--force", o.force, "Replace the --emit-chakra folder when it holds a previous export");
  graph->excludes(chakra);
  chakra->excludes(graph);
  return cmd;
}

namespace {

// Every rank simulated (a Chakra trace has no mirrored ranks).
int emit_chakra(const PlanOptions& o, const drv::Experiment& e, const wl::Model& model) {
  const int ranks = e.plan.gpus();
  std::vector<std::string> names{"comm_groups.json"};
  for (int r = 0; r < ranks; ++r) names.push_back("workload." + std::to_string(r) + ".et");
  OutputFolder folder(o.emit_chakra, "--emit-chakra", o.force, names);
  const wl::TrainingGraph g = wl::build_training_graph(model, e.plan, e.file, e.at("plan"), false);
  const tg::ChakraExport ex = tg::export_chakra(g.graph);
  for (std::size_t r = 0; r < ex.traces.size(); ++r) folder.write(names[r + 1], ex.traces[r]);
  folder.write("comm_groups.json", ex.comm_groups.dump(1) + "\n");
  folder.commit();
  std::cout << "clustersim plan: " << g.graph.size() << " ops on " << g.graph.ranks() << " ranks, " << ex.comm_groups.size()
            << " process groups -> " << o.emit_chakra << "/workload.<rank>.et, comm_groups.json\n";
  return 0;
}

}  // namespace

int run_plan_command(const PlanOptions& o) {
  const drv::Experiment e = drv::load_experiment(o.experiment, o.overrides);
  // The same checks as `run` (the plan against the cluster too), before anything is built.
  const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, drv::experiment_catalog(e));
  const wl::Model model = drv::load_model(e);
  drv::check_plan_fits(e, machine.cluster, model);
  if (o.emit_graph.empty() && o.emit_chakra.empty()) throw InputError("", "--emit-graph", "say where the graph goes: --emit-graph FILE or --emit-chakra DIR");
  if (!o.emit_chakra.empty()) return emit_chakra(o, e, model);
  const wl::TrainingGraph g = wl::build_training_graph(model, e.plan, e.file, e.at("plan"), e.symmetry);
  write_output_file(o.emit_graph, g.graph.to_json().dump(1) + "\n", "--emit-graph");
  // With "--emit-graph -" standard output holds the graph alone; the summary goes to stderr.
  std::ostream& summary = o.emit_graph == "-" ? std::cerr : std::cout;
  summary << "clustersim plan: " << g.graph.size() << " ops on " << g.graph.ranks() << " simulated ranks ("
            << g.graph.mirrored() << " mirrored), " << g.graph.groups().size() << " process groups -> " << o.emit_graph << "\n";
  return 0;
}

}  // namespace cs::cli
