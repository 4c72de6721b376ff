// Helpers shared by the subcommands: finding configuration files, loading clusters, printing.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/warning.h"
#include "drivers/experiment.h"
#include "sim/collectives/machine.h"

namespace cs::cli {

// A cluster file given as a path, or the name of a bundled example ("dgx-h100" finds
// configs/clusters/dgx-h100.json of this installation).
std::string resolve_cluster_path(const std::string& path_or_name);

// Loads a cluster file (the cluster and its collectives' protocol parameters) with
// `--set /json/pointer=value` overrides applied.
coll::Machine load_machine(const std::string& path_or_name, const std::vector<std::string>& overrides);

// "8,16,32": GPU counts, increasing, each at most the largest cluster (ConfigError at --gpus).
std::vector<int> parse_gpu_counts(const std::string& text);

// Registers the options that change an experiment from the command line, as run, scale and
// search take them: --set (experiment), --set-hardware (catalog), --profile (calibration).
void add_experiment_options(CLI::App& cmd, std::vector<std::string>& overrides, std::vector<std::string>& hardware,
                            std::string& profile);

// Reads an experiment with `--set` overrides and applies the options run, scale and search share:
// `--set-hardware` values (added to the experiment's hardware_overrides) and `--profile` (replacing
// the experiment's); each is then named by its option in errors.
drv::Experiment load_experiment_with_options(const std::string& file, const std::vector<std::string>& overrides,
                                             const std::vector<std::string>& hardware, const std::string& profile);

// Prints each warning as one line on stderr, "clustersim: warning: <file> at <path>: <message>",
// before the command's normal output; a warning already printed by this process (a file loaded
// again by `scale` or `validate`) is not printed again.
void print_warnings(const std::vector<Warning>& warnings);

// `v` with `decimals` digits after the point, for tables.
std::string fixed(double v, int decimals);

// True when standard output is a terminal (progress lines go to stderr only then).
bool stdout_is_terminal();
bool stderr_is_terminal();

}  // namespace cs::cli
