// The example clusters in configs/clusters and the loader's stages. Every expected count is
// derived in a comment from the server template and fabric rules (docs/cluster-format.md).
#include "topology/cluster_loader.h"

#include <chrono>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs::topo {
namespace {

const std::string kClusters = std::string(CS_SOURCE_DIR) + "/configs/clusters/";
const std::string kData = std::string(CS_TEST_DATA_DIR) + "/clusters/";

std::map<NodeKind, int> kinds(const Cluster& c) {
  std::map<NodeKind, int> out;
  for (std::uint32_t i = 0; i < c.node_count(); ++i) ++out[c.node(NodeId{i}).kind];
  return out;
}

NodeId node(const Cluster& c, const std::string& name) {
  auto id = c.find_node(name);
  if (!id) throw std::runtime_error("no device " + name);
  return *id;
}

const LinkInfo& link(const Cluster& c, const std::string& from, const std::string& to) {
  auto l = c.find_link(node(c, from), node(c, to));
  if (!l) throw std::runtime_error("no link " + from + " -> " + to);
  return c.link(*l);
}

// Sum of the bandwidths of the node's out-links of one tier.
double out_capacity(const Cluster& c, NodeId n, int tier) {
  double sum = 0;
  for (LinkId l : c.out_links(n)) {
    if (c.link(l).tier == tier) sum += c.link(l).bandwidth.value();
  }
  return sum;
}

double seconds_to_load(const std::string& file, const std::vector<std::string>& overrides = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster c = load_cluster(file, overrides);
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_GT(c.gpus().size(), 0u);
  return std::chrono::duration<double>(t1 - t0).count();
}

TEST(ExampleClusters, EveryFileLoads) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kClusters)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const Cluster c = load_cluster(entry.path().string());
    EXPECT_EQ(c.name(), entry.path().stem().string());
    EXPECT_FALSE(c.gpus().empty());
    ++n;
  }
  EXPECT_GE(n, 7);
}

TEST(ExampleClusters, Gb200Nvl72IsOneNvswitchDomainOf72Gpus) {
  // The nvswitch template expresses an NVL72 rack: 72 GPUs on one NVSwitch vertex, NVLink5.
  const Cluster c = load_cluster(kClusters + "gb200-nvl72.json");
  EXPECT_EQ(c.gpus().size(), 72u);
  auto k = kinds(c);
  EXPECT_EQ(k[NodeKind::kGpu], 72);
  EXPECT_EQ(k[NodeKind::kNvSwitch], 1);
  EXPECT_EQ(k[NodeKind::kNic], 0);
  // Every GPU's cable to the switch carries NVLink5's 900 GB/s per direction.
  EXPECT_DOUBLE_EQ(link(c, "rack0/gpu71", "rack0/nvswitch").bandwidth.value(), 900e9);
}

