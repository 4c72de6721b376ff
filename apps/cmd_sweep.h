// `clustersim sweep SWEEP.json --out results.csv|.jsonl [--jobs N] [--resume] [--shard I/N]`:
// every point of a sweep (drivers/sweep.h) simulated, one row each, appended as it finishes;
// `clustersim sweep merge SWEEP.json --out results.csv PART...` joins the shards' files. Under
// `mpirun -n K` (when built with MPI) rank 0 hands the points out and writes the one file
// (apps/sweep_mpi.h). docs/cli.md, "sweep".
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "drivers/sweep_runner.h"

namespace cs::cli {

struct SweepOptions {
  std::string sweep;
  std::string out;
  int jobs = 1;
  bool resume = false;
  bool force = false;
  bool dry_run = false;
  bool json = false;
  std::string shard;               // "I/N"
  std::vector<std::string> parts;  // merge: the shards' results files
  std::string prices;              // --prices FILE
  std::vector<std::string> price_overrides;  // --set-price
};

struct SweepCommands {
  CLI::App* sweep = nullptr;
  CLI::App* merge = nullptr;
};

SweepCommands add_sweep_commands(CLI::App& app, SweepOptions& run, SweepOptions& merge);
int run_sweep_command(const SweepOptions& opts);
int run_sweep_merge(const SweepOptions& opts);

// What the MPI front end shares with the local one.
struct SweepSetup {
  drv::Sweep sweep;
  results::RowFormat format = results::RowFormat::kCsv;
  std::vector<std::size_t> todo;  // the points of this run's results file (the shard's), in order
};
SweepSetup prepare_sweep(const SweepOptions& opts);
// Opens the results file of a prepared sweep as the options ask (fresh, --force, --resume).
std::unique_ptr<drv::SweepResultsFile> open_results(const SweepOptions& opts, const SweepSetup& setup);
// The progress line on a terminal (stderr), at most a few times a second; nothing otherwise.
std::function<void(const drv::SweepCounts&)> sweep_progress(bool enabled);
// The closing lines: counts, rate and the file; the exit status (1 when a point hit an internal error).
int finish_sweep(const SweepOptions& opts, const SweepSetup& setup, const drv::SweepCounts& counts, bool progress_shown);

}  // namespace cs::cli
