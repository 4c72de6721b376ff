// The server templates and fabric generators called from C++ with typed specs.
#include "topology/fabrics.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "topology/server_templates.h"

namespace cs::topo {
namespace {

hw::GpuSpec test_gpu() {
  hw::GpuSpec g;
  g.name = std::string("G");  // not = "G": GCC 12 warns falsely (-Wrestrict) on that
  g.peak["bf16"] = teraflops_per_second(1);
  g.pcie_bandwidth = gigabytes_per_second(32);
  return g;
}

ServerGroupSpec single_servers(int count, bool with_nic) {
  ServerGroupSpec s;
  s.kind = ServerTemplate::kSingle;
  s.count = count;
  s.gpu = test_gpu();
  s.gpus = 1;
  s.pcie_bandwidth = s.gpu.pcie_bandwidth;
  if (with_nic) {
    s.nic = hw::NicSpec{"N", gigabits_per_second(400), nanoseconds(500)};
    s.nics = 1;
  }
  s.origin = "/servers/0";
  return s;
}

struct Built {
  Cluster cluster;
  std::vector<Endpoint> endpoints;
};

Built build(const ServerGroupSpec& group, const FabricSpec& fabric) {
  ClusterBuilder builder("t");
  validate_server_group(group, "t.json");
  std::vector<ServerDevices> servers;
  for (int k = 0; k < group.count; ++k) servers.push_back(build_server(builder, group, k));
  std::vector<Endpoint> endpoints = fabric_endpoints(servers);
  build_fabric(builder, fabric, endpoints, "t.json");
  return Built{std::move(builder).build(), std::move(endpoints)};
}

bool cabled(const Cluster& c, const std::string& a, const std::string& b) {
  return c.find_link(*c.find_node(a), *c.find_node(b)).has_value() &&
         c.find_link(*c.find_node(b), *c.find_node(a)).has_value();
}

TEST(ServerTemplates, CountsMatchTheBuiltServer) {
  ServerGroupSpec s;
  s.gpu = test_gpu();
  s.nvlink = hw::NvlinkSpec{"NV", gigabytes_per_second(100), 4, Bandwidth{0}};
  s.gpus = 6;
  s.nic = hw::NicSpec{"N", gigabits_per_second(100), nanoseconds(1)};
  s.nics = 3;
  s.pcie_switches = 3;
  s.pcie_bandwidth = s.gpu.pcie_bandwidth;
  s.origin = "/servers/0";
  for (ServerTemplate t : {ServerTemplate::kNvswitch, ServerTemplate::kPcie}) {
    s.kind = t;
    if (t == ServerTemplate::kPcie) s.nvlink.reset();
    ClusterBuilder builder;
    validate_server_group(s, "t.json");
    const ServerDevices d = build_server(builder, s, 7);
    const Cluster c = std::move(builder).build();
    EXPECT_EQ(c.node_count(), server_node_count(s));
    EXPECT_EQ(c.link_count(), 2 * server_cable_count(s));
    EXPECT_EQ(d.gpus.size(), 6u);
    EXPECT_EQ(d.nics.size(), 3u);
    // 6 GPUs on 3 switches: GPU i on i * 3 / 6 = i / 2; NIC m with GPU m * 6 / 3 = 2m, on switch m.
    EXPECT_TRUE(cabled(c, "node7/gpu5", "node7/pcie2"));
    EXPECT_TRUE(cabled(c, "node7/nic1", "node7/pcie1"));
    EXPECT_TRUE(cabled(c, "node7/pcie0", "node7/cpu"));
  }
}

TEST(ServerTemplates, ValidationNamesTheKey) {
  ServerGroupSpec s = single_servers(1, false);
  s.gpus = 2;
  try {
    validate_server_group(s, "t.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/servers/0/gpus");
  }
  s = single_servers(1, false);
  s.kind = ServerTemplate::kNvswitch;
  s.pcie_switches = 1;
  try {
    validate_server_group(s, "t.json");  // no NVLink generation
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/servers/0/nvlink");
  }
}

TEST(Fabrics, TorusWithADimensionOfTwo) {
  FabricSpec f;
  f.type = FabricType::kTorus;
  f.dims = {2, 3};
  f.link_bandwidth = gigabytes_per_second(10);
  const Built b = build(single_servers(6, false), f);
  // x = 2: one cable per pair, 3 pairs; y = 3: a ring of 3 in each of 2 columns, 6 cables.
  EXPECT_EQ(b.cluster.link_count(), 2u * 9);
  EXPECT_TRUE(cabled(b.cluster, "node0/gpu0", "node1/gpu0"));  // (0,0)-(1,0)
  EXPECT_TRUE(cabled(b.cluster, "node4/gpu0", "node0/gpu0"));  // (0,2) wraps to (0,0)
}

TEST(Fabrics, Torus3d) {
  FabricSpec f;
  f.type = FabricType::kTorus;
  f.dims = {3, 3, 3};
  const Built b = build(single_servers(27, true), f);
  // 27 GPU-NIC cables + 27 x 3 torus cables; every NIC has 6 neighbours plus its GPU.
  EXPECT_EQ(b.cluster.link_count(), 2u * (27 + 81));
  for (const Endpoint& e : b.endpoints) EXPECT_EQ(b.cluster.out_links(e.node).size(), 7u);
  // NIC 26 = (2,2,2) wraps in z to (2,2,0) = 8.
  EXPECT_TRUE(cabled(b.cluster, "node26/nic0", "node8/nic0"));
}

TEST(Fabrics, RingOfTwoHasOneCable) {
  FabricSpec f;
  f.type = FabricType::kRing;
  const Built b = build(single_servers(2, true), f);
  EXPECT_EQ(b.cluster.link_count(), 2u * (2 + 1));
}

TEST(Fabrics, TwoTierFatTree) {
  FabricSpec f;
  f.type = FabricType::kFatTree;
  f.tiers = 2;
  f.radix = 8;
  f.oversubscription = 4;
  // 10 endpoints, 4 per leaf -> 3 leaves; 4 spines; each leaf to every spine.
  const Built b = build(single_servers(10, true), f);
  EXPECT_TRUE(b.cluster.find_node("leaf2"));
  EXPECT_FALSE(b.cluster.find_node("leaf3"));
  EXPECT_TRUE(b.cluster.find_node("spine3"));
  EXPECT_EQ(b.cluster.link_count(), 2u * (10 + 10 + 3 * 4));
  // Uplink per cable: 4 x 50 GB/s / 4 (oversubscription) / 4 spines = 12.5 GB/s, even for the
  // half-full last leaf.
  const auto l = b.cluster.find_link(*b.cluster.find_node("leaf2"), *b.cluster.find_node("spine0"));
  EXPECT_DOUBLE_EQ(b.cluster.link(*l).bandwidth.value(), 12.5e9);
  f.radix = 4;  // at most 4 leaves of 2: 8 endpoints
  EXPECT_THROW(build(single_servers(10, true), f), ConfigError);
}

TEST(Fabrics, RailAlignedLeafSpine) {
  ServerGroupSpec g = single_servers(6, true);
  g.kind = ServerTemplate::kPcie;
  g.gpus = 4;
  g.nics = 4;
  g.pcie_switches = 2;
  FabricSpec f;
  f.type = FabricType::kLeafSpine;
  f.endpoints_per_leaf = 4;
  f.spines = 2;
  f.rail_aligned = true;
  const Built b = build(g, f);
  // Blocks of 4 servers: {0..3}, {4, 5}; 4 rails -> 8 leaves in (block, rail) order.
  EXPECT_TRUE(cabled(b.cluster, "node3/nic2", "leaf2"));
  EXPECT_TRUE(cabled(b.cluster, "node5/nic1", "leaf5"));
  EXPECT_FALSE(b.cluster.find_node("leaf8"));
}

TEST(Fabrics, GpuEndpointsNeedABandwidth) {
  FabricSpec f;
  f.type = FabricType::kStar;
  try {
    build(single_servers(3, false), f);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/fabric/link/bandwidth");
  }
}

}  // namespace
}  // namespace cs::topo
