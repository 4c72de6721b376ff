#include "apps/cli_common.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "core/errors.h"
#include "drivers/config_paths.h"

namespace cs::cli {

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
