#include "apps/cli_common.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "core/errors.h"
#include "core/limits.h"
#include "drivers/config_paths.h"

namespace cs::cli {

std::vector<int> parse_gpu_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    // At most the largest cluster, so that every product of counts below fits an int.
    if (n > limits().gpus) throw ConfigError("", "--gpus", std::to_string(n) + " GPUs are more than the largest cluster (" + std::to_string(limits().gpus) + "; " + limit_hint("gpus") + ")");
    if (n < 1) throw ConfigError("", "--gpus", "expected a comma-separated list of GPU counts such as 8,16,32; got \"" + text + "\"");
    if (!out.empty() && n <= out.back()) throw ConfigError("", "--gpus", "GPU counts must increase: \"" + text + "\"");
    out.push_back(n);
  }
  if (out.empty()) throw ConfigError("", "--gpus", "expected at least one GPU count");
  return out;
}

void add_experiment_options(CLI::App& cmd, std::vector<std::string>& overrides, std::vector<std::string>& hardware,
                            std::string& profile) {
  cmd.add_option("--set", overrides, "Override an experiment value: /json/pointer=value (repeatable)");
  cmd.add_option("--set-hardware", hardware,
                 "Override a hardware catalog value: /json/pointer=value, e.g. /gpus/H100-SXM/efficiency/gemm/value=0.8 (repeatable)");
  cmd.add_option("--profile", profile, "Take compute and network parameters from a calibration profile (docs/calibration-profile.md)");
}

drv::Experiment load_experiment_with_options(const std::string& file, const std::vector<std::string>& overrides,
                                             const std::vector<std::string>& hardware, const std::string& profile) {
  drv::Experiment e = drv::load_experiment(file, overrides);
  if (!hardware.empty()) {
    e.hardware_overrides.insert(e.hardware_overrides.end(), hardware.begin(), hardware.end());
    e.hardware_overrides_where = "--set-hardware";
  }
  if (!profile.empty()) {
    e.profile = drv::resolve_profile(profile, "", "", "--profile");
    e.profile_where = "--profile";
  }
  return e;
}

std::string resolve_cluster_path(const std::string& path_or_name) {
  return drv::resolve_config(path_or_name, "", "clusters");
}

coll::Machine load_machine(const std::string& path_or_name, const std::vector<std::string>& overrides) {
  return coll::load_machine(resolve_cluster_path(path_or_name), overrides);
}

void print_warnings(const std::vector<Warning>& warnings) {
  static std::vector<Warning> printed;
  for (const Warning& w : warnings) {
    if (std::find(printed.begin(), printed.end(), w) != printed.end()) continue;
    printed.push_back(w);
    std::cerr << "clustersim: warning: " << escape_control(to_string(w)) << "\n";
  }
  std::cerr << std::flush;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace cs::cli
