// The tuner's lower bound (CollectiveSimulator::time_floor): never above the simulated time of
// the candidate it bounds, on every bundled fabric kind, operation, size, algorithm and
// protocol; and run() with its candidates skipped by the bound picks what running every
// candidate picks (the fastest, NCCL's earlier one on a tie), to the picosecond.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/schedule.h"

namespace cs::coll {
namespace {

Machine machine(const std::string& cluster, const std::vector<std::string>& sets = {}) {
  return load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/" + cluster + ".json", sets);
}

CollectiveSpec spec_of(const Machine& m, CollectiveOp op, Bytes size, CollectiveAlgorithm algorithm) {
  CollectiveSpec s;
  s.op = op;
  s.size = size;
  s.algorithm = algorithm;
  s.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().end());
  return s;
}

struct Case {
  std::string cluster;
  std::vector<std::string> sets;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases{
      {"dgx-h100", {}},
      {"ring-8", {}},
      {"torus-4x4", {}},
      {"a100-4node-ib", {}},
      {"a100-4node-10gbe", {}},
      {"h100-rail-512", {"/servers/0/count=8"}},
      {"h100-leafspine-2to1", {"/servers/0/count=8"}},
      {"h100-leafspine-2to1", {"/servers/0/count=8", "/fabric/routing=adaptive"}},
      {"gb200-nvl72", {}},
  };
  return kCases;
}

constexpr CollectiveAlgorithm kAlgorithms[] = {
    CollectiveAlgorithm::kRing,         CollectiveAlgorithm::kTree, CollectiveAlgorithm::kHalvingDoubling,
    CollectiveAlgorithm::kDirect,       CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kNvls,
    CollectiveAlgorithm::kNvlsTree,     CollectiveAlgorithm::kCollnet};
constexpr CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                                 CollectiveOp::kBroadcast, CollectiveOp::kAllToAll};
const Bytes kSizes[] = {Bytes{4096}, Bytes{1 << 20}, Bytes{256 << 20}};

// Calls visit(cluster, simulator, spec, algorithm) for every case, operation, size and
// algorithm (the spec's algorithm the one given).
template <class Visit>
void for_each_spec(const Visit& visit) {
  for (const Case& c : cases()) {
    const Machine m = machine(c.cluster, c.sets);
    CollectiveSimulator sim(m);
    for (CollectiveOp op : kOps) {
      for (Bytes size : kSizes) {
        for (CollectiveAlgorithm a : kAlgorithms) visit(c.cluster, sim, spec_of(m, op, size, a), a);
      }
    }
  }
}

std::string where(const std::string& cluster, const CollectiveSpec& s, CollectiveAlgorithm a) {
  return cluster + " " + to_string(s.op) + " " + std::to_string(s.size.value()) + " B " + to_string(a);
}

TEST(TimeFloor, NeverAboveTheSimulatedTime) {
  int checked = 0, tight = 0;
  for_each_spec([&](const std::string& cluster, CollectiveSimulator& sim, const CollectiveSpec& s, CollectiveAlgorithm a) {
    for (Protocol p : {Protocol::kSimple, Protocol::kLowLatency}) {
      std::string why;
      const auto r = sim.run_fixed(s, a, p, &why);
      const auto floor = sim.time_floor(s, a, p);
      ASSERT_EQ(r.has_value(), floor.has_value()) << where(cluster, s, a) << " " << why;
      if (!r) continue;
      ++checked;
      EXPECT_GT(floor->count(), 0) << where(cluster, s, a);
      EXPECT_LE(floor->count(), r->time.count()) << where(cluster, s, a) << " " << to_string(p);
      if (floor->count() * 2 > r->time.count()) ++tight;
    }
  });
  EXPECT_GT(checked, 300);
  // A bound of nothing would pass the check above: most are within 2x of the simulated time.
  EXPECT_GT(tight * 2, checked) << tight << " of " << checked;
}

// The bound on one protocol from a run of the other (CollectiveSimulator::protocol_floor):
// never above the simulated time, both ways; and close to it where the bytes dominate (a
// bound of nothing would pass the first check; one 1% larger fails it).
TEST(TimeFloor, TheOtherProtocolsBoundNeverAboveItsSimulatedTime) {
  int checked = 0, close = 0, large = 0;
  for_each_spec([&](const std::string& cluster, CollectiveSimulator& sim, const CollectiveSpec& s, CollectiveAlgorithm a) {
    if (simple_protocol_only(a)) return;
    const auto simple = sim.run_fixed(s, a, Protocol::kSimple, nullptr);
    const auto ll = sim.run_fixed(s, a, Protocol::kLowLatency, nullptr);
    ASSERT_EQ(simple.has_value(), ll.has_value());
    if (!simple) return;
    const auto ll_floor = sim.protocol_floor(s, a, *simple, Protocol::kLowLatency);
    const auto simple_floor = sim.protocol_floor(s, a, *ll, Protocol::kSimple);
    ASSERT_TRUE(ll_floor && simple_floor);
    EXPECT_LE(ll_floor->count(), ll->time.count()) << where(cluster, s, a);
    EXPECT_LE(simple_floor->count(), simple->time.count()) << where(cluster, s, a);
    EXPECT_GE(*ll_floor, *sim.time_floor(s, a, Protocol::kLowLatency)) << where(cluster, s, a);
    ++checked;
    if (s.size == kSizes[2]) {
      ++large;
      if (ll_floor->count() * 100 >= ll->time.count() * 95) ++close;
    }
  });
  EXPECT_GT(checked, 150);
  EXPECT_GT(close * 2, large) << close << " of " << large;
}

