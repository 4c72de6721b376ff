// clustersim: the command line. Exit codes: 0 success, 2 bad input (one line naming the file and
// the JSON path or option), 1 internal error.
#include <csignal>
#include <exception>
#include <filesystem>
#include <new>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/cli/strict.h"
#include "apps/cmd_collective.h"
#include "apps/cmd_cost.h"
#include "apps/cmd_gemm.h"
#include "apps/cmd_import.h"
#include "apps/cmd_plan.h"
#include "apps/cmd_profile.h"
#include "apps/cmd_report.h"
#include "apps/cmd_run.h"
#include "apps/cmd_scale.h"
#include "apps/cmd_search.h"
#include "apps/cmd_schedule.h"
#include "apps/cmd_serve.h"
#include "apps/cmd_size.h"
#include "apps/cmd_sweep.h"
#include "apps/cmd_topo.h"
#include "apps/cmd_validate.h"
#include "core/errors.h"
#include "core/huge_pages.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace {

// `clustersim run` with no arguments: the built-in story. ResNet-50 data-parallel training
// scaled from 1 to 32 GPUs on a fast fabric (HDR InfiniBand) and on 10 Gb Ethernet: near-linear
// speedup on the first, a network bottleneck on the second.
int run_default() {
  std::cout << "clustersim: default experiment: ResNet-50 data-parallel training, 256 images per GPU, 1 to 32 A100 GPUs,\n"
               "            on a fast fabric (HDR InfiniBand) and on 10 Gb Ethernet\n\n";
  for (const char* name : {"resnet50-ib", "resnet50-10gbe"}) {
    cs::cli::ScaleOptions o;
    o.experiment = std::string(CS_CONFIG_DIR) + "/examples/" + name + ".json";
    o.gpus = "1,2,4,8,16,32";
    o.weak = true;
    cs::cli::print_scaling(o, false);
    std::cout << "\n";
  }
  return 0;
}

