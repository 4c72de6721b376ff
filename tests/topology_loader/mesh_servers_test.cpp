// Servers whose GPUs are joined point to point (the mesh template, docs/cluster-format.md): the
// bundled DGX-1 (NVLink 2 hybrid cube-mesh) and MI300X (xGMI full mesh) files, pair by pair.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "topology/cluster_loader.h"

namespace cs::topo {
namespace {

const std::string kClusters = std::string(CS_SOURCE_DIR) + "/configs/clusters/";

NodeId node(const Cluster& c, const std::string& name) {
  auto id = c.find_node(name);
  if (!id) throw std::runtime_error("no device " + name);
  return *id;
}

// Per GPU pair (a < b, local indices of server `server`): the bandwidth of the direct GPU-GPU
// link from a to b and from b to a (0 when not joined), checking both directions agree.
std::map<std::pair<int, int>, double> gpu_pairs(const Cluster& c, int server, int gpus) {
  std::map<std::pair<int, int>, double> out;
  const std::string prefix = "node" + std::to_string(server) + "/gpu";
  for (int a = 0; a < gpus; ++a) {
    for (int b = a + 1; b < gpus; ++b) {
      const auto ab = c.find_link(node(c, prefix + std::to_string(a)), node(c, prefix + std::to_string(b)));
      const auto ba = c.find_link(node(c, prefix + std::to_string(b)), node(c, prefix + std::to_string(a)));
      EXPECT_EQ(ab.has_value(), ba.has_value()) << a << "-" << b;
      if (!ab) continue;
      EXPECT_EQ(c.link(*ab).bandwidth.value(), c.link(*ba).bandwidth.value());
      EXPECT_EQ(c.link(*ab).link_class, hw::LinkClass::kNvlink);
      out[{a, b}] = c.link(*ab).bandwidth.value();
    }
  }
  return out;
}

TEST(MeshServers, Dgx1HasTheHybridCubeMeshPairByPair) {
  // nvidia-smi topo -m of a DGX-1 with V100 (docs/cluster-format.md): NV2 = 2 links, NV1 = 1,
  // SYS = not joined. One link is NVLink2's 150 GB/s / 6 links = 25 GB/s per direction.
  const Cluster c = load_cluster(kClusters + "dgx1-v100.json");
  ASSERT_EQ(c.gpus().size(), 8u);
  const std::map<std::pair<int, int>, int> expected = {
      {{0, 1}, 1}, {{0, 2}, 1}, {{0, 3}, 2}, {{0, 4}, 2}, {{1, 2}, 2}, {{1, 3}, 1}, {{1, 5}, 2}, {{2, 3}, 2},
      {{2, 6}, 1}, {{3, 7}, 1}, {{4, 5}, 1}, {{4, 6}, 1}, {{4, 7}, 2}, {{5, 6}, 2}, {{5, 7}, 1}, {{6, 7}, 2}};
  const auto pairs = gpu_pairs(c, 0, 8);
  ASSERT_EQ(pairs.size(), expected.size());  // 16 of the 28 pairs are joined
  std::map<int, int> degree;
  int links = 0, doubled = 0;
  for (const auto& [pair, m] : expected) {
    ASSERT_TRUE(pairs.count(pair)) << pair.first << "-" << pair.second;
    EXPECT_DOUBLE_EQ(pairs.at(pair), m * 25e9) << pair.first << "-" << pair.second;
    degree[pair.first] += m;
    degree[pair.second] += m;
    links += m;
    doubled += m == 2;
  }
  // Every GPU has its 6 NVLink2 links in use; 24 links in all, 8 pairs with two.
  for (int g = 0; g < 8; ++g) EXPECT_EQ(degree[g], 6) << "GPU " << g;
  EXPECT_EQ(links, 24);
  EXPECT_EQ(doubled, 8);
  // Two fully connected quads, and GPU i joined to GPU i+4.
  for (int q : {0, 4}) {
    for (int a = q; a < q + 4; ++a) {
      for (int b = a + 1; b < q + 4; ++b) EXPECT_TRUE(pairs.count({a, b})) << a << "-" << b;
    }
  }
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(pairs.count({i, i + 4}));
  // No NVSwitch; 8 GPUs + 4 NICs + 4 PCIe switches + 1 host = 17 devices; NIC m shares PCIe
  // switch m with GPUs 2m and 2m+1 (mlx5_0 with GPUs 0-1, ...).
  EXPECT_EQ(c.node_count(), 17u);
  for (int m = 0; m < 4; ++m) {
    const std::string sw = "node0/pcie" + std::to_string(m);
    EXPECT_TRUE(c.find_link(node(c, "node0/nic" + std::to_string(m)), node(c, sw)));
    EXPECT_TRUE(c.find_link(node(c, "node0/gpu" + std::to_string(2 * m)), node(c, sw)));
    EXPECT_TRUE(c.find_link(node(c, "node0/gpu" + std::to_string(2 * m + 1)), node(c, sw)));
  }
}

TEST(MeshServers, Mi300xIsAFullMeshOfOneLinkPerPair) {
  // Every pair of the 8 GPUs joined by one xGMI link of 448 / 7 = 64 GB/s per direction: degree 7.
  const Cluster c = load_cluster(kClusters + "mi300x-8.json");
  ASSERT_EQ(c.gpus().size(), 8u);
  const auto pairs = gpu_pairs(c, 0, 8);
  EXPECT_EQ(pairs.size(), 28u);
  std::map<int, int> degree;
  for (const auto& [pair, bw] : pairs) {
    EXPECT_DOUBLE_EQ(bw, 64e9);
    ++degree[pair.first];
    ++degree[pair.second];
  }
  for (int g = 0; g < 8; ++g) EXPECT_EQ(degree[g], 7);
  // 8 GPUs + 8 NICs + 4 PCIe switches + 1 host; cables: 28 pairs + 8 + 8 + 4 = 48 (96 links).
  EXPECT_EQ(c.node_count(), 21u);
  EXPECT_EQ(c.link_count(), 96u);
}

TEST(MeshServers, MultiServerFilesRepeatTheMeshInEveryServer) {
  const Cluster dgx1 = load_cluster(kClusters + "dgx1-v100-4node.json");
  const Cluster mi = load_cluster(kClusters + "mi300x-4node.json");
  EXPECT_EQ(dgx1.gpus().size(), 32u);
  EXPECT_EQ(mi.gpus().size(), 32u);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(gpu_pairs(dgx1, s, 8).size(), 16u) << s;
    EXPECT_EQ(gpu_pairs(mi, s, 8).size(), 28u) << s;
  }
}

TEST(MeshServers, AListedMeshGivesEachPairItsLinks) {
  // A 4-GPU ring of doubled NVLink2 links: 4 cables of 2 x 25 GB/s; GPUs 0 and 2 not joined.
  const std::string text = R"({"servers": [{"template": "mesh", "gpu": "V100-SXM2-32GB", "gpus": 4,
      "nvlink": "NVLink2", "mesh": [{"gpus": [0, 1], "links": 2}, {"gpus": [1, 2], "links": 2},
      {"gpus": [2, 3], "links": 2}, {"gpus": [3, 0], "links": 2}]}]})";
  const Cluster c = build_cluster(ConfigDocument::parse(text, "ring4.json"));
  const auto pairs = gpu_pairs(c, 0, 4);
  EXPECT_EQ(pairs.size(), 4u);
  EXPECT_DOUBLE_EQ(pairs.at({0, 1}), 50e9);
  EXPECT_DOUBLE_EQ(pairs.at({0, 3}), 50e9);
  EXPECT_FALSE(pairs.count({0, 2}));
}

}  // namespace
}  // namespace cs::topo
