#include "apps/cmd_topo.h"

#include <iostream>

#include "apps/cli_common.h"
#include "core/output_file.h"
#include "core/errors.h"
#include "topology/export_dot.h"
#include "topology/properties.h"

namespace cs::cli {

void add_topo_commands(CLI::App& app, TopoOptions& info, TopoOptions& export_opts) {
  auto* topo = app.add_subcommand("topo", "Inspect a cluster file");
  topo->require_subcommand(1);
  auto* i = topo->add_subcommand("info", "Counts, diameter, bisection bandwidth, oversubscription per tier");
  i->add_option("cluster", info.cluster, "Cluster file, or a bundled example name")->required();
  i->add_option("--set", info.overrides, "Override a value: /json/pointer=value (repeatable)");
  i->add_flag("--json", info.json, "Print JSON instead of the table");
  auto* e = topo->add_subcommand("export", "Export the cluster graph");
  e->add_option("cluster", export_opts.cluster, "Cluster file, or a bundled example name")->required();
  e->add_option("--set", export_opts.overrides, "Override a value: /json/pointer=value (repeatable)");
  e->add_flag("--dot", export_opts.dot, "Graphviz dot format (the only format so far)")->required();
  e->add_option("-o,--output", export_opts.output, "Write to this file instead of standard output");
}

int run_topo_info(const TopoOptions& o) {
  const coll::Machine machine = load_machine(o.cluster, o.overrides);
  print_warnings(machine.warnings);
  const topo::TopologySummary s = topo::summarize(machine.cluster);
  if (o.json) {
    nlohmann::json j = topo::to_json(s);
    list_warnings_in(j, machine.warnings);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << topo::to_table(s);
  }
  return 0;
}

int run_topo_export(const TopoOptions& o) {
  const coll::Machine machine = load_machine(o.cluster, o.overrides);
  const std::string dot = topo::export_dot(machine.cluster);
  if (o.output.empty()) {
    print_warnings(machine.warnings);
    std::cout << dot;
  } else {
    write_output_file(o.output, dot, "--output");
    print_warnings(machine.warnings);
  }
  return 0;
}

}  // namespace cs::cli
