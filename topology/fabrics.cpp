#include "topology/fabrics.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/config.h"
#include "core/errors.h"

namespace cs::topo {

std::vector<Endpoint> fabric_endpoints(std::span<const ServerDevices> servers) {
  std::vector<Endpoint> out;
  for (const ServerDevices& s : servers) {
    const bool has_nics = !s.nics.empty();
    const auto& nodes = has_nics ? s.nics : s.gpus;
    for (std::size_t r = 0; r < nodes.size(); ++r) {
      out.push_back(Endpoint{nodes[r], s.server, static_cast<int>(r),
                             has_nics ? s.nic_bandwidth : Bandwidth{0}});
    }
  }
  return out;
}

std::vector<Endpoint> planned_endpoints(std::span<const ServerGroupSpec> groups) {
  std::vector<Endpoint> out;
  int server = 0;
  for (const ServerGroupSpec& g : groups) {
    const int per_server = g.nics > 0 ? g.nics : g.gpus;
    const Bandwidth bw = g.nics > 0 ? g.nic->bandwidth : Bandwidth{0};
    for (int k = 0; k < g.count; ++k, ++server) {
      for (int r = 0; r < per_server; ++r) out.push_back(Endpoint{NodeId{}, server, r, bw});
    }
  }
  return out;
}

namespace {

struct LeafGroup {
  int block = 0;  // rail-aligned: server block; otherwise the leaf index
  int rail = -1;  // rail-aligned only
  std::vector<std::size_t> members;  // endpoint indices
};

// Endpoints per leaf, in leaf order (see the header: leaf assignment).
std::vector<LeafGroup> assign_leaves(std::span<const Endpoint> eps, int per_leaf, bool rail_aligned) {
  std::vector<LeafGroup> leaves;
  if (!rail_aligned) {
    const std::size_t l = static_cast<std::size_t>(per_leaf);
    for (std::size_t i = 0; i < eps.size(); ++i) {
      if (i % l == 0) leaves.push_back(LeafGroup{static_cast<int>(i / l), -1, {}});
      leaves.back().members.push_back(i);
    }
    return leaves;
  }
  std::map<std::pair<int, int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    groups[{eps[i].server / per_leaf, eps[i].rail}].push_back(i);
  }
  leaves.reserve(groups.size());
  for (auto& [key, members] : groups) leaves.push_back(LeafGroup{key.first, key.second, std::move(members)});
  return leaves;
}

Bandwidth cable_bandwidth(const FabricSpec& spec, const Endpoint& e) {
  return spec.link_bandwidth ? *spec.link_bandwidth : e.bandwidth;
}

// Uplink capacity of a leaf: per_leaf x mean endpoint cable bandwidth / oversubscription.
Bandwidth leaf_uplink_capacity(const FabricSpec& spec, std::span<const Endpoint> eps,
                               const LeafGroup& leaf, int per_leaf) {
  double sum = 0;
  for (std::size_t i : leaf.members) sum += cable_bandwidth(spec, eps[i]).value();
  const double mean = sum / static_cast<double>(leaf.members.size());
  return Bandwidth{mean * per_leaf / spec.oversubscription};
}

int leaves_per_leaf_group(const FabricSpec& spec) {
  switch (spec.type) {
    case FabricType::kLeafSpine: return spec.endpoints_per_leaf;
    case FabricType::kFatTree: return spec.radix / 2;
    case FabricType::kRailOptimized: return spec.nodes_per_leaf;
    default: return 1;
  }
}

[[noreturn]] void fail_key(const FabricSpec& spec, const std::string& file, std::string_view key,
                           const std::string& message) {
  throw ConfigError(file, json_pointer_append(spec.origin, key), message);
}

}  // namespace