// What lets auto skip a tree's LL run at scale: 256 MiB over 64 servers, the LL bound from the
// Simple run is above the Simple run's time (the cut bound alone is not).
TEST(TimeFloor, ATreesSimpleRunBoundsItsLLRunAboveIt) {
  const Machine m = machine("h100-rail-512", {"/servers/0/count=64", "/fabric/routing=ecmp"});
  CollectiveSimulator sim(m);
  const CollectiveSpec s = spec_of(m, CollectiveOp::kAllReduce, Bytes{256 << 20}, CollectiveAlgorithm::kTree);
  const auto simple = sim.run_fixed(s, CollectiveAlgorithm::kTree, Protocol::kSimple, nullptr);
  const auto ll = sim.run_fixed(s, CollectiveAlgorithm::kTree, Protocol::kLowLatency, nullptr);
  ASSERT_TRUE(simple && ll);
  const auto bound = sim.protocol_floor(s, CollectiveAlgorithm::kTree, *simple, Protocol::kLowLatency);
  ASSERT_TRUE(bound);
  EXPECT_GT(bound->count(), simple->time.count());
  EXPECT_LE(bound->count(), ll->time.count());
  EXPECT_LT(sim.time_floor(s, CollectiveAlgorithm::kTree, Protocol::kLowLatency)->count(), simple->time.count());
  // run() on the tree (its two protocols): Simple simulated, LL bounded out by it.
  const CollectiveResult chosen = sim.run(s);
  EXPECT_EQ(chosen.protocol, Protocol::kSimple);
  EXPECT_EQ(chosen.time, simple->time);
  EXPECT_EQ(chosen.simulated_candidates, 1u);
  EXPECT_EQ(chosen.candidates, 2u);
  // An all-to-all has one candidate: direct sends, under the one protocol NCCL's threshold picks.
  CollectiveSpec a2a = s;
  a2a.op = CollectiveOp::kAllToAll;
  a2a.algorithm = CollectiveAlgorithm::kAuto;
  const CollectiveResult direct = sim.run(a2a);
  EXPECT_EQ(direct.algorithm, CollectiveAlgorithm::kDirect);
  EXPECT_EQ(direct.candidates, 1u);
  EXPECT_EQ(direct.simulated_candidates, 1u);
}

// Every candidate run in NCCL's order, the fastest kept (the earlier on a tie): what run()
// decided before it skipped candidates by their bound. *ran: the candidates that ran.
CollectiveResult exhaustive(CollectiveSimulator& sim, const Machine& m, const CollectiveSpec& s, std::uint32_t* ran) {
  std::optional<CollectiveResult> best;
  *ran = 0;
  for (CollectiveAlgorithm a : auto_candidates(ScheduleContext(m.cluster), s)) {
    for (Protocol p : {Protocol::kSimple, Protocol::kLowLatency}) {
      const auto r = sim.run_fixed(s, a, p, nullptr);
      *ran += r.has_value();
      if (r && (!best || r->time < best->time)) best = r;
    }
  }
  EXPECT_TRUE(best.has_value());
  return best.value_or(CollectiveResult{});
}

TEST(TimeFloor, AutoPicksWhatRunningEveryCandidatePicks) {
  int differs = 0;
  for (const Case& c : cases()) {
    const Machine m = machine(c.cluster, c.sets);
    CollectiveSimulator sim(m);
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kBroadcast}) {
      for (Bytes size : kSizes) {
        const CollectiveSpec s = spec_of(m, op, size, CollectiveAlgorithm::kAuto);
        const CollectiveResult picked = sim.run(s);
        std::uint32_t ran = 0;
        const CollectiveResult all = exhaustive(sim, m, s, &ran);
        EXPECT_EQ(picked.candidates, ran) << c.cluster << " " << to_string(op) << " " << size.value();
        EXPECT_LE(picked.simulated_candidates, picked.candidates);
        EXPECT_EQ(picked.algorithm, all.algorithm) << c.cluster << " " << to_string(op) << " " << size.value();
        EXPECT_EQ(picked.protocol, all.protocol) << c.cluster << " " << to_string(op) << " " << size.value();
        EXPECT_EQ(picked.time, all.time) << c.cluster << " " << to_string(op) << " " << size.value();
        differs += picked.algorithm != CollectiveAlgorithm::kRing || picked.protocol != Protocol::kSimple;
      }
    }
  }
  EXPECT_GT(differs, 0);  // the cases reach past the first candidate
}

// The bound is what lets auto skip: a ring across 64 servers pays 2(N - 1) steps that a tree's
// whole run undercuts at a small size: auto never simulates the ring.
TEST(TimeFloor, ARingOfManyServersIsBoundedAboveATreesRun) {
  const Machine m = machine("h100-rail-512", {"/servers/0/count=64"});
  CollectiveSimulator sim(m);
  const CollectiveSpec s = spec_of(m, CollectiveOp::kAllReduce, Bytes{4096}, CollectiveAlgorithm::kAuto);
  const auto tree = sim.run_fixed(s, CollectiveAlgorithm::kTree, Protocol::kLowLatency, nullptr);
  const auto ring_floor = sim.time_floor(s, CollectiveAlgorithm::kRing, Protocol::kLowLatency);
  ASSERT_TRUE(tree && ring_floor);
  EXPECT_GT(ring_floor->count(), tree->time.count());
}

}  // namespace
}  // namespace cs::coll
