// clustersim-calibrate: measures this machine's GPUs (GEMMs, memory-bound kernels, launch
// overhead, links, NCCL collectives) into a calibration profile, or refits a profile's models
// without a GPU (docs/calibration.md). Exit codes: 0 success, 2 bad input (one line naming the
// file and the JSON path, or the option), 1 internal error, 130 interrupted (the profile so far is
// saved).
//
// Commands are small functions in their own files (cmd_measure, cmd_refit); another one is an
// option in dispatch() and a branch after parsing. Synthetic profiles, which the simulator
// generates, are `clustersim profile synthetic` (this tool knows nothing of the simulator).
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/calibrate/cmd_measure.h"
#include "apps/cli/strict.h"
#include "apps/calibrate/cmd_refit.h"
#include "apps/calibrate/options.h"
#include "core/errors.h"

namespace {

using cs::calibrate::Options;

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i == 0) {
      const std::size_t slash = a.rfind('/');
      if (slash != std::string::npos) a = a.substr(slash + 1);
    }
    if (a.find_first_of(" \t\"'") != std::string::npos) a = "'" + a + "'";
    s += (i == 0 ? "" : " ") + a;
  }
  return s;
}

int dispatch(int argc, char** argv) {
  CLI::App app{
      "clustersim-calibrate: measures this machine's GPUs (cuBLASLt GEMMs, memory-bound kernels, launch overhead, "
      "copy-engine links, NCCL collectives) and writes a calibration profile with fitted cost models; --refit "
      "recomputes a profile's models without a GPU. See docs/calibration.md."};
  app.set_version_flag("--version", "clustersim-calibrate 0.1.0 (" + cs::calibrate::probe_description() + ")");
  Options o;
  auto* quick = app.add_flag("--quick", o.quick, "the ~3-minute subset: 3 s warm-up, fewer shapes and sizes, 1 s per point");
  app.add_option("--out", o.out, "profile to write (default calibration-profile.json; with --refit: the input file)");
  auto* gpus = app.add_option("--gpus", o.gpus, "use CUDA devices 0..N-1 (default: all)")->check(CLI::Range(1, 1024));  // a server's GPUs, as cluster files allow
  auto* algos = app.add_flag("--algos", o.algos, "also run each collective with NCCL_ALGO forced to ring, tree and nvls");
  auto* sections = app.add_option("--sections", o.sections,
                                  "comma-separated subset of gemm,memory,launch,overlap,links,collectives (default: all)");
  auto* max_bytes = app.add_option("--max-bytes", o.max_bytes, "largest size of any byte sweep, e.g. 1GiB");
  auto* time_limit = app.add_option("--time-limit", o.time_limit_s, "seconds per point before it stops at >= 10 samples "
                                                                      "(default 1 with --quick, else 5)")
                         ->check(CLI::PositiveNumber);
  auto* mpi = app.add_flag("--mpi", o.mpi, "one process per GPU under mpirun: collectives across nodes (MPI builds only)");
  auto* refit = app.add_option("--refit", o.refit, "recompute the models of this profile from its points (no GPU)");
  for (CLI::Option* opt : {quick, gpus, algos, sections, max_bytes, time_limit, mpi}) refit->excludes(opt);
  // Moved to the simulator's command line; named here so that old scripts get a pointer to it.
  app.add_option("--synthetic", o.synthetic)->group("");
  app.footer(
      "\nExamples:\n"
      "  clustersim-calibrate --quick --out h200.json     about 3 minutes on one GPU\n"
      "  clustersim-calibrate --out dgx-h100.json --algos  the full run, every NCCL algorithm\n"
      "  clustersim-calibrate --refit h200.json           refit the models in place\n"
      "A profile generated from the hardware catalog (no GPU) is made by the simulator:\n"
      "  clustersim profile synthetic A100-SXM-80GB --gpus 8 --out example.json\n");

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
    std::cerr << "clustersim-calibrate: command-line error: " << cs::escape_control(e.what()) << " (see --help)\n";
    return 2;
  }
  o.command = command_line(argc, argv);
  if (!o.refit.empty()) return cs::calibrate::run_refit_command(o);
  if (!o.synthetic.empty()) {
    std::cerr << "clustersim-calibrate: command-line error: --synthetic: synthetic profiles are made by the simulator: "
                 "clustersim profile synthetic "
              << o.synthetic << " [--gpus N] [--out FILE]\n";
    return 2;
  }
  return cs::calibrate::run_measure_command(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const cs::RangeError& e) {
    std::cerr << "clustersim-calibrate: out of range: " << cs::escape_control(e.message()) << "\n";
    return 2;
  } catch (const cs::InputError& e) {
    if (e.file().empty()) {
      std::cerr << "clustersim-calibrate: command-line error: " << cs::escape_control(e.json_path() + ": " + e.message()) << "\n";
    } else {
      std::cerr << "clustersim-calibrate: " << cs::escape_control(e.what()) << "\n";
    }
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clustersim-calibrate: internal error: " << cs::escape_control(e.what()) << "\n";
    return 1;
  }
}
