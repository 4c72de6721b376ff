#include "apps/cli_common.h"

#include <cstdio>
#include <unistd.h>

#include "sim/experiment/experiment.h"
#include "topology/cluster_loader.h"

namespace cs::cli {

std::string resolve_cluster_path(const std::string& path_or_name) {
  return exp::resolve_config(path_or_name, "", "clusters");
}

topo::Cluster load_cluster(const std::string& path_or_name, const std::vector<std::string>& overrides) {
  return topo::load_cluster(resolve_cluster_path(path_or_name), overrides);
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace cs::cli
