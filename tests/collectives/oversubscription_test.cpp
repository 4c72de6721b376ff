// An oversubscribed leaf-spine slows traffic that crosses leaves and nothing else.
#include <gtest/gtest.h>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_layout.h"

namespace cs::coll {
namespace {

Duration all_to_all(const Machine& m, std::size_t first, std::size_t count, Bytes size) {
  CollectiveSimulator sim(m);
  const topo::Cluster& c = m.cluster;
  CollectiveSpec s;
  s.op = CollectiveOp::kAllToAll;
  s.size = size;
  s.ranks.assign(c.gpus().begin() + static_cast<std::ptrdiff_t>(first),
                 c.gpus().begin() + static_cast<std::ptrdiff_t>(first + count));
  return sim.run(s).time;
}

TEST(Oversubscription, AllToAllAcrossLeavesSlowsDownInsideOneLeafDoesNot) {
  // leafspine-oversub: 32 leaves x 8 single-GPU servers (one 400G NIC each), 4 spines, 2:1 at
  // the leaves. All-to-all over the 64 GPUs of the first 8 leaves: each NIC sends 63 S/64; each
  // leaf's uplinks carry 8 x 56 S/64, which 2:1 halves the capacity for. Fluid bound ratio
  // (8 x 56 / (8 x 400G / 2)) / (63 / 400G) = 1.78; ECMP hashing of 448 flows per leaf over 4
  // spines adds collisions on the halved uplinks, which is what pushes the ratio above 1.9
  // (it is also what real oversubscribed fabrics suffer).
  const std::string file = std::string(CS_SOURCE_DIR) + "/configs/clusters/leafspine-oversub.json";
  const Machine oversub = load_machine(file, {"/fabric/routing=ecmp"});  // its NDR NICs' default is adaptive
  const Machine full = load_machine(file, {"/fabric/oversubscription=1", "/fabric/routing=ecmp"});
  const Bytes S = mebibytes(64);
  const Duration t_over = all_to_all(oversub, 0, 64, S);
  const Duration t_full = all_to_all(full, 0, 64, S);
  std::printf("all_to_all 64 GPUs on 8 leaves: 2:1 %.3f ms, 1:1 %.3f ms, ratio %.3f\n", to_seconds(t_over) * 1e3,
              to_seconds(t_full) * 1e3, to_seconds(t_over) / to_seconds(t_full));
  EXPECT_GE(to_seconds(t_over) / to_seconds(t_full), 1.9);
  // Inside one leaf (its 8 GPUs) nothing crosses an uplink: identical times.
  EXPECT_EQ(all_to_all(oversub, 0, 8, S), all_to_all(full, 0, 8, S));
}

}  // namespace
}  // namespace cs::coll

namespace cs::coll {
namespace {

TEST(Oversubscription, AdaptiveRoutingReachesTheFluidBoundEcmpShowsItsCollisions) {
  // The same all-to-all over the 64 GPUs of the first 8 leaves, with the fabric's routing as a
  // what-if. Under adaptive routing (topology/adaptive_spread.h) every flow spreads evenly over
  // the 4 spines: at 1:1 the NICs bind, 63 S/64 each, at 2:1 every uplink (one NIC's rate B)
  // carries 448 S/64 / 4 = 112 S/64, the fluid bound, and the latency is the same in both, so
  //     t(2:1) - t(1:1) = (112 - 63) S / (64 B)      and the bandwidth terms' ratio is 112/63.
  // Static ECMP hashes each connection onto one spine and loses more: ratio above 1.9.
  const std::string file = std::string(CS_SOURCE_DIR) + "/configs/clusters/leafspine-oversub.json";
  const Bytes S = mebibytes(64);
  const auto times = [&](const char* routing) {
    const std::string r = std::string("/fabric/routing=") + routing;
    const Machine over = load_machine(file, {r});
    const Machine full = load_machine(file, {"/fabric/oversubscription=1", r});
    return std::pair{to_seconds(all_to_all(over, 0, 64, S)), to_seconds(all_to_all(full, 0, 64, S))};
  };
  const Machine m = load_machine(file);
  const NetworkLayout layout(m);
  const topo::NodeId nic = *m.cluster.find_node("node0/nic0");
  double B = 0;  // the NIC's link to its leaf
  for (topo::LinkId l : m.cluster.out_links(nic)) {
    if (m.cluster.link(l).tier == 1) B = layout.usable_bandwidth(l).value();
  }
  const double s = static_cast<double>(S.value());
  const auto [over, full] = times("adaptive");
  EXPECT_NEAR(over - full, (112.0 - 63.0) * s / (64 * B), (over - full) * 1e-6);
  EXPECT_GT(full, 63 * s / (64 * B));  // plus the latency
  const auto [e_over, e_full] = times("ecmp");
  std::printf("2:1 / 1:1 all_to_all: adaptive %.3f, ecmp %.3f (fluid bound of the bandwidth terms 1.778)\n", over / full,
              e_over / e_full);
  EXPECT_GE(e_over / e_full, 1.9);
}

}  // namespace
}  // namespace cs::coll
