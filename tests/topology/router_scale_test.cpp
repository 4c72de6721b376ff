// Routing and properties on a 4,096-GPU rail-optimized fabric built by hand (see
// test_clusters.h): 512 servers x 8 GPUs, one NVSwitch vertex per server, a NIC per GPU,
// 8 rails x 16 leaves of 32 NICs, 32 spines cabled to every leaf.
#include <chrono>
#include <iostream>

#include <gtest/gtest.h>

#include "tests/topology/test_clusters.h"
#include "topology/properties.h"
#include "topology/router.h"

namespace cs::topo {
namespace {

constexpr int kServers = 512, kSpines = 32;
constexpr int kGpus = kServers * fixtures::RailFabric::kGpusPerServer;  // 4,096

const fixtures::RailFabric& fabric() {
  static const fixtures::RailFabric f = fixtures::rail_fabric(kServers, kSpines);
  return f;
}

// Expected hop counts, derived from the model. Servers meet only through NICs and leaves:
//  - same server: GPU -> NVSwitch -> GPU = 2.
//  - other server, same rail and same leaf block (s / 32 equal):
//    GPU -> NIC -> leaf -> NIC -> GPU = 4.
//  - any other pair: leaving a server takes >= 2 hops (GPU -> NIC -> leaf) and entering one
//    >= 2; the two leaves differ (another rail or block) unless one side first crosses its
//    NVSwitch to a GPU of the other rail (+2), and two distinct leaves are joined through a
//    spine (+2). Both give 6: GPU -> NIC -> leaf -> spine -> leaf -> NIC -> GPU.
int expected_hops(int a, int b) {
  const int sa = a / 8, sb = b / 8;
  if (sa == sb) return 2;
  if (a % 8 == b % 8 && sa / 32 == sb / 32) return 4;
  return 6;
}

TEST(RouterScale, RingAndRailNeighboursOn4096Gpus) {
  const fixtures::RailFabric& f = fabric();
  const Cluster& c = f.cluster;
  ASSERT_EQ(c.gpus().size(), static_cast<std::size_t>(kGpus));
  Router r(c);

  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kGpus; ++i) {
    r.route(f.gpus[i], f.gpus[(i + 1) % kGpus], static_cast<std::uint64_t>(i));
    r.route(f.gpus[i], f.gpus[(i + 8) % kGpus], static_cast<std::uint64_t>(i));
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing ] 8,192 uncached route queries on 4,096 GPUs: " << ms << " ms\n";
  EXPECT_EQ(r.cached_routes(), 8192u);

  int hist[7] = {};
  for (int i = 0; i < kGpus; ++i) {
    for (int step : {1, 8}) {
      const int j = (i + step) % kGpus;
      const auto path = r.route(f.gpus[i], f.gpus[j], static_cast<std::uint64_t>(i));  // cached
      fixtures::expect_valid_path(c, f.gpus[i], f.gpus[j], path);
      ASSERT_EQ(static_cast<int>(path.size()), expected_hops(i, j)) << i << " -> " << j;
      ++hist[path.size()];
    }
  }
  // Ring: 7 of every 8 steps stay in the server (3,584 x 2 hops); 512 cross servers (6 hops).
  // i -> i+8: same leaf except at the 16 block boundaries (s % 32 == 31), 8 GPUs each:
  // 4,096 - 128 = 3,968 x 4 hops, 128 x 6 hops.
  EXPECT_EQ(hist[2], 3584);
  EXPECT_EQ(hist[4], 3968);
  EXPECT_EQ(hist[6], 512 + 128);
}

TEST(RouterScale, SpreadsCrossBlockFlowsOverSpines) {
  // node0/gpu0 -> node32/gpu0: same rail, leaf blocks 0 and 1, so every shortest path goes
  // through a spine (6 hops). 3,200 labels over 32 spines: 100 expected each.
  const fixtures::RailFabric& f = fabric();
  Router r(f.cluster);
  std::vector<int> per_spine(f.cluster.node_count(), 0);
  for (std::uint64_t label = 0; label < 3200; ++label) {
    const auto path = r.route(f.gpus[0], f.gpus[32 * 8], label);
    ASSERT_EQ(path.size(), 6u);
    ++per_spine[f.cluster.link(path[2]).dst.value];
  }
  for (NodeId s : f.spines) EXPECT_GE(per_spine[s.value], 50) << f.cluster.node(s).name;
}

TEST(RouterScale, PropertiesOf4096Gpus) {
  // Diameter 6 (see expected_hops). Bisection: GPUs 0..2047 are servers 0..255 = leaf blocks
  // 0..7; everything they send leaves through their 2,048 NICs (50 GB/s each) and the 64
  // leaves' 64 x 32 uplinks (50 GB/s each): both 102.4 TB/s. Leaves: 32 down, 32 up: 1.0.
  const auto start = std::chrono::steady_clock::now();
  const TopologySummary s = summarize(fabric().cluster);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing ] summarize() on 4,096 GPUs: " << ms << " ms\n";
  EXPECT_EQ(s.gpus, 4096u);
  EXPECT_EQ(s.diameter_hops, 6);
  EXPECT_EQ(s.bisection_bandwidth, 2048 * gigabits_per_second(400));
  ASSERT_EQ(s.tiers.size(), 1u);
  EXPECT_DOUBLE_EQ(s.tiers[0].oversubscription, 1.0);
  EXPECT_EQ(s.tiers[0].links, 128u * 32u);
  // Cables: 4,096 x (NVLink + PCIe + NIC-leaf) + 128 leaves x 32 spines = 16,384.
  EXPECT_EQ(s.cables, 16384u);
}

}  // namespace
}  // namespace cs::topo
