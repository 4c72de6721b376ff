// Structural properties of a cluster, for `clustersim topo info`: device and link counts,
// GPU diameter, bisection bandwidth, per-tier oversubscription and capacity per link class.
//
// Definitions (all capacities are line rates in bytes/s, per direction, summed over links):
//   cables         a pair of opposite links (LinkInfo::reverse) counts once; a lone directed
//                  link counts as one cable.
//   diameter_hops  max over ordered GPU pairs (a, b) of the hop count of a shortest directed
//                  path a -> b; -1 when some GPU cannot reach another; 0 with fewer than two
//                  GPUs. Exact, without one BFS per GPU (topology/gpu_diameter.h): one server
//                  per class of twin servers (a verified automorphism exchanges them) is
//                  searched, 64 GPUs per bit-parallel BFS: O(R/64 x levels x (V + E)) for R
//                  searched GPUs, O(V + E) memory (32,768 GPUs: 0.5 s with the bisection).
//   bisection      the maximum flow from the first half of the GPUs in rank order (the first
//                  floor(G/2)) to the others, link capacities = line rates (push-relabel on a
//                  copy of the graph with a super source and sink). This is the bisection for the
//                  rank-order split; on symmetric fabrics, where every balanced split is alike,
//                  it equals the true bisection bandwidth. O(V^2 sqrt(E)) worst case.
//   tiers          switches by level, taken from NodeKind: leaf = 1, spine = 2, core = 3. For
//                  level t: down = links of tier t leaving a level-t switch (toward endpoints or
//                  lower switches), up = links of tier t+1 leaving a level-t switch.
//                  oversubscription = down / up (a leaf with 32x400G down and 16x400G up: 2.0);
//                  only levels with uplinks are listed.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "topology/cluster.h"

namespace cs::topo {

struct TierSummary {
  int tier = 0;                 // switch level: 1 leaf, 2 spine
  std::size_t links = 0;        // directed uplinks from these switches to the level above
  Bandwidth down_capacity{0};   // toward lower tiers
  Bandwidth up_capacity{0};     // toward higher tiers
  double oversubscription = 0;  // down / up; 0 when there are no uplinks
};

struct TopologySummary {
  std::string name;
  std::array<std::size_t, kNodeKindCount> nodes_by_kind{};  // index by NodeKind
  std::size_t gpus = 0, switches = 0, directed_links = 0, cables = 0;
  int diameter_hops = 0;
  Bandwidth bisection_bandwidth{0};
  Routing routing = Routing::kEcmp;
  bool routing_by_link_layer = false;  // the NICs' default, not the file's choice
  std::vector<TierSummary> tiers;                                         // ascending tier
  std::array<Bandwidth, hw::kLinkClassCount> total_capacity_by_link_class{};  // index by hw::LinkClass
};

TopologySummary summarize(const Cluster& cluster);

// Stable schema; integer units in key names:
//   {"name", "nodes_by_kind": {"gpu": n, ...every kind}, "gpus", "switches", "directed_links",
//    "cables", "diameter_hops", "bisection_bandwidth_Bps", "routing": "ecmp" | "adaptive",
//    "routing_source": "file" | "nic_link_layer",
//    "tiers": [{"tier", "uplinks", "down_capacity_Bps", "up_capacity_Bps", "oversubscription"}],
//    "total_capacity_Bps_by_link_class": {"nvlink", "pcie", "network"}}
nlohmann::json to_json(const TopologySummary& s);
// A readable table for the terminal.
std::string to_table(const TopologySummary& s);

}  // namespace cs::topo
