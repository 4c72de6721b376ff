#include "drivers/plan_warnings.h"

#include <algorithm>
#include <string>

#include "topology/plausibility.h"

namespace cs::drv {
namespace {

// "node3" for "node3/gpu5"; an explicit GPU (no server) by its own name.
std::string server_name(const topo::NodeInfo& gpu) {
  if (gpu.server < 0) return gpu.name;
  return gpu.name.substr(0, gpu.name.find('/'));
}

}  // namespace

std::vector<Warning> plan_warnings(const Experiment& e, const wl::RankGrid& grid, const topo::Cluster& cluster) {
  std::vector<Warning> out;
  const int tp = e.plan.tp;
  if (tp < 2 || grid.size() > static_cast<int>(cluster.gpus().size())) return out;
  const std::vector<std::uint32_t> domain = topo::nvlink_domains(cluster);
  for (int r = 0; r < grid.size(); ++r) {
    wl::GridCoord c = grid.coord(r);
    if (c.tp != 0) continue;  // rank r is the lowest of its TP group
    std::vector<std::uint32_t> domains;  // in order of first appearance in the group
    std::vector<std::string> servers;
    for (int t = 0; t < tp; ++t) {
      c.tp = t;
      const auto gpu = static_cast<std::size_t>(grid.rank(c));
      if (std::find(domains.begin(), domains.end(), domain[gpu]) != domains.end()) continue;
      domains.push_back(domain[gpu]);
      servers.push_back(server_name(cluster.node(cluster.gpus()[gpu])));
    }
    if (domains.size() < 2) continue;
    std::string names;
    for (std::size_t i = 0; i < servers.size() && i < 4; ++i) names += (i == 0 ? "" : ", ") + servers[i];
    if (servers.size() > 4) names += ", ...";
    out.push_back({e.file, e.at("plan") + "/tp",
                   "the tensor-parallel group of rank " + std::to_string(r) + " (tp " + std::to_string(tp) + ") spans " +
                       std::to_string(servers.size()) + " servers (" + names +
                       "): its all-reduces, in every layer, cross the network instead of NVLink; TP is normally "
                       "kept inside one server (NVLink domain)"});
    break;
  }
  return out;
}

}  // namespace cs::drv
