#include "topology/properties.h"

#include <gtest/gtest.h>

#include "tests/topology/test_clusters.h"

namespace cs::topo {
namespace {

constexpr auto kIdx = [](auto e) { return static_cast<std::size_t>(e); };

TEST(Properties, RingOfEight) {
  // Ring of n = 8 GPUs, cables of B = 100 GB/s each way.
  //   diameter: floor(8/2) = 4 hops.
  //   bisection: halves {0..3} and {4..7}; the cut is crossed by 3->4 and 0->7, one direction
  //   of two cables: 2B = 200 GB/s.
  //   8 cables = 16 directed links; NVLink capacity 16 x 100 GB/s.
  const Bandwidth b = gigabytes_per_second(100);
  const TopologySummary s = summarize(fixtures::ring(8, b));
  EXPECT_EQ(s.name, "ring");
  EXPECT_EQ(s.gpus, 8u);
  EXPECT_EQ(s.nodes_by_kind[kIdx(NodeKind::kGpu)], 8u);
  EXPECT_EQ(s.switches, 0u);
  EXPECT_EQ(s.directed_links, 16u);
  EXPECT_EQ(s.cables, 8u);
  EXPECT_EQ(s.diameter_hops, 4);
  EXPECT_EQ(s.bisection_bandwidth, 2 * b);
  EXPECT_EQ(s.total_capacity_by_link_class[kIdx(hw::LinkClass::kNvlink)], 16.0 * b);
  EXPECT_EQ(s.total_capacity_by_link_class[kIdx(hw::LinkClass::kNetwork)], Bandwidth{0});
  EXPECT_TRUE(s.tiers.empty());  // no fabric switches
}

TEST(Properties, OddRing) {
  // n = 7: diameter floor(7/2) = 3; halves {0,1,2} and {3..6}: cut links 2->3 and 0->6, 2B.
  const Bandwidth b = gigabytes_per_second(40);
  const TopologySummary s = summarize(fixtures::ring(7, b));
  EXPECT_EQ(s.diameter_hops, 3);
  EXPECT_EQ(s.bisection_bandwidth, 2 * b);
}

TEST(Properties, Star) {
  // One switch, n = 6 GPUs on cables of B: every pair is GPU -> switch -> GPU, diameter 2.
  // Bisection: the first 3 GPUs send at most B each into the switch: (n/2) B = 3B.
  const Bandwidth b = gigabytes_per_second(50);
  const TopologySummary s = summarize(fixtures::star(6, b));
  EXPECT_EQ(s.diameter_hops, 2);
  EXPECT_EQ(s.bisection_bandwidth, 3 * b);
  EXPECT_EQ(s.switches, 1u);
  EXPECT_EQ(s.cables, 6u);
  // The leaf has no uplinks, so no tier is listed.
  EXPECT_TRUE(s.tiers.empty());
}

TEST(Properties, LeafSpineTwoToOne) {
  // L = 4 leaves x e = 8 GPUs at D = 100 GB/s; S = 4 spines, uplinks U = e D / (2 S) = 100 GB/s,
  // so each leaf has 8 x 100 down and 4 x 100 up: oversubscription 2.0.
  //   tier 1: down = 4 leaves x 800 = 3200 GB/s, up = 4 x 400 = 1600 GB/s, 16 uplinks.
  //   diameter: GPU -> leaf -> spine -> leaf -> GPU = 4 hops.
  //   bisection: first 16 GPUs = leaves 0 and 1; all their traffic leaves through those two
  //   leaves' uplinks: 2 x 4 x 100 = 800 GB/s (the spines' downlinks to leaves 2, 3 carry the
  //   same 800 GB/s; the GPU cables carry 1600 GB/s per half).
  //   cables: 32 GPU cables + 16 leaf-spine = 48; directed 96; network capacity 96 x 100 GB/s.
  const Bandwidth d = gigabytes_per_second(100);
  const TopologySummary s = summarize(fixtures::leaf_spine(4, 8, 4, d, d));
  EXPECT_EQ(s.gpus, 32u);
  EXPECT_EQ(s.switches, 8u);
  EXPECT_EQ(s.nodes_by_kind[kIdx(NodeKind::kLeafSwitch)], 4u);
  EXPECT_EQ(s.nodes_by_kind[kIdx(NodeKind::kSpineSwitch)], 4u);
  EXPECT_EQ(s.cables, 48u);
  EXPECT_EQ(s.directed_links, 96u);
  EXPECT_EQ(s.diameter_hops, 4);
  EXPECT_EQ(s.bisection_bandwidth, 8 * d);
  EXPECT_EQ(s.total_capacity_by_link_class[kIdx(hw::LinkClass::kNetwork)], 96.0 * d);
  ASSERT_EQ(s.tiers.size(), 1u);
  EXPECT_EQ(s.tiers[0].tier, 1);
  EXPECT_EQ(s.tiers[0].links, 16u);
  EXPECT_EQ(s.tiers[0].down_capacity, 32 * d);
  EXPECT_EQ(s.tiers[0].up_capacity, 16 * d);
  EXPECT_DOUBLE_EQ(s.tiers[0].oversubscription, 2.0);
}

TEST(Properties, LoneLinksCountAsCablesAndBreakTheDiameter) {
  // gpu0 -> gpu1 one way only: 1 directed link = 1 cable; gpu1 cannot reach gpu0: diameter -1.
  // Bisection {gpu0} -> {gpu1}: the one link, B.
  ClusterBuilder c("oneway");
  const NodeId a = fixtures::add_device(c, "a", NodeKind::kGpu);
  const NodeId b = fixtures::add_device(c, "b", NodeKind::kGpu);
  c.add_link(a, b, gigabytes_per_second(10), nanoseconds(1), hw::LinkClass::kPcie, 0);
  const TopologySummary s = summarize(std::move(c).build());
  EXPECT_EQ(s.cables, 1u);
  EXPECT_EQ(s.diameter_hops, -1);
  EXPECT_EQ(s.bisection_bandwidth, gigabytes_per_second(10));
}

TEST(Properties, JsonSchemaAndDeterminism) {
  const Bandwidth d = gigabytes_per_second(100);
  const Cluster c = fixtures::leaf_spine(4, 8, 4, d, d);
  const nlohmann::json j = to_json(summarize(c));
  EXPECT_EQ(j.dump(), to_json(summarize(c)).dump());
  EXPECT_EQ(j.at("name"), "leaf-spine");
  EXPECT_EQ(j.at("nodes_by_kind").at("gpu"), 32);
  EXPECT_EQ(j.at("nodes_by_kind").at("spine_switch"), 4);
  EXPECT_EQ(j.at("nodes_by_kind").at("storage"), 0);
  EXPECT_EQ(j.at("nodes_by_kind").size(), static_cast<std::size_t>(kNodeKindCount));
  EXPECT_EQ(j.at("diameter_hops"), 4);
  EXPECT_EQ(j.at("bisection_bandwidth_Bps"), 800'000'000'000);  // 800 GB/s, see above
  EXPECT_TRUE(j.at("bisection_bandwidth_Bps").is_number_integer());
  EXPECT_EQ(j.at("tiers").at(0).at("oversubscription"), 2.0);
  EXPECT_EQ(j.at("tiers").at(0).at("up_capacity_Bps"), 1'600'000'000'000);
  EXPECT_EQ(j.at("total_capacity_Bps_by_link_class").at("network"), 9'600'000'000'000);
  EXPECT_EQ(j.at("cables"), 48);

  const std::string table = to_table(summarize(c));
  EXPECT_NE(table.find("leaf-spine"), std::string::npos);
  EXPECT_NE(table.find("4 hops"), std::string::npos);
  EXPECT_NE(table.find("2.00:1"), std::string::npos);
}

TEST(Properties, EmptyAndSingleGpuClusters) {
  const TopologySummary empty = summarize(ClusterBuilder("empty").build());
  EXPECT_EQ(empty.diameter_hops, 0);
  EXPECT_EQ(empty.bisection_bandwidth, Bandwidth{0});
  ClusterBuilder one("one");
  fixtures::add_device(one, "g", NodeKind::kGpu);
  EXPECT_EQ(summarize(std::move(one).build()).diameter_hops, 0);
}

}  // namespace
}  // namespace cs::topo
