#include "apps/cmd_import.h"

#include <iostream>

#include "core/output_file.h"

namespace cs::cli {

void add_trace_options(CLI::App& cmd, drv::TraceSource& s) {
  cmd.add_option("--world", s.world, "Ranks of the job: one rank's trace replicated (the others mirror it; every collective on all ranks)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--comm-groups", s.comm_groups, "The process groups' ranks, {\"pg_name\": [ranks]} (ASTRA-sim's comm-group configuration); default: inferred");
  cmd.add_option("--issue", s.issue, "How each rank's streams issue ops: ready_first (ASTRA-sim; the default for traces), stream_order, dependencies");
  cmd.add_flag("--retime", s.retime, "Time GPU kernels whose FLOPs the trace gives (num_ops, GEMM shapes) with the compute model");
  cmd.add_flag("--recorded-communication", s.recorded_communication, "Replay collectives and transfers with their recorded durations, off the network");
  cmd.add_flag("--control-dependencies", s.control_dependencies, "Enforce control dependencies too (on nodes the trace holds, not on itself)");
}

void print_import_report(std::ostream& out, const drv::TraceWorkload& w) {
  if (!w.report) return;
  const tg::ChakraImportReport& r = *w.report;
  out << "  traces           " << r.ranks << " (" << w.files.front() << (w.files.size() > 1 ? " ... " + w.files.back() : std::string()) << "), "
      << r.nodes << " nodes:";
  for (std::size_t t = 0; t < r.by_type.size(); ++t) {
    if (r.by_type[t] > 0) out << " " << r.by_type[t] << " " << tg::chakra_node_type_name(t);
  }
  for (const auto& [type, count] : r.unknown_types) out << " " << count << " of unknown type " << type;
  out << "\n  became           " << r.host_ops << " host ops and " << r.kernels_recorded << " kernels as recorded, " << r.kernels_computed
      << " kernels timed by the compute model, " << r.collectives << " collective and " << r.point_to_point << " point-to-point ops, "
      << r.communication_recorded << " communications as recorded, " << r.memory_ops << " memory ops; " << r.skipped << " nodes skipped\n"
      << "  dependencies     " << r.data_dependencies << " data kept, " << r.control_dependencies << " control "
      << (r.control_enforced ? "enforced" : "not enforced") << "; "
      << r.annotations << " attributes kept as annotations\n";
  for (const std::string& g : r.groups) out << "  process group    " << g << "\n";
}

CLI::App* add_import_command(CLI::App& app, ImportOptions& o) {
  auto* cmd = app.add_subcommand("import", "Convert recorded workloads into clustersim's TaskGraph");
  cmd->require_subcommand(1);
  auto* chakra = cmd->add_subcommand("chakra", "Chakra execution traces (PREFIX.<rank>.et) as a TaskGraph file (docs/chakra.md)");
  chakra->add_option("traces", o.source.inputs, "A prefix (PREFIX.0.et, PREFIX.1.et, ...) or the ranks' files in order")->required();
  chakra->add_option("--out", o.out, "Write the TaskGraph here (\"-\": standard output)")->required();
  chakra->add_flag("--json", o.json, "Print the import report as JSON");
  add_trace_options(*chakra, o.source);
  return cmd;
}

int run_import_command(const ImportOptions& o) {
  const drv::TraceWorkload w = drv::load_trace_workload(o.source);
  write_output_file(o.out, w.graph.to_json().dump(1) + "\n", "--out");
  // With "--out -" standard output holds the graph alone; the report goes to stderr.
  std::ostream& out = o.out == "-" ? std::cerr : std::cout;
  if (o.json) {
    out << drv::import_report_json(*w.report).dump(2) << "\n";
    return 0;
  }
  out << "clustersim import chakra: " << w.graph.size() << " ops on " << w.graph.ranks() << " ranks (" << w.graph.mirrored() << " mirrored), "
      << w.graph.groups().size() << " process groups, issue order " << tg::to_string(w.graph.issue_order()) << " -> " << o.out << "\n";
  print_import_report(out, w);
  return 0;
}

}  // namespace cs::cli
