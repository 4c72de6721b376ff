#include "apps/cli_common.h"

#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "topology/cluster_loader.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::cli {

std::string resolve_cluster_path(const std::string& path_or_name) {
  namespace fs = std::filesystem;
  if (fs::exists(path_or_name)) return path_or_name;
  const fs::path bundled = fs::path(CS_CONFIG_DIR) / "clusters" / (path_or_name + ".json");
  if (path_or_name.find('/') == std::string::npos && fs::exists(bundled)) return bundled.string();
  return path_or_name;  // the loader reports "cannot open the file" with this name
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
