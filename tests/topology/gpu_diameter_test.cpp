// topo::gpu_diameter (twin servers + bit-parallel BFS) against the brute force it replaced, one
// BFS per GPU: on every bundled cluster, and on seeded random clusters whose extra links break
// some twins (and some reachability).
#include "topology/gpu_diameter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <vector>

#include "core/random.h"
#include "tests/topology/test_clusters.h"
#include "topology/cluster_loader.h"

namespace cs::topo {
namespace {

// The definition: the largest shortest-path hop count over ordered GPU pairs, one BFS per GPU;
// -1 when a GPU does not reach another.
int brute_force_diameter(const Cluster& c) {
  const auto gpus = c.gpus();
  const Adjacency& out = c.out_adjacency();
  int diameter = 0;
  for (const NodeId source : gpus) {
    std::vector<int> dist(c.node_count(), -1);
    std::vector<std::uint32_t> queue{source.value};
    dist[source.value] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const std::uint32_t u = queue[head];
      for (std::uint32_t k = out.begin[u]; k < out.begin[u + 1]; ++k) {
        if (dist[out.node[k]] >= 0) continue;
        dist[out.node[k]] = dist[u] + 1;
        queue.push_back(out.node[k]);
      }
    }
    for (const NodeId g : gpus) {
      if (dist[g.value] < 0) return -1;
      diameter = std::max(diameter, dist[g.value]);
    }
  }
  return diameter;
}

TEST(GpuDiameter, EqualsTheBruteForceOnEveryBundledCluster) {
  const std::string dir = std::string(CS_SOURCE_DIR) + "/configs/clusters";
  int clusters = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const Cluster c = load_cluster(entry.path().string());
    EXPECT_EQ(gpu_diameter(c), brute_force_diameter(c)) << entry.path().filename();
    ++clusters;
  }
  EXPECT_GE(clusters, 10);
}

TEST(GpuDiameter, RailOptimizedFabricIsFourNetworkHopsPlusThePcieOnes) {
  // GPU -> NIC -> leaf -> spine -> leaf -> NIC -> GPU: 6 hops between rails or leaf blocks;
  // 64 servers in 2 leaf blocks of 32 twins each, so 16 GPUs are searched for 512.
  const fixtures::RailFabric f = fixtures::rail_fabric(64, 4);
  EXPECT_EQ(gpu_diameter(f.cluster), 6);
  EXPECT_EQ(brute_force_diameter(f.cluster), 6);
}

// Servers of 4 GPUs behind an NVSwitch, each GPU with a NIC on the leaf of its server's block of
// 3 (one NIC in 6 on a random leaf instead), leaves on 2 spines; then `extra` seeded random
// one-way links between any two devices.
Cluster random_cluster(std::uint64_t seed, int servers, int extra) {
  Rng rng = Rng::derive(seed, 3);
  ClusterBuilder c("random");
  const Bandwidth b = gigabytes_per_second(50);
  std::vector<NodeId> all, leaves, spines;
  for (int l = 0; l < (servers + 2) / 3; ++l) leaves.push_back(fixtures::add_device(c, "leaf" + std::to_string(l), NodeKind::kLeafSwitch));
  for (int k = 0; k < 2; ++k) {
    spines.push_back(fixtures::add_device(c, "spine" + std::to_string(k), NodeKind::kSpineSwitch));
    for (NodeId leaf : leaves) c.add_cable(leaf, spines.back(), b, nanoseconds(1), hw::LinkClass::kNetwork, 2);
  }
  all = leaves;
  all.insert(all.end(), spines.begin(), spines.end());
  for (int s = 0; s < servers; ++s) {
    const std::string node = "node" + std::to_string(s);
    const NodeId nvs = fixtures::add_device(c, node + "/nvswitch", NodeKind::kNvSwitch, s);
    all.push_back(nvs);
    for (int i = 0; i < 4; ++i) {
      const NodeId g = fixtures::add_device(c, node + "/gpu" + std::to_string(i), NodeKind::kGpu, s, i);
      const NodeId nic = fixtures::add_device(c, node + "/nic" + std::to_string(i), NodeKind::kNic, s, i);
      c.add_cable(g, nvs, b, nanoseconds(1), hw::LinkClass::kNvlink, 0);
      c.add_cable(g, nic, b, nanoseconds(1), hw::LinkClass::kPcie, 0);
      const std::size_t leaf = rng.below(6) == 0 ? rng.below(leaves.size()) : static_cast<std::size_t>(s / 3);
      c.add_cable(nic, leaves[leaf], b, nanoseconds(1), hw::LinkClass::kNetwork, 1);
      all.push_back(g);
      all.push_back(nic);
    }
  }
  for (int e = 0; e < extra; ++e) {
    const NodeId from = all[rng.below(all.size())];
    const NodeId to = all[rng.below(all.size())];
    if (from != to) c.add_link(from, to, b, nanoseconds(1), hw::LinkClass::kNetwork, 1);
  }
  return std::move(c).build();
}

TEST(GpuDiameter, EqualsTheBruteForceWhenRandomLinksBreakTwins) {
  // 2 to 9 servers (one leaf up to 3, then GPU, NIC, leaf, spine, leaf, NIC, GPU = 6 hops
  // between blocks, 4 within one); NICs on random leaves and extra one-way links make servers
  // that were twins differ and shorten some paths.
  std::set<int> seen;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Cluster c = random_cluster(seed, 2 + static_cast<int>(seed % 8), static_cast<int>(seed % 5));
    const int expected = brute_force_diameter(c);
    EXPECT_EQ(gpu_diameter(c), expected) << "seed " << seed;
    seen.insert(expected);
  }
  EXPECT_GE(seen.size(), 2u);
}

TEST(GpuDiameter, OneWayServerLinksBreakReachability) {
  // Two GPUs linked one way only, outside servers: gpu1 cannot reach gpu0.
  ClusterBuilder c("oneway");
  const NodeId a = fixtures::add_device(c, "a", NodeKind::kGpu);
  const NodeId b = fixtures::add_device(c, "b", NodeKind::kGpu);
  c.add_link(a, b, gigabytes_per_second(10), nanoseconds(1), hw::LinkClass::kPcie, 0);
  EXPECT_EQ(gpu_diameter(std::move(c).build()), -1);
}

}  // namespace
}  // namespace cs::topo
