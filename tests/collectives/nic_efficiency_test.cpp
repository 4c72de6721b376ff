// The achievable fraction of each link (coll::link_efficiencies; docs/network-model.md, "Per-NIC
// achievable bandwidth"): network links at their NIC's packet efficiency, switch-to-switch links
// at the fabric's, PCIe and NVLink at their class's; the class value where the cluster has no
// NIC packet format or a cluster file replaced it. And which of PCIe and the NIC binds a GPU's
// traffic to the wire, in closed form.
#include <gtest/gtest.h>

#include <string>

#include "core/config.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_layout.h"

namespace cs::coll {
namespace {

const std::string kClusters = std::string(CS_SOURCE_DIR) + "/configs/clusters/";

// InfiniBand: 4096 bytes of payload per packet, 26 of headers (LRH 8, BTH 12, ICRC 4, VCRC 2).
constexpr double kInfiniBand = 4096.0 / 4122;
// RoCEv2: 4096 of payload, 82 on the wire besides (Ethernet framing, IPv4, UDP, BTH, ICRC).
constexpr double kRoce = 4096.0 / 4178;
// PCIe Gen3+: 128b/130b x one SKP block in 371 x 256-byte writes in 296 bytes with two DLLPs.
constexpr double kPcie = 128.0 / 130 * 370 / 371 * 256 / 296;

Machine from_text(const std::string& text) { return build_machine(ConfigDocument::parse(text, "test.json")); }

TEST(NicEfficiency, EveryNetworkLinkOfAnInfiniBandFabricRunsAtTheInfiniBandPacketEfficiency) {
  // Two DGX H100 on the rail-optimized NDR fabric: NIC-leaf cables (tier 1) end at a NIC; the
  // leaf-spine cables (tier 2) carry the same packets.
  const Machine m = load_machine(kClusters + "h100-rail-512.json", {"/servers/0/count=2"});
  const std::vector<double> e = link_efficiencies(m);
  int tier1 = 0, tier2 = 0;
  for (std::uint32_t i = 0; i < m.cluster.link_count(); ++i) {
    const topo::LinkInfo& l = m.cluster.link(topo::LinkId{i});
    switch (l.link_class) {
      case hw::LinkClass::kNetwork:
        EXPECT_DOUBLE_EQ(e[i], kInfiniBand) << i;
        (l.tier == 1 ? tier1 : tier2) += 1;
        break;
      case hw::LinkClass::kPcie: EXPECT_NEAR(e[i], kPcie, 0.0005) << i; break;
      case hw::LinkClass::kNvlink: EXPECT_DOUBLE_EQ(e[i], 0.80) << i; break;
    }
  }
  EXPECT_EQ(tier1, 16 * 2);  // 16 NICs, one cable each to its leaf, two directions
  EXPECT_GT(tier2, 0);
  EXPECT_FALSE(uses_network_class_efficiency(m));
  const NetworkLayout layout(m);
  const topo::LinkId up = m.cluster.out_links(*m.cluster.find_node("node0/nic0"))[1];
  EXPECT_EQ(m.cluster.link(up).link_class, hw::LinkClass::kNetwork);
  EXPECT_NEAR(layout.usable_bandwidth(up).value(), 50e9 * kInfiniBand, 1);
}

TEST(NicEfficiency, AClusterFileOrAMissingPacketFormatFallsBackToTheClassEfficiency) {
  // Replaced in the cluster file: every network link at the file's value.
  const Machine set = from_text(R"({"servers": [{"count": 4, "template": "single", "gpu": "H100-SXM", "nic": "NDR-400G"}],
      "fabric": {"type": "star"}, "link_classes": {"network": {"efficiency": 0.9}}})");
  EXPECT_TRUE(uses_network_class_efficiency(set));
  // No NIC at all: GPUs are the fabric's endpoints; the class's assumed 0.92.
  const Machine bare = from_text(R"({"servers": [{"count": 4, "template": "single", "gpu": "H100-SXM"}],
      "fabric": {"type": "star", "link": {"bandwidth": "400Gbps"}}})");
  EXPECT_TRUE(uses_network_class_efficiency(bare));
  const std::vector<double> e_set = link_efficiencies(set), e_bare = link_efficiencies(bare);
  for (std::uint32_t i = 0; i < set.cluster.link_count(); ++i) {
    if (set.cluster.link(topo::LinkId{i}).link_class == hw::LinkClass::kNetwork) {
      EXPECT_DOUBLE_EQ(e_set[i], 0.9) << i;
    }
  }
  for (std::uint32_t i = 0; i < bare.cluster.link_count(); ++i) {
    if (bare.cluster.link(topo::LinkId{i}).link_class == hw::LinkClass::kNetwork) {
      EXPECT_DOUBLE_EQ(e_bare[i], 0.92) << i;
    }
  }
}

