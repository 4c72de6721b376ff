#include "topology/export_dot.h"

#include <gtest/gtest.h>

#include "tests/topology/test_clusters.h"

namespace cs::topo {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(ExportDot, EveryNodeOnceEveryCableOnce) {
  // Leaf-spine 2 x 3 GPUs, 2 spines: 6 GPU cables + 4 leaf-spine cables = 10 edges, all dir=both.
  const Cluster c =
      fixtures::leaf_spine(2, 3, 2, gigabytes_per_second(50), gigabytes_per_second(50));
  const std::string dot = export_dot(c);
  EXPECT_EQ(dot.rfind("digraph \"leaf-spine\" {\n", 0), 0u);
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const std::string& name = c.node(NodeId{static_cast<std::uint32_t>(i)}).name;
    EXPECT_EQ(count(dot, "  \"" + name + "\" [shape="), 1u) << name;
  }
  EXPECT_EQ(count(dot, " -> "), 10u);
  EXPECT_EQ(count(dot, "dir=both"), 10u);
  EXPECT_NE(dot.find("\"node0/gpu0\" [shape=box]"), std::string::npos);
  EXPECT_NE(dot.find("\"spine1\" [shape=ellipse]"), std::string::npos);
  EXPECT_NE(dot.find("\"node0/gpu0\" -> \"leaf0\" [label=\"50.0 GB/s network\", dir=both]"),
            std::string::npos);
  EXPECT_EQ(dot, export_dot(c));  // deterministic
}

TEST(ExportDot, AsymmetricAndOneWayLinksAreDirected) {
  ClusterBuilder c("mixed");
  const NodeId a = fixtures::add_device(c, "a\"quoted\"", NodeKind::kGpu);
  const NodeId b = fixtures::add_device(c, "b", NodeKind::kNic);
  const auto [ab, ba] =
      c.add_cable(a, b, gigabytes_per_second(64), nanoseconds(1), hw::LinkClass::kPcie, 0);
  c.set_link_bandwidth(ba, gigabytes_per_second(32));  // no longer a symmetric cable
  c.add_link(b, a, gigabytes_per_second(8), nanoseconds(1), hw::LinkClass::kPcie, 0);
  const std::string dot = export_dot(std::move(c).build());
  EXPECT_EQ(count(dot, " -> "), 3u);
  EXPECT_EQ(count(dot, "dir=both"), 0u);
  EXPECT_NE(dot.find("\"a\\\"quoted\\\"\" [shape=box]"), std::string::npos);
  EXPECT_NE(dot.find("\"b\" [shape=diamond]"), std::string::npos);
}

}  // namespace
}  // namespace cs::topo
