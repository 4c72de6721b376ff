// A workload that is a recorded or written graph rather than a model and a plan: Chakra
// execution traces (imported with taskgraph/chakra_import.h) or a TaskGraph JSON file
// (docs/taskgraph-format.md). What `clustersim import chakra` converts and `clustersim run
// --trace` replays (docs/chakra.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskgraph/chakra_import.h"
#include "taskgraph/task_graph.h"

namespace cs::drv {

struct TraceSource {
  // One argument: a TaskGraph file (.json), one trace file (.et), or a prefix whose files
  // PREFIX.0.et, PREFIX.1.et, ... are the ranks; several: the ranks' trace files in order.
  std::vector<std::string> inputs;
  std::uint32_t world = 0;          // --world: ranks of the job (a one-rank trace replicated)
  std::string comm_groups;          // --comm-groups FILE ({"pg_name": [ranks]})
  std::string issue;                // --issue: stream_order, ready_first or dependencies ("" keeps the trace's)
  bool retime = false;              // --retime
  bool recorded_communication = false;  // --recorded-communication
  bool control_dependencies = false;    // --control-dependencies
};

struct TraceWorkload {
  tg::TaskGraph graph;
  std::vector<std::string> files;   // what was read, ranks in order
  std::optional<tg::ChakraImportReport> report;  // for Chakra traces
};

// Reads and maps the source; errors name the file and, in a trace, the byte offset or node id
// (exit 2), options by their flag.
TraceWorkload load_trace_workload(const TraceSource& source);

// The import report as JSON (docs/chakra.md, "Import report"): counts by node type and by what
// each node became, dependencies kept and not enforced, the process groups.
nlohmann::json import_report_json(const tg::ChakraImportReport& report);

}  // namespace cs::drv