void validate_fabric(const FabricSpec& spec, std::span<const Endpoint> eps, const std::string& file) {
  if (spec.type == FabricType::kNone) return;
  if (spec.link_bandwidth && !(spec.link_bandwidth->value() > 0)) {
    throw ConfigError(file, spec.origin + "/link/bandwidth", "the bandwidth must be positive");
  }
  if (!spec.link_bandwidth) {
    for (const Endpoint& e : eps) {
      if (!(e.bandwidth.value() > 0)) {
        throw ConfigError(file, spec.origin + "/link/bandwidth",
                          "missing: server " + std::to_string(e.server) +
                              " has no NIC, so its GPUs are fabric endpoints and the fabric "
                              "needs a cable bandwidth such as \"400Gbps\"");
      }
    }
  }
  const std::string n_eps = std::to_string(eps.size()) + " endpoints";
  const auto check_oversub = [&] {
    if (!(spec.oversubscription >= 1 && spec.oversubscription <= 1024)) {
      fail_key(spec, file, "oversubscription", "expected a number from 1 to 1024 (downlink:uplink capacity)");
    }
  };
  switch (spec.type) {
    case FabricType::kNone:
    case FabricType::kStar:
    case FabricType::kRing:
      break;
    case FabricType::kLeafSpine:
      if (spec.endpoints_per_leaf < 1) fail_key(spec, file, "endpoints_per_leaf", "expected at least 1");
      if (spec.spines < 1) fail_key(spec, file, "spines", "expected at least 1");
      check_oversub();
      break;
    case FabricType::kRailOptimized:
      if (spec.nodes_per_leaf < 1) fail_key(spec, file, "nodes_per_leaf", "expected at least 1");
      if (spec.spines < 1) fail_key(spec, file, "spines", "expected at least 1");
      check_oversub();
      break;
    case FabricType::kFatTree: {
      if (spec.tiers != 2 && spec.tiers != 3) fail_key(spec, file, "tiers", "expected 2 or 3");
      if (spec.radix < 4 || spec.radix % 2 != 0) {
        fail_key(spec, file, "radix", "expected an even switch radix >= 4");
      }
      check_oversub();
      const std::int64_t half = spec.radix / 2;
      const std::int64_t max_leaves = spec.tiers == 2 ? spec.radix : spec.radix * half;
      const std::size_t leaves = assign_leaves(eps, spec.radix / 2, spec.rail_aligned).size();
      if (static_cast<std::int64_t>(leaves) > max_leaves) {
        fail_key(spec, file, "radix",
                 "a " + std::to_string(spec.tiers) + "-tier fat-tree of radix " +
                     std::to_string(spec.radix) + " has at most " + std::to_string(max_leaves) +
                     " leaves of " + std::to_string(half) + " endpoints; " + n_eps + " need " +
                     std::to_string(leaves) + (spec.rail_aligned ? " rail-aligned leaves" : " leaves"));
      }
      break;
    }
    case FabricType::kTorus: {
      if (spec.dims.size() != 2 && spec.dims.size() != 3) {
        fail_key(spec, file, "dims", "expected 2 or 3 dimensions, [x, y] or [x, y, z]");
      }
      std::int64_t product = 1;
      std::string text;
      for (int d : spec.dims) {
        if (d < 1) fail_key(spec, file, "dims", "every dimension must be at least 1");
        product *= d;
        text += (text.empty() ? "" : " x ") + std::to_string(d);
      }
      if (product != static_cast<std::int64_t>(eps.size())) {
        fail_key(spec, file, "dims",
                 "the torus " + text + " has " + std::to_string(product) +
                     " positions but the servers have " + n_eps + " (NICs, or GPUs of servers without NICs)");
      }
      break;
    }
  }
}

