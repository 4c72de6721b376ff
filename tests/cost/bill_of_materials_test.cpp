// The bill of materials read off the cluster graph against the closed forms of Al-Fares et al.
// (SIGCOMM 2008) for k = 64-port switches: two tiers 3N/k switches and N + N cables, three tiers
// 5N/k switches and 2N switch-to-switch cables, r:1 oversubscription dividing the spines and the
// leaf-spine cables by r. These equal the counts of the "H100 Freakonomics" sheet (48 at 1,024
// GPUs, 768 at 16,384, 5,120 at 65,536).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cost/bill_of_materials.h"
#include "topology/cluster_loader.h"

namespace cs::cost {
namespace {

std::string cluster_file(const std::string& name) { return std::string(CS_SOURCE_DIR) + "/configs/clusters/" + name; }

BillOfMaterials bom_of(const std::string& name, const std::vector<std::string>& overrides) {
  const topo::Cluster c = topo::load_cluster(cluster_file(name), overrides);
  return bill_of_materials(c, PriceCatalog::builtin(), hw::Catalog::builtin(), name);
}

const SwitchTier* tier(const BillOfMaterials& b, const std::string& name) {
  for (const SwitchTier& t : b.switch_tiers) {
    if (t.tier == name) return &t;
  }
  return nullptr;
}
std::int64_t cables(const BillOfMaterials& b, const std::string& name) {
  for (const CableTier& t : b.cable_tiers) {
    if (t.tier == name) return t.cables;
  }
  return -1;
}

TEST(BillOfMaterials, RailOptimized1024GpusHas3NOverKSwitches) {
  const BillOfMaterials b = bom_of("h100-rail-512.json", {"/servers/0/count=128"});
  const int n = 1024, k = 64;
  EXPECT_EQ(b.gpus, n);
  EXPECT_EQ(b.servers, 128);
  EXPECT_EQ(b.nics, n);
  ASSERT_NE(b.switch_price, nullptr);
  EXPECT_EQ(b.switch_price->name, "Quantum-2-QM9700");
  ASSERT_NE(tier(b, "leaf"), nullptr);
  ASSERT_NE(tier(b, "spine"), nullptr);
  EXPECT_EQ(tier(b, "leaf")->radix, k);
  EXPECT_EQ(tier(b, "leaf")->switches, n / (k / 2));  // 32
  EXPECT_EQ(tier(b, "spine")->switches, n / k);       // 16 (64 logical spines of 16 ports each)
  EXPECT_EQ(tier(b, "spine")->graph_switches, 64);
  EXPECT_EQ(b.switches(), 3 * n / k);                 // 48
  EXPECT_EQ(cables(b, "endpoint_leaf"), n);
  EXPECT_EQ(cables(b, "leaf_spine"), n);
  EXPECT_EQ(b.transceivers(), 4 * n);  // two optical links per GPU, a transceiver at each end
}

TEST(BillOfMaterials, RailOptimized16384GpusHas768Switches) {
  const BillOfMaterials b = bom_of("h100-rail-512.json", {"/servers/0/count=2048"});
  const int n = 16384, k = 64;
  EXPECT_EQ(b.gpus, n);
  EXPECT_EQ(tier(b, "leaf")->switches, 512);
  EXPECT_EQ(tier(b, "spine")->switches, 256);
  EXPECT_EQ(b.switches(), 3 * n / k);  // 768
  EXPECT_EQ(cables(b, "leaf_spine"), n);
}

TEST(BillOfMaterials, LeafSpineNonBlocking1024GpusHas48Switches) {
  const BillOfMaterials b = bom_of("h100-leafspine-2to1.json", {"/fabric/oversubscription=1"});
  EXPECT_EQ(tier(b, "leaf")->switches, 32);
  EXPECT_EQ(tier(b, "spine")->switches, 16);
  EXPECT_EQ(b.switches(), 48);
  EXPECT_EQ(cables(b, "leaf_spine"), 1024);
}

TEST(BillOfMaterials, TwoToOneOversubscriptionHalvesSpinesAndUplinks) {
  const BillOfMaterials full = bom_of("h100-leafspine-2to1.json", {"/fabric/oversubscription=1"});
  const BillOfMaterials half = bom_of("h100-leafspine-2to1.json", {});
  EXPECT_EQ(tier(half, "leaf")->switches, 32);  // a leaf keeps its 32 downlinks: 48 of 64 ports used
  EXPECT_EQ(tier(half, "leaf")->ports, 32 * 48);
  EXPECT_EQ(tier(half, "spine")->switches, tier(full, "spine")->switches / 2);  // 8
  EXPECT_EQ(cables(half, "leaf_spine"), cables(full, "leaf_spine") / 2);       // 512
  EXPECT_EQ(cables(half, "endpoint_leaf"), cables(full, "endpoint_leaf"));     // 1024
}

TEST(BillOfMaterials, ThreeTierFatTree65536GpusHas5NOverKSwitches) {
  const BillOfMaterials b = bom_of("h100-fat-tree-3tier.json", {"/servers/0/count=8192", "/fabric/radix=64"});
  const std::int64_t n = 65536, k = 64;
  EXPECT_EQ(b.gpus, n);
  EXPECT_EQ(tier(b, "leaf")->switches, n / (k / 2));       // 2,048
  EXPECT_EQ(tier(b, "spine")->switches, n / (k / 2));      // 2,048 aggregation
  EXPECT_EQ(tier(b, "core")->switches, (k / 2) * (k / 2)); // 1,024 = k^2/4
  EXPECT_EQ(b.switches(), 5 * n / k);                      // 5,120
  EXPECT_EQ(cables(b, "leaf_spine") + cables(b, "spine_core"), 2 * n);
}

TEST(BillOfMaterials, ServerWithoutFabricHasNoSwitches) {
  const BillOfMaterials b = bom_of("dgx-h100.json", {});
  EXPECT_EQ(b.gpus, 8);
  EXPECT_EQ(b.servers, 1);
  EXPECT_EQ(b.switches(), 0);
  EXPECT_EQ(b.cables(), 0);
}

TEST(BillOfMaterials, EthernetNicsTakeTheEthernetSwitch) {
  const BillOfMaterials b = bom_of("h100-roce-400g.json", {});
  ASSERT_NE(b.switch_price, nullptr);
  EXPECT_EQ(b.family, NetworkFamily::kEthernet);
  EXPECT_EQ(b.switch_price->name, "Spectrum-4-SN5600");
  EXPECT_EQ(tier(b, "leaf")->radix, 128);
  // 64 leaves of 16 + 16 ports: one SN5600 each; 16 logical spines of 64 ports: 1,024 / 128 = 8.
  EXPECT_EQ(tier(b, "leaf")->switches, 64);
  EXPECT_EQ(tier(b, "spine")->switches, 8);
}

}  // namespace
}  // namespace cs::cost