int dispatch(int argc, char** argv) {
  CLI::App app{"clustersim: a discrete-event simulator of GPU clusters"};
  app.set_version_flag("--version", "clustersim 0.1.0");
  app.require_subcommand(1);

  cs::cli::RunOptions run_opts;
  auto* run = cs::cli::add_run_command(app, run_opts);
  cs::cli::PlanOptions plan_opts;
  cs::cli::add_plan_command(app, plan_opts);
  cs::cli::ScaleOptions scale_opts;
  cs::cli::add_scale_command(app, scale_opts);
  cs::cli::CollectiveOptions collective;
  cs::cli::add_collective_command(app, collective);
  cs::cli::ValidateOptions validate_opts;
  auto* validate = cs::cli::add_validate_command(app, validate_opts);
  cs::cli::TopoOptions info, export_opts;
  cs::cli::add_topo_commands(app, info, export_opts);
  cs::cli::GemmOptions gemm_opts;
  auto* gemm = cs::cli::add_gemm_command(app, gemm_opts);
  cs::cli::ProfileOptions profile_opts;
  auto* profile = cs::cli::add_profile_command(app, profile_opts);
  cs::cli::SearchCommandOptions search_opts;
  auto* search = cs::cli::add_search_command(app, search_opts);
  cs::cli::CostOptions cost_opts;
  auto* cost = cs::cli::add_cost_command(app, cost_opts);
  cs::cli::SizeOptions size_opts;
  auto* size = cs::cli::add_size_command(app, size_opts);
  cs::cli::ServeOptions serve_opts;
  auto* serve = cs::cli::add_serve_command(app, serve_opts);
  cs::cli::ScheduleOptions schedule_opts;
  auto* schedule = cs::cli::add_schedule_command(app, schedule_opts);
  cs::cli::ImportOptions import_opts;
  auto* import = cs::cli::add_import_command(app, import_opts);
  cs::cli::ReportOptions report_opts;
  auto* report = cs::cli::add_report_command(app, report_opts);
  cs::cli::SweepOptions sweep_opts, merge_opts;
  const cs::cli::SweepCommands sweep = cs::cli::add_sweep_commands(app, sweep_opts, merge_opts);

  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first != "run" && first != "collective" && first != "topo" && first != "scale" && first != "validate" &&
        first != "plan" && first != "profile" && first != "gemm" && first != "sweep" && first != "search" &&
        first != "cost" && first != "size" && first != "serve" && first != "schedule" && first != "report" && first != "import") {
      std::cerr << "clustersim: command-line error: unknown command \"" << cs::escape_control(first)
                << "\" (run, scale, sweep, search, cost, size, serve, schedule, report, plan, import, collective, gemm, topo, validate, profile; see --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
    cs::cli::reject_empty_values(app);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad command line: one line, like every other input error.
    std::cerr << "clustersim: command-line error: " << cs::escape_control(e.what()) << " (see --help)\n";
    return 2;
  }
  if (run->parsed()) {
    if (run_opts.experiment.empty() && !run_opts.trace.inputs.empty()) {
      throw cs::InputError("", "--trace", "a trace replays on an experiment's cluster: name the experiment (clustersim run EXPERIMENT.json --trace ...)");
    }
    return run_opts.experiment.empty() ? run_default() : cs::cli::run_experiment_command(run_opts);
  }
  if (app.got_subcommand("collective")) return cs::cli::run_collective_command(collective);
  if (app.got_subcommand("scale")) return cs::cli::run_scale_command(scale_opts);
  if (app.got_subcommand("plan")) return cs::cli::run_plan_command(plan_opts);
  if (search->parsed()) return cs::cli::run_search_command(search_opts);
  if (cost->parsed()) return cs::cli::run_cost_command(cost_opts);
  if (size->parsed()) return cs::cli::run_size_command(size_opts);
  if (serve->parsed()) return cs::cli::run_serve_command(serve_opts);
  if (schedule->parsed()) return cs::cli::run_schedule_command(schedule_opts);
  if (sweep.merge->parsed()) return cs::cli::run_sweep_merge(merge_opts);
  if (sweep.sweep->parsed()) return cs::cli::run_sweep_command(sweep_opts);
  if (report->parsed()) return cs::cli::run_report_command(report_opts);
  if (import->parsed()) return cs::cli::run_import_command(import_opts);
  if (gemm->parsed()) return cs::cli::run_gemm_command(gemm_opts);
  if (profile->parsed()) return cs::cli::run_profile_synthetic(profile_opts);
  if (validate->parsed()) {
    if (validate->got_subcommand("profile")) return cs::cli::run_validate_profile(validate_opts);
    if (validate->got_subcommand("nccl")) return cs::cli::run_validate_nccl(validate_opts);
    return cs::cli::run_validate_megatron(validate_opts);
  }
  auto* topo = app.get_subcommand("topo");
  if (topo->got_subcommand("info")) return cs::cli::run_topo_info(info);
  if (topo->got_subcommand("export")) return cs::cli::run_topo_export(export_opts);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // may execute the program again with glibc's huge-page tunable (core/huge_pages.h)
  // A write past the file-size limit (ulimit -f) fails with EFBIG, reported like a full disk,
  // instead of killing the process: outputs stay all or nothing either way.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return dispatch(argc, argv);
  } catch (const cs::RangeError& e) {
    std::cerr << "clustersim: out of range: " << cs::escape_control(e.message()) << "\n";
    return 2;
  } catch (const cs::InputError& e) {
    std::cerr << "clustersim: " << cs::escape_control(e.what()) << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that cannot be examined (too long, a loop of links, no permission).
    std::string path = e.path1().string();
    if (path.size() > 120) path = path.substr(0, 117) + "...";
    std::cerr << "clustersim: cannot use the path \"" << cs::escape_control(path) << "\": " << cs::escape_control(e.code().message()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The size checks (docs/cli.md, "Limits") refuse what is known to be too large; this is what
    // they could not foresee on this machine. Output folders and files are all or nothing.
    std::cerr << "clustersim: out of memory: the input needs more memory than this machine has (docs/cli.md, \"Limits\"); nothing was written\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clustersim: internal error: " << cs::escape_control(e.what()) << "\n";
    return 1;
  }
}