std::int64_t fabric_cable_count(const FabricSpec& spec, std::span<const Endpoint> eps) {
  const auto n = static_cast<std::int64_t>(eps.size());
  switch (spec.type) {
    case FabricType::kNone: return 0;
    case FabricType::kStar:
    case FabricType::kRing: return n;
    case FabricType::kTorus: return n * static_cast<std::int64_t>(spec.dims.size());
    case FabricType::kLeafSpine:
    case FabricType::kRailOptimized: {
      const bool rails = spec.type == FabricType::kRailOptimized;
      const auto leaves = static_cast<std::int64_t>(assign_leaves(eps, leaves_per_leaf_group(spec), rails || spec.rail_aligned).size());
      return n + leaves * spec.spines;
    }
    case FabricType::kFatTree: {
      const std::int64_t half = spec.radix / 2;
      const auto leaves = static_cast<std::int64_t>(assign_leaves(eps, spec.radix / 2, spec.rail_aligned).size());
      return n + leaves * half * (spec.tiers == 3 ? 2 : 1);
    }
  }
  return n;
}

void build_fabric(ClusterBuilder& builder, const FabricSpec& spec, std::span<const Endpoint> eps,
                  const std::string& file) {
  validate_fabric(spec, eps, file);
  if (spec.type == FabricType::kNone) return;
  // In-network reduction (SHARP): the switch aggregates at its ports' line rate, so the model
  // takes no rate of its own for it; a positive reduction_bandwidth marks the capability (the
  // endpoint cables' rate, for the record).
  const Bandwidth sharp = spec.in_network_reduction && !eps.empty() ? cable_bandwidth(spec, eps[0]) : Bandwidth{0};
  const auto add_switch = [&](std::string name, NodeKind kind) {
    NodeInfo info;
    info.name = std::move(name);
    info.kind = kind;
    info.origin = spec.origin;
    info.reduction_bandwidth = sharp;
    return builder.add_node(std::move(info));
  };
  const auto cable = [&](NodeId a, NodeId b, Bandwidth bw, int tier) {
    builder.add_cable(a, b, bw, spec.link_latency, spec.link_class, tier);
  };
  const auto cable_to_endpoint = [&](std::size_t i, NodeId leaf) {
    cable(eps[i].node, leaf, cable_bandwidth(spec, eps[i]), 1);
  };

  switch (spec.type) {
    case FabricType::kNone:
      return;
    case FabricType::kStar: {
      const NodeId sw = add_switch("leaf0", NodeKind::kLeafSwitch);
      for (std::size_t i = 0; i < eps.size(); ++i) cable_to_endpoint(i, sw);
      return;
    }
    case FabricType::kRing: {
      const std::size_t n = eps.size();
      if (n < 2) return;
      for (std::size_t i = 0; i < (n == 2 ? 1 : n); ++i) {
        const Endpoint& a = eps[i];
        const Endpoint& b = eps[(i + 1) % n];
        const Bandwidth bw = spec.link_bandwidth ? *spec.link_bandwidth : std::min(a.bandwidth, b.bandwidth);
        cable(a.node, b.node, bw, 1);
      }
      return;
    }
    case FabricType::kTorus: {
      std::int64_t stride = 1;
      for (int size : spec.dims) {
        for (std::size_t i = 0; i < eps.size(); ++i) {
          const std::int64_t c = (static_cast<std::int64_t>(i) / stride) % size;
          if (size < 2 || (size == 2 && c == 1)) continue;
          const std::size_t j = static_cast<std::size_t>(static_cast<std::int64_t>(i) +
                                                         stride * ((c + 1) % size - c));
          const Bandwidth bw = spec.link_bandwidth ? *spec.link_bandwidth
                                                   : std::min(eps[i].bandwidth, eps[j].bandwidth);
          cable(eps[i].node, eps[j].node, bw, 1);
        }
        stride *= size;
      }
      return;
    }
    case FabricType::kLeafSpine:
    case FabricType::kRailOptimized: {
      const bool rails = spec.type == FabricType::kRailOptimized;
      const int per_leaf = leaves_per_leaf_group(spec);
      std::vector<LeafGroup> leaves = assign_leaves(eps, per_leaf, rails || spec.rail_aligned);
      if (rails) {
        std::stable_sort(leaves.begin(), leaves.end(), [](const LeafGroup& a, const LeafGroup& b) {
          return std::pair(a.rail, a.block) < std::pair(b.rail, b.block);
        });
      }
      std::vector<NodeId> leaf_ids;
      leaf_ids.reserve(leaves.size());
      for (std::size_t l = 0; l < leaves.size(); ++l) {
        const std::string name = rails ? "rail" + std::to_string(leaves[l].rail) + "/leaf" +
                                             std::to_string(leaves[l].block)
                                       : "leaf" + std::to_string(l);
        leaf_ids.push_back(add_switch(name, NodeKind::kLeafSwitch));
        for (std::size_t i : leaves[l].members) cable_to_endpoint(i, leaf_ids.back());
      }
      std::vector<NodeId> spines;
      spines.reserve(static_cast<std::size_t>(spec.spines));
      for (int j = 0; j < spec.spines; ++j) {
        spines.push_back(add_switch("spine" + std::to_string(j), NodeKind::kSpineSwitch));
      }
      for (std::size_t l = 0; l < leaves.size(); ++l) {
        const Bandwidth up = leaf_uplink_capacity(spec, eps, leaves[l], per_leaf) /
                             static_cast<double>(spec.spines);
        for (NodeId s : spines) cable(leaf_ids[l], s, up, 2);
      }
      return;
    }
    case FabricType::kFatTree: {
      const int half = spec.radix / 2;
      const std::vector<LeafGroup> leaves = assign_leaves(eps, half, spec.rail_aligned);
      if (spec.tiers == 2) {
        std::vector<NodeId> leaf_ids;
        for (std::size_t l = 0; l < leaves.size(); ++l) {
          leaf_ids.push_back(add_switch("leaf" + std::to_string(l), NodeKind::kLeafSwitch));
          for (std::size_t i : leaves[l].members) cable_to_endpoint(i, leaf_ids.back());
        }
        std::vector<NodeId> spines;
        for (int j = 0; j < half; ++j) {
          spines.push_back(add_switch("spine" + std::to_string(j), NodeKind::kSpineSwitch));
        }
        for (std::size_t l = 0; l < leaves.size(); ++l) {
          const Bandwidth up = leaf_uplink_capacity(spec, eps, leaves[l], half) / static_cast<double>(half);
          for (NodeId s : spines) cable(leaf_ids[l], s, up, 2);
        }
        return;
      }
      const std::size_t pods = (leaves.size() + static_cast<std::size_t>(half) - 1) / static_cast<std::size_t>(half);
      std::vector<NodeId> cores;
      for (int c = 0; c < half * half; ++c) {
        cores.push_back(add_switch("core" + std::to_string(c), NodeKind::kCoreSwitch));
      }
      for (std::size_t p = 0; p < pods; ++p) {
        const std::string pod = "pod" + std::to_string(p) + "/";
        std::vector<NodeId> aggs;
        for (int j = 0; j < half; ++j) {
          aggs.push_back(add_switch(pod + "agg" + std::to_string(j), NodeKind::kSpineSwitch));
        }
        const std::size_t first = p * static_cast<std::size_t>(half);
        const std::size_t last = std::min(leaves.size(), first + static_cast<std::size_t>(half));
        double uplink_sum = 0;
        for (std::size_t l = first; l < last; ++l) {
          const NodeId leaf = add_switch(pod + "leaf" + std::to_string(l - first), NodeKind::kLeafSwitch);
          for (std::size_t i : leaves[l].members) cable_to_endpoint(i, leaf);
          const Bandwidth up = leaf_uplink_capacity(spec, eps, leaves[l], half) / static_cast<double>(half);
          uplink_sum += up.value();
          for (NodeId a : aggs) cable(leaf, a, up, 2);
        }
        const Bandwidth agg_up{uplink_sum / static_cast<double>(last - first)};
        for (int j = 0; j < half; ++j) {
          for (int m = 0; m < half; ++m) {
            cable(aggs[static_cast<std::size_t>(j)], cores[static_cast<std::size_t>(j * half + m)], agg_up, 3);
          }
        }
      }
      return;
    }
  }
}

}  // namespace cs::topo