TEST(NicEfficiency, AMeasuredNetworkEfficiencyReplacesTheNicsValues) {
  // A calibration profile's network fit (drivers/calibrated_protocol.h) marks the class value
  // "measured": what was measured on the machine wins over the packet derivation.
  Machine m = load_machine(kClusters + "h100-rail-512.json", {"/servers/0/count=2"});
  m.protocol.of(hw::LinkClass::kNetwork).efficiency = 0.7;
  m.protocol.replaced("/link_classes/network/efficiency", "0.7", "measured", "measured: a test", "test");
  EXPECT_TRUE(uses_network_class_efficiency(m));
  const std::vector<double> e = link_efficiencies(m);
  int network = 0;
  for (std::uint32_t i = 0; i < m.cluster.link_count(); ++i) {
    if (m.cluster.link(topo::LinkId{i}).link_class != hw::LinkClass::kNetwork) continue;
    EXPECT_DOUBLE_EQ(e[i], 0.7) << i;
    ++network;
  }
  EXPECT_GT(network, 0);
}

// The busbw (= algbw) of a 1 GiB send from server 0's GPU to server 1's, two single-GPU servers
// on one switch: the flow crosses GPU-NIC (PCIe, the GPU's host link), NIC-switch and
// switch-NIC (the NIC's rate) and NIC-GPU.
double send_busbw(const std::string& gpu, const std::string& nic) {
  const Machine m = from_text(R"({"servers": [{"count": 2, "template": "single", "gpu": ")" + gpu + R"(", "nic": ")" + nic +
                              R"("}], "fabric": {"type": "star"}})");
  CollectiveSimulator sim(m);
  CollectiveSpec s;
  s.op = CollectiveOp::kSendRecv;
  s.size = gibibytes(1);
  s.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().end());
  s.algorithm = CollectiveAlgorithm::kDirect;
  const CollectiveResult r = sim.run(s);
  return static_cast<double>(s.size.value()) / to_seconds(r.time);
}

TEST(NicEfficiency, PcieOrTheNicBindsWhicheverIsSlower) {
  // A100 (PCIe Gen4 x16, 32 GB/s) with HDR: min(32 x 0.849 = 27.2, 25 x 0.9937 = 24.8): the NIC.
  // H100 (Gen5 x16, 64 GB/s) with NDR: min(54.3, 49.7): the NIC. With XDR: min(54.3, 99.4): PCIe.
  // With 400GbE RoCE: min(54.3, 50 x 0.9804 = 49.0): the NIC. Latencies (a few microseconds on
  // 1 GiB) take under 0.1%.
  EXPECT_NEAR(send_busbw("A100-SXM-80GB", "HDR-200G"), 25e9 * kInfiniBand, 25e9 * 0.002);
  EXPECT_NEAR(send_busbw("H100-SXM", "NDR-400G"), 50e9 * kInfiniBand, 50e9 * 0.002);
  EXPECT_NEAR(send_busbw("H100-SXM", "XDR-800G"), 64e9 * 0.849, 64e9 * 0.002);
  EXPECT_NEAR(send_busbw("H100-SXM", "400GbE"), 50e9 * kRoce, 50e9 * 0.002);
}

}  // namespace
}  // namespace cs::coll
