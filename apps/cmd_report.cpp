#include "apps/cmd_report.h"

#include <filesystem>
#include <iostream>
#include <system_error>

#include "core/errors.h"
#include "core/output_file.h"
#include "results/report_html.h"

namespace cs::cli {

CLI::App* add_report_command(CLI::App& app, ReportOptions& o) {
  auto* cmd = app.add_subcommand("report", "Write an HTML report (charts and tables) of a run folder or a sweep's results file");
  cmd->add_option("input", o.input, "A `clustersim run --out` folder, or a sweep's results file (.csv or .jsonl)")->required();
  cmd->add_option("-o,--out", o.out, "The HTML file to write (- for standard output)")->required();
  return cmd;
}

int run_report_command(const ReportOptions& o) {
  // A slip of the keyboard (`report rows.csv -o rows.csv`) must not replace the results with the page.
  std::error_code ec;
  if (o.out != "-" && std::filesystem::equivalent(o.input, o.out, ec)) {
    throw ConfigError("", "--out", "\"" + o.out + "\" is the input itself; name another file for the page");
  }
  // The whole page is made before anything is written: bad input leaves no file.
  const std::string html = results::report_html(o.input);
  write_output_file(o.out, html, "--out");
  if (o.out != "-") std::cout << "clustersim report: " << o.input << " -> " << o.out << " (" << (html.size() + 512) / 1024 << " KiB)\n";
  return 0;
}

}  // namespace cs::cli