TEST(ExampleClusters, DgxH100) {
  const Cluster c = load_cluster(kClusters + "dgx-h100.json");
  // One server: 8 GPUs + 8 NICs + 4 PCIe switches + 1 NVSwitch + 1 host = 22 devices.
  auto k = kinds(c);
  EXPECT_EQ(k[NodeKind::kGpu], 8);
  EXPECT_EQ(k[NodeKind::kNic], 8);
  EXPECT_EQ(k[NodeKind::kPcieSwitch], 4);
  EXPECT_EQ(k[NodeKind::kNvSwitch], 1);
  EXPECT_EQ(k[NodeKind::kHost], 1);
  EXPECT_EQ(c.node_count(), 22u);
  // Cables: 8 GPU-NVSwitch + 8 GPU-PCIe + 8 NIC-PCIe + 4 PCIe-host = 28; two links each = 56.
  EXPECT_EQ(c.link_count(), 56u);

  // Ranks follow GPU order.
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(c.node(c.gpus()[i]).name, "node0/gpu" + std::to_string(i));
    EXPECT_EQ(c.node(c.gpus()[i]).local, static_cast<int>(i));
    EXPECT_EQ(c.node(c.gpus()[i]).server, 0);
    EXPECT_EQ(c.node(c.gpus()[i]).origin, "/servers/0");
    EXPECT_EQ(c.gpu_spec(c.gpus()[i]).name, "H100-SXM");
  }
  const LinkInfo& nv = link(c, "node0/gpu3", "node0/nvswitch");
  EXPECT_DOUBLE_EQ(nv.bandwidth.value(), 450e9);
  EXPECT_EQ(nv.link_class, hw::LinkClass::kNvlink);
  EXPECT_EQ(nv.tier, 0);
  EXPECT_EQ(nv.latency, nanoseconds(500));
  // NVLS: 8 GPUs x 276 GB/s.
  EXPECT_DOUBLE_EQ(c.node(node(c, "node0/nvswitch")).reduction_bandwidth.value(), 8 * 276e9);
  // GPU i and NIC i share PCIe switch i * 4 / 8 = i / 2.
  const LinkInfo& gp = link(c, "node0/gpu5", "node0/pcie2");
  EXPECT_DOUBLE_EQ(gp.bandwidth.value(), 64e9);
  EXPECT_EQ(gp.link_class, hw::LinkClass::kPcie);
  const LinkInfo& np = link(c, "node0/nic5", "node0/pcie2");
  // The NIC cable carries the PCIe latency (0.5 us) plus the NIC's own (0.5 us).
  EXPECT_EQ(np.latency, microseconds(1));
  EXPECT_EQ(c.node(node(c, "node0/nic5")).local, 5);
  EXPECT_EQ(c.node(node(c, "node0/nic5")).model, "NDR-400G");
  EXPECT_NO_THROW(link(c, "node0/pcie3", "node0/cpu"));
}

TEST(ExampleClusters, DgxA100HasNoInSwitchReduction) {
  const Cluster c = load_cluster(kClusters + "dgx-a100.json");
  EXPECT_EQ(c.node_count(), 22u);  // as DGX H100
  EXPECT_EQ(c.link_count(), 56u);
  EXPECT_EQ(c.node(node(c, "node0/nvswitch")).reduction_bandwidth.value(), 0);
  EXPECT_DOUBLE_EQ(link(c, "node0/gpu0", "node0/nvswitch").bandwidth.value(), 300e9);
}

