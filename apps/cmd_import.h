// `clustersim import chakra PREFIX_OR_FILES --out graph.json`: Chakra execution traces as a
// TaskGraph file (docs/chakra.md), and the trace options `run --trace` shares.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "drivers/trace_workload.h"

namespace cs::cli {

struct ImportOptions {
  drv::TraceSource source;
  std::string out;
  bool json = false;
};

// --world, --comm-groups, --issue, --retime, --recorded-communication, --control-dependencies
// (drivers/trace_workload.h).
void add_trace_options(CLI::App& cmd, drv::TraceSource& source);
// The import report, a few lines for people.
void print_import_report(std::ostream& out, const drv::TraceWorkload& w);

CLI::App* add_import_command(CLI::App& app, ImportOptions& opts);
int run_import_command(const ImportOptions& opts);

}  // namespace cs::cli
