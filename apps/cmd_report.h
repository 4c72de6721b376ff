// `clustersim report INPUT -o report.html`: one self-contained HTML page of charts and tables
// (results/report_html.h) from a `clustersim run --out` folder or a sweep's results file,
// written all or nothing (core/output_file.h). docs/cli.md, "report"; docs/report.md.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ReportOptions {
  std::string input;
  std::string out;
};

CLI::App* add_report_command(CLI::App& app, ReportOptions& opts);
int run_report_command(const ReportOptions& opts);

}  // namespace cs::cli