TEST(ExampleClusters, H100Rail512) {
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster c = load_cluster(kClusters + "h100-rail-512.json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("load_seconds", std::to_string(seconds));
  std::printf("h100-rail-512.json loaded in %.1f ms\n", seconds * 1e3);
#ifdef NDEBUG
  EXPECT_LT(seconds, 0.2);
#endif
  // 512 servers x 8 GPUs.
  EXPECT_EQ(c.gpus().size(), 4096u);
  // Leaves: 8 rails x 512 / 32 nodes per leaf = 128; spines: 64 as given.
  auto k = kinds(c);
  EXPECT_EQ(k[NodeKind::kLeafSwitch], 128);
  EXPECT_EQ(k[NodeKind::kSpineSwitch], 64);
  // Devices: 512 x 22 per DGX + 128 + 64 = 11,456.
  EXPECT_EQ(c.node_count(), 11456u);
  // Cables: 512 x 28 inside servers + 4,096 NIC-leaf + 128 x 64 leaf-spine = 26,624; x2 links.
  EXPECT_EQ(c.link_count(), 2u * 26624u);
  // rail3/leaf5 holds NIC 3 of nodes 160..191.
  const NodeId leaf = node(c, "rail3/leaf5");
  int down = 0;
  for (LinkId l : c.out_links(leaf)) {
    const NodeInfo& dst = c.node(c.link(l).dst);
    if (dst.kind != NodeKind::kNic) continue;
    ++down;
    EXPECT_EQ(dst.local, 3);
    EXPECT_GE(dst.server, 160);
    EXPECT_LE(dst.server, 191);
  }
  EXPECT_EQ(down, 32);
  // 1:1: 32 x 400 Gb/s of uplink split over 64 spines = 200 Gb/s = 25 GB/s per cable.
  const LinkInfo& up = link(c, "rail3/leaf5", "spine63");
  EXPECT_DOUBLE_EQ(up.bandwidth.value(), 25e9);
  EXPECT_EQ(up.tier, 2);
  EXPECT_EQ(up.latency, nanoseconds(300));
  EXPECT_DOUBLE_EQ(out_capacity(c, leaf, 2), 32 * 50e9);
}

TEST(ExampleClusters, H100Rail32kGpus) {
  // 4,096 servers: 32,768 GPUs, 8 x 128 = 1,024 leaves, 64 spines.
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster c = load_cluster(kClusters + "h100-rail-512.json", {"/servers/0/count=4096"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("h100-rail-512.json with 4096 servers loaded in %.1f ms\n", seconds * 1e3);
  EXPECT_EQ(c.gpus().size(), 32768u);
  EXPECT_EQ(kinds(c)[NodeKind::kLeafSwitch], 1024);
  // 4,096 x 22 + 1,024 + 64 devices; 4,096 x 28 + 32,768 + 1,024 x 64 cables.
  EXPECT_EQ(c.node_count(), 4096u * 22 + 1024 + 64);
  EXPECT_EQ(c.link_count(), 2u * (4096u * 28 + 32768 + 1024 * 64));
}

TEST(ExampleClusters, LeafSpineOversubscribed) {
  const Cluster c = load_cluster(kClusters + "leafspine-oversub.json");
  // 256 single servers (GPU + NIC) + 32 leaves + 4 spines.
  EXPECT_EQ(c.gpus().size(), 256u);
  EXPECT_EQ(c.node_count(), 256u * 2 + 32 + 4);
  // Cables: 256 GPU-NIC + 256 NIC-leaf + 32 x 4 leaf-spine = 640.
  EXPECT_EQ(c.link_count(), 2u * 640);
  for (int i = 0; i < 32; ++i) {
    const NodeId leaf = node(c, "leaf" + std::to_string(i));
    // Downlinks: 8 x 400 Gb/s = 400 GB/s; uplinks at 2:1: half, 4 x 50 GB/s.
    EXPECT_DOUBLE_EQ(out_capacity(c, leaf, 1), 8 * 50e9);
    EXPECT_DOUBLE_EQ(out_capacity(c, leaf, 2), out_capacity(c, leaf, 1) / 2);
  }
  // Endpoints fill leaves in order: node9's NIC is on leaf1.
  EXPECT_NO_THROW(link(c, "node9/nic0", "leaf1"));
  const Cluster full = load_cluster(kClusters + "leafspine-oversub.json", {"/fabric/oversubscription=1"});
  const NodeId leaf = node(full, "leaf0");
  EXPECT_DOUBLE_EQ(out_capacity(full, leaf, 2), out_capacity(full, leaf, 1));
}

TEST(ExampleClusters, A100SuperpodSmall) {
  const Cluster c = load_cluster(kClusters + "a100-superpod.json", {"/servers/0/count=4"});
  EXPECT_EQ(c.gpus().size(), 32u);
  // Rail-aligned: 4 servers form one block (< 20), 8 rails -> 8 leaves of 4 NICs, all in pod 0.
  // A pod has k/2 = 20 aggs; a 3-tier fat-tree has (k/2)^2 = 400 cores.
  auto k = kinds(c);
  EXPECT_EQ(k[NodeKind::kLeafSwitch], 8);
  EXPECT_EQ(k[NodeKind::kSpineSwitch], 20);
  EXPECT_EQ(k[NodeKind::kCoreSwitch], 400);
  // Devices: 4 x 22 + 8 + 20 + 400 = 516.
  EXPECT_EQ(c.node_count(), 516u);
  // Cables: 4 x 28 + 32 NIC-leaf + 8 x 20 leaf-agg + 20 x 20 agg-core = 704.
  EXPECT_EQ(c.link_count(), 2u * 704);
  // Leaf r holds NIC r of every server.
  for (int s = 0; s < 4; ++s) EXPECT_NO_THROW(link(c, "node" + std::to_string(s) + "/nic6", "pod0/leaf6"));
  // HDR 200 Gb/s = 25 GB/s everywhere at 1:1.
  EXPECT_DOUBLE_EQ(link(c, "pod0/leaf0", "pod0/agg19").bandwidth.value(), 25e9);
  EXPECT_DOUBLE_EQ(link(c, "pod0/agg1", "core39").bandwidth.value(), 25e9);  // agg 1: cores 20..39
  EXPECT_FALSE(c.find_link(node(c, "pod0/agg1"), node(c, "core40")));
  EXPECT_EQ(link(c, "pod0/agg1", "core39").tier, 3);
}

TEST(ExampleClusters, A100SuperpodDefault) {
  const Cluster c = load_cluster(kClusters + "a100-superpod.json");
  EXPECT_EQ(c.gpus().size(), 3072u);
  // 384 servers = 20 blocks of 20 (the last has 4) x 8 rails = 160 leaves in 8 pods of 20.
  auto k = kinds(c);
  EXPECT_EQ(k[NodeKind::kLeafSwitch], 160);
  EXPECT_EQ(k[NodeKind::kSpineSwitch], 8 * 20);
  EXPECT_EQ(k[NodeKind::kCoreSwitch], 400);
  // Cables: 384 x 28 + 3,072 + 160 x 20 + 8 x 20 x 20 = 20,224.
  EXPECT_EQ(c.link_count(), 2u * 20224);
  // Block 1 (nodes 20..39), rail 2 is leaf 1 * 8 + 2 = 10: pod 0, leaf 10.
  EXPECT_NO_THROW(link(c, "node25/nic2", "pod0/leaf10"));
  // Block 2, rail 4 is leaf 20: pod 1, leaf 0.
  EXPECT_NO_THROW(link(c, "node40/nic4", "pod1/leaf0"));
}

TEST(ExampleClusters, Ring8) {
  const Cluster c = load_cluster(kClusters + "ring-8.json");
  // 8 x (GPU + NIC); 8 GPU-NIC cables + 8 ring cables.
  EXPECT_EQ(c.node_count(), 16u);
  EXPECT_EQ(c.link_count(), 2u * 16);
  EXPECT_DOUBLE_EQ(link(c, "node7/nic0", "node0/nic0").bandwidth.value(), 50e9);
  EXPECT_EQ(link(c, "node7/nic0", "node0/nic0").tier, 1);
}

TEST(ExampleClusters, Torus4x4) {
  const Cluster c = load_cluster(kClusters + "torus-4x4.json");
  // 16 GPUs; each has a +x and a +y cable: 32 cables, degree 4 everywhere.
  EXPECT_EQ(c.node_count(), 16u);
  EXPECT_EQ(c.link_count(), 2u * 32);
  for (NodeId g : c.gpus()) EXPECT_EQ(c.out_links(g).size(), 4u);
  // GPU 3 = (3, 0) wraps to (0, 0) = GPU 0; GPU 13 = (1, 3) wraps to (1, 0) = GPU 1.
  EXPECT_NO_THROW(link(c, "node3/gpu0", "node0/gpu0"));
  EXPECT_NO_THROW(link(c, "node13/gpu0", "node1/gpu0"));
  EXPECT_EQ(link(c, "node13/gpu0", "node1/gpu0").latency, microseconds(1));
  EXPECT_DOUBLE_EQ(link(c, "node13/gpu0", "node1/gpu0").bandwidth.value(), 100e9);
}

TEST(ClusterLoader, LoadTimeOfLargeExamples) {
  // Measured, printed; the 4,096-GPU file is asserted in H100Rail512.
  std::printf("a100-superpod.json: %.1f ms\n", 1e3 * seconds_to_load(kClusters + "a100-superpod.json"));
}

TEST(ClusterLoader, HeterogeneousClusterWithExplicitDevicesAndOverrides) {
  const Cluster c = load_cluster(kData + "heterogeneous.json");
  // Group 0: 2 DGX H100 (node0, node1); group 1: 2 PCIe servers of 4 A100 named pc2, pc3.
  ASSERT_EQ(c.gpus().size(), 2u * 8 + 2 * 4);
  EXPECT_EQ(c.node(c.gpus()[15]).name, "node1/gpu7");
  EXPECT_EQ(c.node(c.gpus()[16]).name, "pc2/gpu0");
  EXPECT_EQ(c.node(c.gpus()[16]).server, 2);
  EXPECT_EQ(c.node(c.gpus()[16]).origin, "/servers/1");
  EXPECT_EQ(c.gpu_spec(c.gpus()[16]).name, "A100-SXM-80GB");
  EXPECT_FALSE(c.find_node("pc2/nvswitch"));
  // pcie template, 4 GPUs, 2 PCIe switches, 1 NIC: GPUs 0,1 on pcie0; the NIC with GPU 0.
  EXPECT_NO_THROW(link(c, "pc2/gpu1", "pc2/pcie0"));
  EXPECT_NO_THROW(link(c, "pc2/nic0", "pc2/pcie0"));
  // Explicit storage on a one-directional 100 Gb/s link to leaf0, with the network default latency.
  const LinkInfo& st = link(c, "storage0", "leaf0");
  EXPECT_DOUBLE_EQ(st.bandwidth.value(), 12.5e9);
  EXPECT_EQ(st.latency, nanoseconds(300));
  EXPECT_FALSE(st.reverse.valid());
  EXPECT_FALSE(c.find_link(node(c, "leaf0"), node(c, "storage0")));
  // Overrides: both directions by default, one when asked.
  EXPECT_DOUBLE_EQ(link(c, "node0/nic0", "leaf0").bandwidth.value(), 12.5e9);
  EXPECT_DOUBLE_EQ(link(c, "leaf0", "node0/nic0").bandwidth.value(), 12.5e9);
  EXPECT_EQ(link(c, "node1/nic0", "leaf0").latency, microseconds(5));
  EXPECT_EQ(link(c, "leaf0", "node1/nic0").latency, nanoseconds(300));
  // (Its link-class protocol parameters are the collective model's: tests/collectives/machine_test.cpp.)
}

TEST(ClusterLoader, StagesCanBeUsedFromCpp) {
  const ConfigDocument doc = ConfigDocument::load(kClusters + "leafspine-oversub.json");
  ClusterSpec spec = parse_cluster_spec(doc);
  ASSERT_EQ(spec.servers.size(), 1u);
  EXPECT_EQ(spec.servers[0].count, 256);
  EXPECT_EQ(spec.fabric.type, FabricType::kLeafSpine);
  EXPECT_DOUBLE_EQ(spec.fabric.oversubscription, 2);
  spec.servers[0].count = 16;  // two leaves
  const Cluster c = build_cluster(spec);
  EXPECT_EQ(c.gpus().size(), 16u);
  EXPECT_TRUE(c.find_node("leaf1"));
  EXPECT_FALSE(c.find_node("leaf2"));
  spec.fabric.oversubscription = 0.5;
  try {
    build_cluster(spec);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/fabric/oversubscription");
    EXPECT_NE(std::string(e.what()).find("leafspine-oversub.json"), std::string::npos);
  }
}

TEST(ClusterLoader, OverrideErrorsNameTheFile) {
  try {
    load_cluster(kClusters + "dgx-h100.json", {"/servers/9/count=2"});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("dgx-h100.json"), std::string::npos) << e.what();
    EXPECT_EQ(e.json_path(), "/servers/9/count");
  }
  // An override that makes the file wrong is reported at the overridden path.
  try {
    load_cluster(kClusters + "dgx-h100.json", {"/servers/0/count=0"});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/servers/0/count");
  }
}

TEST(ClusterLoader, NameDefaultsToTheFileStem) {
  const Cluster c = build_cluster(ConfigDocument::parse(
      R"({"servers": [{"template": "nvswitch", "gpu": "B200"}]})", "dir/my-box.json"));
  EXPECT_EQ(c.name(), "my-box");
  // Defaults: 8 GPUs, the GPU's NVLink generation, no NICs, 4 PCIe switches.
  EXPECT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.node_count(), 8u + 4 + 1 + 1);
  EXPECT_DOUBLE_EQ(c.node(*c.find_node("node0/nvswitch")).reduction_bandwidth.value(), 8 * 552e9);
}

}  // namespace
}  // namespace cs::topo
