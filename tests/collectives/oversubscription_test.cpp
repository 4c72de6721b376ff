// An oversubscribed leaf-spine slows traffic that crosses leaves and nothing else.
#include <gtest/gtest.h>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"

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
  const Machine oversub = load_machine(file);
  const Machine full = load_machine(file, {"/fabric/oversubscription=1"});
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
