// clustersim: the command line. Exit codes: 0 success, 2 bad input (one line naming the file and
// the JSON path or option), 1 internal error.
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/cmd_collective.h"
#include "apps/cmd_run.h"
#include "apps/cmd_topo.h"
#include "core/errors.h"

namespace {

// `clustersim run` with no arguments: the built-in default experiment. For now an all-reduce
// sweep on one DGX H100 node, nccl-tests style (-b 8 -e 8G -f 2).
int run_default() {
  cs::cli::CollectiveOptions o;
  o.cluster = "dgx-h100";
  o.op = "all_reduce";
  o.sweep = "8B:8GiB";
  std::cout << "clustersim: default experiment: all_reduce sweep on dgx-h100 (8x H100 SXM, NVLink4 + NVSwitch)\n";
  return cs::cli::run_collective_command(o);
}

int dispatch(int argc, char** argv) {
  CLI::App app{"clustersim: a discrete-event simulator of GPU clusters"};
  app.set_version_flag("--version", "clustersim 0.1.0");
  app.require_subcommand(1);

  cs::cli::RunOptions run_opts;
  auto* run = cs::cli::add_run_command(app, run_opts);
  cs::cli::CollectiveOptions collective;
  cs::cli::add_collective_command(app, collective);
  cs::cli::TopoOptions info, exp;
  cs::cli::add_topo_commands(app, info, exp);

  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first != "run" && first != "collective" && first != "topo") {
      std::cerr << "clustersim: command-line error: unknown command \"" << first
                << "\" (run, collective, topo; see --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad command line: one line, like every other input error.
    std::cerr << "clustersim: command-line error: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (run->parsed()) return run_opts.experiment.empty() ? run_default() : cs::cli::run_experiment_command(run_opts);
  if (app.got_subcommand("collective")) return cs::cli::run_collective_command(collective);
  auto* topo = app.get_subcommand("topo");
  if (topo->got_subcommand("info")) return cs::cli::run_topo_info(info);
  if (topo->got_subcommand("export")) return cs::cli::run_topo_export(exp);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const cs::InputError& e) {
    std::cerr << "clustersim: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clustersim: internal error: " << e.what() << "\n";
    return 1;
  }
}
