// Rounds of equal flows in closed form (CollectiveSimulator::Rounds, sim/network/equal_flows_round.h)
// against simulating their flows: the same time, flows and wire bytes, on all-to-alls whose
// connections collide under static ECMP, on oversubscribed fabrics, and on the pipelined
// algorithms (ring, tree, hierarchical, NVLS-tree), folded or not; NVLS's rounds, whose fills
// differ, are simulated either way.
#include <algorithm>
#include <cstdio>
#include <tuple>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/schedule.h"

namespace cs::coll {
namespace {

Machine machine(const std::string& cluster, std::vector<std::string> sets) {
  return load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/" + cluster + ".json", sets);
}

CollectiveSpec spec_of(const Machine& m, CollectiveOp op, Bytes size, std::size_t first, std::size_t ranks) {
  CollectiveSpec s;
  s.op = op;
  s.size = size;
  s.ranks.assign(m.cluster.gpus().begin() + static_cast<std::ptrdiff_t>(first),
                 m.cluster.gpus().begin() + static_cast<std::ptrdiff_t>(first + ranks));
  return s;
}

struct Pair {
  CollectiveResult closed, flows;
};

Pair both(const Machine& m, const CollectiveSpec& s, CollectiveAlgorithm a, Protocol p) {
  CollectiveSimulator closed(m, CollectiveSimulator::Folding::kSymmetric, CollectiveSimulator::Rounds::kClosedForm);
  CollectiveSimulator flows(m, CollectiveSimulator::Folding::kSymmetric, CollectiveSimulator::Rounds::kFlows);
  std::string why;
  const auto c = closed.run_fixed(s, a, p, &why);
  EXPECT_TRUE(c.has_value()) << why;
  const auto f = flows.run_fixed(s, a, p, &why);
  EXPECT_TRUE(f.has_value()) << why;
  return {c.value_or(CollectiveResult{}), f.value_or(CollectiveResult{})};
}

// The same result: times to a relative 1e-9 and a picosecond per event of the simulated run
// (each end rounds up to the picosecond; the closed form sums each link's weights in another
// order), flows and wire bytes exactly. `closed_rounds`: whether a round took the closed form
// (then the run executes fewer events).
void expect_same(const Pair& r, bool closed_rounds) {
  const double slack = to_seconds(r.flows.time) * 1e-9 + 1e-12 * static_cast<double>(r.flows.events);
  EXPECT_NEAR(to_seconds(r.closed.time), to_seconds(r.flows.time), slack);
  EXPECT_GT(r.closed.time.count(), 0);
  EXPECT_EQ(r.closed.flows, r.flows.flows);
  EXPECT_EQ(r.closed.wire_bytes, r.flows.wire_bytes);
  EXPECT_EQ(r.closed.drain.count() > 0, r.flows.drain.count() > 0);
  EXPECT_EQ(r.closed.folded_servers, r.flows.folded_servers);
  if (closed_rounds) EXPECT_LT(r.closed.events, r.flows.events);
  else EXPECT_EQ(r.closed.events, r.flows.events);
}

TEST(ClosedRounds, AllToAllUnderStaticEcmpEqualsItsFlows) {
  // The rail-optimized NDR fabric under static ECMP, 16 to 32 servers over several leaves: each
  // connection's hash is its own path, so they collide on the spine cables and end at
  // hundreds of instants. Simple (1 MiB per peer) and LL (16 KiB per peer).
  for (const std::size_t ranks : {128, 256}) {
    for (const auto& [size, protocol] : {std::pair{mebibytes(256), Protocol::kSimple}, std::pair{kibibytes(16 * static_cast<std::int64_t>(ranks)), Protocol::kLowLatency}}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks, " + std::to_string(size.value()) + " B");
      const Machine m = machine("h100-rail-512", {"/servers/0/count=32", "/fabric/routing=ecmp"});
      const Pair r = both(m, spec_of(m, CollectiveOp::kAllToAll, size, 0, ranks), CollectiveAlgorithm::kDirect, protocol);
      expect_same(r, true);
      EXPECT_GT(r.flows.events, 1000u);  // many ends, each its own event
      std::printf("all_to_all %zu ranks: %.6f ms, events %llu closed / %llu flows\n", ranks, to_seconds(r.closed.time) * 1e3,
                  static_cast<unsigned long long>(r.closed.events), static_cast<unsigned long long>(r.flows.events));
    }
  }
}

TEST(ClosedRounds, AllToAllInPartsEqualsTheWholeRound) {
  // A round of more than 4,096 connections under static ECMP is prepared in parts, each loaded
  // into the closed form and dropped (CollectiveRunner::set_round_part): parts of 1, 1,000 and
  // 7,777 flows give the whole round's time exactly (every weight an integer), its flows and
  // wire bytes, and the simulated flows' time, in Simple and LL; whether the round is listed in
  // parts (direct_in_parts, ranks server by server) or whole (server 0's first rank last).
  const Machine m = machine("h100-rail-512", {"/servers/0/count=32", "/fabric/routing=ecmp"});
  for (const auto& [size, protocol, listed] :
       {std::tuple{mebibytes(256), Protocol::kSimple, true}, std::tuple{kibibytes(16 * 256), Protocol::kLowLatency, true},
        std::tuple{mebibytes(256), Protocol::kSimple, false}}) {
    CollectiveSpec s = spec_of(m, CollectiveOp::kAllToAll, size, 0, 256);
    if (!listed) std::rotate(s.ranks.begin(), s.ranks.begin() + 1, s.ranks.end());
    EXPECT_EQ(direct_in_parts(CollectiveSimulator(m).layout().schedules(), s).has_value(), listed);
    CollectiveSimulator whole(m, CollectiveSimulator::Folding::kSymmetric, CollectiveSimulator::Rounds::kClosedForm);
    whole.set_round_part(std::size_t{1} << 30);
    std::string why;
    const auto w = whole.run_fixed(s, CollectiveAlgorithm::kDirect, protocol, &why);
    ASSERT_TRUE(w.has_value()) << why;
    for (const std::size_t part : {std::size_t{1}, std::size_t{1000}, std::size_t{7777}}) {
      SCOPED_TRACE(std::to_string(part) + " flows a part, " + std::to_string(size.value()) + " B");
      CollectiveSimulator parted(m, CollectiveSimulator::Folding::kSymmetric, CollectiveSimulator::Rounds::kClosedForm);
      parted.set_round_part(part);
      const auto p = parted.run_fixed(s, CollectiveAlgorithm::kDirect, protocol, &why);
      ASSERT_TRUE(p.has_value()) << why;
      EXPECT_EQ(p->time, w->time);
      EXPECT_EQ(p->flows, w->flows);
      EXPECT_EQ(p->wire_bytes, w->wire_bytes);
      EXPECT_EQ(p->drain, w->drain);
      EXPECT_EQ(p->events, w->events);
    }
    CollectiveSimulator flows(m, CollectiveSimulator::Folding::kSymmetric, CollectiveSimulator::Rounds::kFlows);
    const auto f = flows.run_fixed(s, CollectiveAlgorithm::kDirect, protocol, &why);
    ASSERT_TRUE(f.has_value()) << why;
    expect_same({*w, *f}, true);
  }
}

// The entries as a sorted list: the same entries in any order compare equal.
std::vector<std::tuple<std::uint32_t, std::uint32_t, std::int64_t, std::uint32_t, std::uint32_t, bool>> sorted_entries(
    std::span<const PlannedFlow> flows) {
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::int64_t, std::uint32_t, std::uint32_t, bool>> out;
  for (const PlannedFlow& f : flows) {
    EXPECT_EQ(f.pipeline, kNoPipeline);
    EXPECT_FALSE(f.reduction_port.valid());
    EXPECT_EQ(f.rail, PlannedFlow::kDestinationRail);
    EXPECT_EQ(f.connections, 1);
    out.emplace_back(f.src.value, f.dst.value, f.bytes.value(), f.channel, f.copies, f.handover);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DirectInParts, ListsTheWholeScheduleInRunsOfServersByRail) {
  // The parts one after another list build_schedule's entries, and flow_count counts the same
  // flows: all_to_all (one round) and all_reduce (two), DGX H100 servers whose GPUs share PCIe
  // switches in pairs (PXN proxies and PCIe neighbours), ranks from the middle of a server on.
  // 6 servers make one part; 40 make two (kPartServers: 32 and 8). Within a part the entries
  // come by sender position, then by the destination's rail, then by server
  // (server_pairs_relay.h): the sends' destination rails rise but where a sender position ends,
  // at most 7 times for 8 GPUs a server, where server by server they fall at every server.
  for (const int servers : {6, 40}) {
    const Machine m = machine("h100-rail-512", {"/servers/0/count=" + std::to_string(servers)});
    const ScheduleContext ctx(m.cluster);
    const std::size_t ranks = 8 * static_cast<std::size_t>(servers) - 8;
    for (const CollectiveOp op : {CollectiveOp::kAllToAll, CollectiveOp::kAllReduce, CollectiveOp::kAllGather}) {
      SCOPED_TRACE(std::string(to_string(op)) + ", " + std::to_string(servers) + " servers");
      const CollectiveSpec s = spec_of(m, op, mebibytes(48), 4, ranks);
      const std::optional<Schedule> whole = build_schedule(ctx, s, CollectiveAlgorithm::kDirect, nullptr);
      const std::optional<Schedule> parted = direct_in_parts(ctx, s);
      ASSERT_TRUE(whole && parted);
      ASSERT_EQ(parted->rounds.size(), whole->rounds.size());
      EXPECT_EQ(parted->flow_count(), whole->flow_count());
      EXPECT_EQ(parted->flow_count(), ranks * (ranks - 1) * whole->rounds.size());
      for (std::size_t r = 0; r < whole->rounds.size(); ++r) {
        const Round& round = parted->rounds[r];
        EXPECT_TRUE(round.flows.empty());
        EXPECT_EQ(round.steps, whole->rounds[r].steps);
        ASSERT_EQ(round.part_count, servers == 6 ? 1u : 2u);  // 4 ranks of the first server, 8 of the next, 4 of the last
        std::vector<PlannedFlow> listed, part = {PlannedFlow{}};  // a part replaces what the vector held
        for (std::size_t k = 0; k < round.part_count; ++k) {
          round.parts(k, part);
          EXPECT_FALSE(part.empty());
          int falls = 0, last_rail = -1;
          for (const PlannedFlow& f : part) {
            const topo::NodeInfo& to = m.cluster.node(f.dst);
            const topo::NodeInfo& from = m.cluster.node(f.src);
            if (f.handover || to.server == from.server) continue;  // a send between servers
            const int rail = m.cluster.node(f.dst).local;
            falls += rail < last_rail ? 1 : 0;
            last_rail = rail;
          }
          EXPECT_LE(falls, 7) << "part " << k;
          EXPECT_GT(falls, 0) << "part " << k;  // the next sender position starts again at rail 0
          listed.insert(listed.end(), part.begin(), part.end());
        }
        EXPECT_EQ(sorted_entries(listed), sorted_entries(whole->rounds[r].flows));
      }
    }
  }
  // Ranks that leave a server and come back, on one server, or a rooted operation: not listed in parts.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=6"});
  const ScheduleContext ctx(m.cluster);
  CollectiveSpec back = spec_of(m, CollectiveOp::kAllToAll, mebibytes(48), 0, 16);
  std::swap(back.ranks[0], back.ranks[15]);
  EXPECT_FALSE(direct_in_parts(ctx, back));
  EXPECT_FALSE(direct_in_parts(ctx, spec_of(m, CollectiveOp::kAllToAll, mebibytes(48), 0, 8)));
  EXPECT_FALSE(direct_in_parts(ctx, spec_of(m, CollectiveOp::kBroadcast, mebibytes(48), 0, 16)));
  EXPECT_FALSE(lists_by_server(m.cluster, back));
  EXPECT_TRUE(lists_by_server(m.cluster, spec_of(m, CollectiveOp::kAllReduce, mebibytes(48), 4, 40)));
}

TEST(DirectInParts, ARunPreparedInPartsIsTheDirectAlgorithmInClosedFormUnderStaticEcmpPastTheStreamedRound) {
  // CollectiveSimulator::prepares_in_parts, which the CLI's connection limits ask (docs/cli.md,
  // "Limits"): 65 ranks (4,160 flows, past CollectiveRunner::kStreamedRound's 4,096) under static
  // ECMP, and not: 64 ranks (4,032), adaptive routing, with every link's activity asked for,
  // simulated flow by flow, another algorithm, ranks that come back to a server.
  const Machine ecmp = machine("h100-rail-512", {"/servers/0/count=9", "/fabric/routing=ecmp"});
  const Machine adaptive = machine("h100-rail-512", {"/servers/0/count=9", "/fabric/routing=adaptive"});
  CollectiveSimulator closed(ecmp), flows(ecmp, CollectiveSimulator::Folding::kSymmetric, CollectiveSimulator::Rounds::kFlows),
      routed(adaptive);
  const CollectiveSpec past = spec_of(ecmp, CollectiveOp::kAllToAll, mebibytes(48), 0, 65);
  EXPECT_TRUE(closed.prepares_in_parts(past, CollectiveAlgorithm::kDirect, false));
  EXPECT_FALSE(closed.prepares_in_parts(spec_of(ecmp, CollectiveOp::kAllToAll, mebibytes(48), 0, 64), CollectiveAlgorithm::kDirect, false));
  EXPECT_FALSE(routed.prepares_in_parts(past, CollectiveAlgorithm::kDirect, false));
  EXPECT_FALSE(closed.prepares_in_parts(past, CollectiveAlgorithm::kDirect, true));
  EXPECT_FALSE(flows.prepares_in_parts(past, CollectiveAlgorithm::kDirect, false));
  EXPECT_FALSE(closed.prepares_in_parts(past, CollectiveAlgorithm::kRing, false));
  CollectiveSpec back = past;
  std::swap(back.ranks[0], back.ranks[64]);
  EXPECT_FALSE(closed.prepares_in_parts(back, CollectiveAlgorithm::kDirect, false));
}

TEST(ClosedRounds, OversubscribedLeafSpineEqualsItsFlows) {
  // 2:1 at the leaves, ECMP and adaptive routing: the all-to-all (direct, its all-reduce two
  // rounds) and the pipelined all-reduces.
  for (const char* routing : {"ecmp", "adaptive"}) {
    SCOPED_TRACE(routing);
    const Machine m = machine("leafspine-oversub", {std::string("/fabric/routing=") + routing});
    const CollectiveSpec a2a = spec_of(m, CollectiveOp::kAllToAll, mebibytes(64), 0, 64);
    expect_same(both(m, a2a, CollectiveAlgorithm::kDirect, Protocol::kSimple), true);
    const CollectiveSpec ar = spec_of(m, CollectiveOp::kAllReduce, mebibytes(64), 4, 48);
    for (const CollectiveAlgorithm a : {CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree}) {
      SCOPED_TRACE(std::string(to_string(a)));
      expect_same(both(m, ar, a, Protocol::kSimple), true);
      expect_same(both(m, ar, a, Protocol::kLowLatency), true);
    }
  }
}

TEST(ClosedRounds, MultiRailServersEqualTheirFlows) {
  // DGX H100 servers on the rail-optimized fabric, both routings: ring, tree, hierarchical and
  // NVLS-tree all-reduce (their channels' pipelines move equal bytes), folded by symmetry where
  // the simulator folds (adaptive); and an all-gather and a reduce-scatter.
  for (const char* routing : {"ecmp", "adaptive"}) {
    SCOPED_TRACE(routing);
    const Machine m = machine("h100-rail-512", {"/servers/0/count=8", std::string("/fabric/routing=") + routing});
    const CollectiveSpec ar = spec_of(m, CollectiveOp::kAllReduce, mebibytes(128), 0, 64);
    for (const CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree, CollectiveAlgorithm::kHierarchical,
                                        CollectiveAlgorithm::kNvlsTree}) {
      SCOPED_TRACE(std::string(to_string(a)));
      expect_same(both(m, ar, a, Protocol::kSimple), true);
    }
    for (const CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      expect_same(both(m, spec_of(m, op, mebibytes(64), 0, 64), CollectiveAlgorithm::kRing, Protocol::kSimple), true);
      expect_same(both(m, spec_of(m, op, mebibytes(64), 0, 64), CollectiveAlgorithm::kDirect, Protocol::kSimple), true);
    }
  }
}

TEST(ClosedRounds, NvlsRoundsAreSimulated) {
  // NVLS inside one DGX H100: its pipelines' fills differ from one another, so the closed form
  // does not hold and the round runs its flows: the same events either way.
  const Machine m = machine("dgx-h100", {});
  expect_same(both(m, spec_of(m, CollectiveOp::kAllReduce, mebibytes(256), 0, 8), CollectiveAlgorithm::kNvls, Protocol::kSimple),
              false);
}

}  // namespace
}  // namespace cs::coll
