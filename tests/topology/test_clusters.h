// Small clusters built by hand for the topology tests (no config loader involved), and a
// checker for routes. Names follow the loader's scheme: "node<s>/gpu<i>", "rail<r>/leaf<b>".
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/units.h"
#include "topology/cluster.h"
#include "topology/cluster_builder.h"

namespace cs::topo::fixtures {

inline NodeId add_device(ClusterBuilder& c, const std::string& name, NodeKind kind, int server = -1,
                         int local = -1) {
  NodeInfo info;
  info.name = name;
  info.kind = kind;
  info.server = server;
  info.local = local;
  info.origin = "/devices/" + name;
  return c.add_node(std::move(info));
}

// n GPUs in a ring, neighbours joined by one duplex cable of bandwidth bw (n >= 3).
inline Cluster ring(int n, Bandwidth bw) {
  ClusterBuilder c("ring");
  std::vector<NodeId> g;
  for (int i = 0; i < n; ++i) {
    g.push_back(add_device(c, "node0/gpu" + std::to_string(i), NodeKind::kGpu, 0, i));
  }
  for (int i = 0; i < n; ++i) {
    c.add_cable(g[i], g[(i + 1) % n], bw, nanoseconds(100), hw::LinkClass::kNvlink, 0);
  }
  return std::move(c).build();
}

// One switch and n GPUs, each on a duplex cable of bandwidth bw.
inline Cluster star(int n, Bandwidth bw) {
  ClusterBuilder c("star");
  const NodeId sw = add_device(c, "switch", NodeKind::kLeafSwitch);
  for (int i = 0; i < n; ++i) {
    const NodeId g = add_device(c, "node" + std::to_string(i) + "/gpu0", NodeKind::kGpu, i, 0);
    c.add_cable(g, sw, bw, nanoseconds(500), hw::LinkClass::kNetwork, 1);
  }
  return std::move(c).build();
}

// Two-tier leaf-spine: `leaves` leaves with `per_leaf` GPUs each (cables of `down`), every leaf
// cabled to each of `spines` spines (cables of `up`). GPU i hangs off leaf i / per_leaf.
inline Cluster leaf_spine(int leaves, int per_leaf, int spines, Bandwidth down, Bandwidth up) {
  ClusterBuilder c("leaf-spine");
  std::vector<NodeId> leaf, spine;
  for (int l = 0; l < leaves; ++l) {
    leaf.push_back(add_device(c, "leaf" + std::to_string(l), NodeKind::kLeafSwitch));
  }
  for (int s = 0; s < spines; ++s) {
    spine.push_back(add_device(c, "spine" + std::to_string(s), NodeKind::kSpineSwitch));
  }
  for (int l = 0; l < leaves; ++l) {
    for (int e = 0; e < per_leaf; ++e) {
      const int server = l * per_leaf + e;
      const NodeId g =
          add_device(c, "node" + std::to_string(server) + "/gpu0", NodeKind::kGpu, server, 0);
      c.add_cable(g, leaf[l], down, nanoseconds(500), hw::LinkClass::kNetwork, 1);
    }
    for (NodeId s : spine) c.add_cable(leaf[l], s, up, nanoseconds(500), hw::LinkClass::kNetwork, 2);
  }
  return std::move(c).build();
}

// Rail-optimized fabric: `servers` servers of 8 GPUs, one NVSwitch vertex per server (NVLink
// 450 GB/s per GPU), one NIC per GPU (PCIe 64 GB/s; 400 Gb/s = 50 GB/s to its leaf). NIC i of
// server s goes to leaf (rail i, block s / 32): 8 rails x (servers / 32) leaves of 32 NICs.
// `spines` spines are each cabled to every leaf at 50 GB/s.
struct RailFabric {
  static constexpr int kGpusPerServer = 8;
  static constexpr int kServersPerLeaf = 32;
  Cluster cluster;
  std::vector<NodeId> gpus;  // rank order
  std::vector<NodeId> leaves, spines;
};

inline RailFabric rail_fabric(int servers, int spines) {
  ClusterBuilder c("rail-optimized");
  std::vector<NodeId> gpus, leaves, spine_ids;
  const int blocks = servers / RailFabric::kServersPerLeaf;
  const Bandwidth nvlink = gigabytes_per_second(450), pcie = gigabytes_per_second(64);
  const Bandwidth net = gigabits_per_second(400);
  for (int r = 0; r < RailFabric::kGpusPerServer; ++r) {
    for (int b = 0; b < blocks; ++b) {
      leaves.push_back(add_device(c, "rail" + std::to_string(r) + "/leaf" + std::to_string(b),
                                    NodeKind::kLeafSwitch));
    }
  }
  for (int k = 0; k < spines; ++k) {
    const NodeId sp = add_device(c, "spine" + std::to_string(k), NodeKind::kSpineSwitch);
    spine_ids.push_back(sp);
    for (NodeId leaf : leaves)
      c.add_cable(leaf, sp, net, nanoseconds(600), hw::LinkClass::kNetwork, 2);
  }
  for (int s = 0; s < servers; ++s) {
    const std::string node = "node" + std::to_string(s);
    const NodeId nvs = add_device(c, node + "/nvswitch", NodeKind::kNvSwitch, s);
    for (int i = 0; i < RailFabric::kGpusPerServer; ++i) {
      const NodeId g = add_device(c, node + "/gpu" + std::to_string(i), NodeKind::kGpu, s, i);
      const NodeId nic = add_device(c, node + "/nic" + std::to_string(i), NodeKind::kNic, s, i);
      gpus.push_back(g);
      c.add_cable(g, nvs, nvlink, nanoseconds(100), hw::LinkClass::kNvlink, 0);
      c.add_cable(g, nic, pcie, nanoseconds(200), hw::LinkClass::kPcie, 0);
      const NodeId leaf =
          leaves[static_cast<std::size_t>(i * blocks + s / RailFabric::kServersPerLeaf)];
      c.add_cable(nic, leaf, net, nanoseconds(600), hw::LinkClass::kNetwork, 1);
    }
  }
  return RailFabric{std::move(c).build(), std::move(gpus), std::move(leaves), std::move(spine_ids)};
}

// A route is a contiguous chain of links from src to dst (empty when src == dst).
inline void expect_valid_path(const Cluster& c, NodeId src, NodeId dst,
                              std::span<const LinkId> path) {
  if (src == dst) {
    EXPECT_TRUE(path.empty());
    return;
  }
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(c.link(path.front()).src, src);
  EXPECT_EQ(c.link(path.back()).dst, dst);
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    EXPECT_EQ(c.link(path[i]).dst, c.link(path[i + 1]).src) << "gap after link " << i;
  }
}

}  // namespace cs::topo::fixtures
