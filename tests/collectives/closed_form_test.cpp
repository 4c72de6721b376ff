// Every collective algorithm against its closed form on an idle uniform network.
// Notation: n ranks, S bytes, B link rate, L link latency, s the class's per-step latency,
// a = s + (path latency) the per-step latency of the schedule (collective_runner.h).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/collectives/collective_simulator.h"
#include "tests/collectives/test_clusters.h"

namespace cs::coll {
namespace {

using testing::Uniform;

double secs(Duration d) { return to_seconds(d); }

CollectiveSpec spec_for(const Machine& m, CollectiveOp op, Bytes size, std::size_t n = 0) {
  CollectiveSpec s;
  s.op = op;
  s.size = size;
  const auto g = m.cluster.gpus();
  s.ranks.assign(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(n == 0 ? g.size() : n));
  return s;
}

double simulate(const Machine& c, const CollectiveSpec& s, CollectiveAlgorithm a,
                Protocol p = Protocol::kSimple) {
  CollectiveSimulator sim(c);
  std::string why;
  auto r = sim.run_fixed(s, a, p, &why);
  EXPECT_TRUE(r.has_value()) << why;
  return r ? secs(r->time) : -1;
}

TEST(ClosedForm, RingAllReduceOnUniformRingForTwoToSixtyFourRanks) {
  // t = 2(n-1) a + 2(n-1)/n S/B with a = s + L (one link per ring edge).
  const Uniform u;
  const Bytes S = mebibytes(64);
  for (int n = 2; n <= 64; ++n) {
    const coll::Machine c = testing::uniform_ring(n, u);
    const double a = secs(u.step + u.latency);
    const double B = u.bandwidth.value();
    const double expected = 2 * (n - 1) * a + 2.0 * (n - 1) / n * static_cast<double>(S.value()) / B;
    const double got = simulate(c, spec_for(c, CollectiveOp::kAllReduce, S), CollectiveAlgorithm::kRing);
    EXPECT_NEAR(got, expected, expected * 1e-3) << "n=" << n;
  }
}

TEST(ClosedForm, LowLatencyProtocolDoublesTheWireBytes) {
  // LL: t = 2(n-1)(s_LL + L) + 2 x 2(n-1)/n S/B (twice the bytes on the wire).
  const Uniform u;
  const int n = 8;
  const Bytes S = mebibytes(8);
  const coll::Machine c = testing::uniform_ring(n, u);
  const double a = secs(u.ll_step + u.latency);
  const double expected = 2 * (n - 1) * a + 2 * 2.0 * (n - 1) / n * static_cast<double>(S.value()) / u.bandwidth.value();
  EXPECT_NEAR(simulate(c, spec_for(c, CollectiveOp::kAllReduce, S), CollectiveAlgorithm::kRing, Protocol::kLowLatency),
              expected, expected * 1e-3);
}

struct StarCase {
  CollectiveOp op;
  CollectiveAlgorithm algo;
  int n;
};

class StarClosedForm : public ::testing::TestWithParam<StarCase> {};

TEST_P(StarClosedForm, MatchesItsFormula) {
  const StarCase k = GetParam();
  const Uniform u;
  const coll::Machine c = testing::uniform_star(k.n, u);
  const double n = k.n;
  const double S = static_cast<double>(mebibytes(256).value());
  const double B = u.bandwidth.value();
  const double a = secs(u.step + 2 * u.latency);  // every path is GPU -> switch -> GPU
  const double log2n = std::log2(n);
  double expected = 0;
  switch (k.algo) {
    case CollectiveAlgorithm::kRing:
      if (k.op == CollectiveOp::kAllReduce) expected = 2 * (n - 1) * a + 2 * (n - 1) / n * S / B;
      if (k.op == CollectiveOp::kAllGather || k.op == CollectiveOp::kReduceScatter) expected = (n - 1) * a + (n - 1) / n * S / B;
      if (k.op == CollectiveOp::kBroadcast || k.op == CollectiveOp::kReduce) expected = (n - 1) * a + S / B;  // pipelined chain
      break;
    case CollectiveAlgorithm::kHalvingDoubling:
      // log2(n) exchanges of S/2, S/4, ... S/n each way, one step each.
      if (k.op == CollectiveOp::kAllReduce) expected = 2 * log2n * a + 2 * (n - 1) / n * S / B;
      else expected = log2n * a + (n - 1) / n * S / B;
      break;
    case CollectiveAlgorithm::kDirect:
      // All pairs at once: every uplink carries (n-1) flows of S/n.
      if (k.op == CollectiveOp::kAllToAll || k.op == CollectiveOp::kAllGather || k.op == CollectiveOp::kReduceScatter) {
        expected = a + (n - 1) / n * S / B;
      }
      if (k.op == CollectiveOp::kAllReduce) expected = 2 * (a + (n - 1) / n * S / B);  // RS then AG
      if (k.op == CollectiveOp::kBroadcast) expected = a + (n - 1) * S / B;          // root's uplink sends n-1 copies
      break;
    case CollectiveAlgorithm::kTree:
      // n = 8, two mirrored heap trees of S/2 (derivation in the test comment below):
      // the busiest ranks (1, 2, 5, 6) send 4 x S/2 = 2S, so t = 2 floor(log2 8) a + 2S/B.
      if (k.op == CollectiveOp::kAllReduce) expected = 2 * 3 * a + 2 * S / B;
      // Broadcast: one heap tree of S from the root; inner nodes send to 2 children: 2S.
      if (k.op == CollectiveOp::kBroadcast) expected = 3 * a + 2 * S / B;
      break;
    default: break;
  }
  ASSERT_GT(expected, 0);
  const double got = simulate(c, spec_for(c, k.op, mebibytes(256)), k.algo);
  EXPECT_NEAR(got, expected, expected * 1e-3) << to_string(k.op) << " " << to_string(k.algo);
}

// Tree loads for n = 8 (heap tree A: parent of i is (i-1)/2; tree B: rank r at position 7-r):
// out-bytes per position in one tree, in units of H = S/2: p0 2H (two children), p1 3H, p2 3H,
// p3 2H (up + one child), p4..p7 H (up). Rank r sends A(r) + A(7-r): r1 = 3H + H = 4H = 2S.
INSTANTIATE_TEST_SUITE_P(
    Algorithms, StarClosedForm,
    ::testing::Values(StarCase{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 8}, StarCase{CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, 8},
                      StarCase{CollectiveOp::kReduceScatter, CollectiveAlgorithm::kRing, 8}, StarCase{CollectiveOp::kBroadcast, CollectiveAlgorithm::kRing, 8},
                      StarCase{CollectiveOp::kReduce, CollectiveAlgorithm::kRing, 8}, StarCase{CollectiveOp::kAllReduce, CollectiveAlgorithm::kHalvingDoubling, 16},
                      StarCase{CollectiveOp::kReduceScatter, CollectiveAlgorithm::kHalvingDoubling, 8},
                      StarCase{CollectiveOp::kAllGather, CollectiveAlgorithm::kHalvingDoubling, 32}, StarCase{CollectiveOp::kAllToAll, CollectiveAlgorithm::kDirect, 12},
                      StarCase{CollectiveOp::kAllGather, CollectiveAlgorithm::kDirect, 6}, StarCase{CollectiveOp::kAllReduce, CollectiveAlgorithm::kDirect, 8},
                      StarCase{CollectiveOp::kBroadcast, CollectiveAlgorithm::kDirect, 5}, StarCase{CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, 8},
                      StarCase{CollectiveOp::kBroadcast, CollectiveAlgorithm::kTree, 8}));

TEST(ClosedForm, ScheduleSizesAreTheFlowsTheAlgorithmSends) {
  // n = 8: a ring all-reduce sends one flow per ring edge (8); the double binary tree one up and
  // one down flow per tree edge of two trees (2 x 2 x 7 = 28); direct all-to-all n(n-1) = 56;
  // the wire bytes of a ring are 8 edges x 2(n-1)/n S.
  const Uniform u;
  const coll::Machine c = testing::uniform_star(8, u);
  CollectiveSimulator sim(c);
  const auto ring = sim.run_fixed(spec_for(c, CollectiveOp::kAllReduce, mebibytes(8)), CollectiveAlgorithm::kRing, Protocol::kSimple, nullptr);
  const auto tree = sim.run_fixed(spec_for(c, CollectiveOp::kAllReduce, mebibytes(8)), CollectiveAlgorithm::kTree, Protocol::kSimple, nullptr);
  const auto a2a = sim.run_fixed(spec_for(c, CollectiveOp::kAllToAll, mebibytes(8)), CollectiveAlgorithm::kDirect, Protocol::kSimple, nullptr);
  ASSERT_TRUE(ring && tree && a2a);
  EXPECT_EQ(ring->flows, 8u);
  EXPECT_EQ(tree->flows, 28u);
  EXPECT_EQ(a2a->flows, 56u);
  EXPECT_EQ(ring->wire_bytes.value(), 8 * (mebibytes(8).value() * 14 / 8));
  // LL puts twice the bytes on the wire.
  const auto ll = sim.run_fixed(spec_for(c, CollectiveOp::kAllReduce, mebibytes(8)), CollectiveAlgorithm::kRing, Protocol::kLowLatency, nullptr);
  ASSERT_TRUE(ll);
  EXPECT_EQ(ll->wire_bytes.value(), 2 * ring->wire_bytes.value());
}

TEST(ClosedForm, SendRecvIsOneStepPlusSizeOverBandwidth) {
  const Uniform u;
  const coll::Machine c = testing::uniform_star(2, u);
  const double expected = secs(u.step + 2 * u.latency) + static_cast<double>(gibibytes(1).value()) / u.bandwidth.value();
  EXPECT_NEAR(simulate(c, spec_for(c, CollectiveOp::kSendRecv, gibibytes(1)), CollectiveAlgorithm::kDirect), expected, expected * 1e-3);
}

TEST(ClosedForm, SendRecvOverMoreRanksIsARingShift) {
  // Four ranks behind one switch: every rank sends S to the next and the last to the first (a
  // ring shift, as nccl-tests' sendrecv runs it), all at once on disjoint link directions, so
  // the time is one transfer's, step + 2 latencies + S/B, with 4 flows moving 4 S.
  const Uniform u;
  const coll::Machine c = testing::uniform_star(4, u);
  CollectiveSimulator sim(c);
  const auto r = sim.run_fixed(spec_for(c, CollectiveOp::kSendRecv, mebibytes(64)), CollectiveAlgorithm::kDirect, Protocol::kSimple, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->flows, 4u);
  EXPECT_EQ(r->wire_bytes.value(), 4 * mebibytes(64).value());
  const double expected = secs(u.step + 2 * u.latency) + static_cast<double>(mebibytes(64).value()) / u.bandwidth.value();
  EXPECT_NEAR(secs(r->time), expected, expected * 1e-3);
  // Two ranks: one transfer, ranks[0] -> ranks[1] (the executor's point-to-point transfer).
  const auto two = sim.run_fixed(spec_for(c, CollectiveOp::kSendRecv, mebibytes(64), 2), CollectiveAlgorithm::kDirect, Protocol::kSimple, nullptr);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->flows, 1u);
}

// m servers of g GPUs: an internal switch per server (NVLink class, B1, L1) and one rail switch
// per local index j joining GPU j of every server (network class, B2, L2).
Machine two_level(int m, int g, const Uniform& intra, const Uniform& inter) {
  topo::ClusterBuilder c("two-level");
  for (int s = 0; s < m; ++s) {
    // append, not "s" + std::to_string(...): GCC 12 warns falsely (-Wrestrict) on the latter here
    for (int j = 0; j < g; ++j) {
      testing::add_gpu(c, std::string("s").append(std::to_string(s)).append("/gpu").append(std::to_string(j)), s, j);
    }
  }
  for (int s = 0; s < m; ++s) {
    const auto sw = testing::add_switch(c, "s" + std::to_string(s) + "/sw", topo::NodeKind::kNvSwitch, s);
    for (int j = 0; j < g; ++j) {
      c.add_cable(topo::NodeId{static_cast<std::uint32_t>(s * g + j)}, sw, intra.bandwidth, intra.latency, hw::LinkClass::kNvlink, 0);
    }
  }
  for (int j = 0; j < g; ++j) {
    const auto rail = testing::add_switch(c, "rail" + std::to_string(j), topo::NodeKind::kLeafSwitch);
    for (int s = 0; s < m; ++s) {
      c.add_cable(topo::NodeId{static_cast<std::uint32_t>(s * g + j)}, rail, inter.bandwidth, inter.latency, hw::LinkClass::kNetwork, 1);
    }
  }
  ProtocolParams protocol = testing::uniform_protocol(inter);
  testing::set_class(protocol, hw::LinkClass::kNvlink, intra);
  return Machine{std::move(c).build(), protocol, {}};
}

TEST(ClosedForm, HierarchicalAllReducePipelinesItsThreeRings) {
  // RS inside, AR across per rail, AG inside, pipelined as one transfer: the latencies add,
  // 2(g-1) a1 + 2(m-1) a2 (a1 = s1 + 2 L1, a2 = s2 + 2 L2: two links per path), and the
  // bandwidth term is the busiest link's: a GPU's NVLink carries its RS and AG edges,
  // 2(g-1)/g S at B1, its rail link 2(m-1)/m (S/g) at B2.
  Uniform intra{gigabytes_per_second(300), nanoseconds(400), microseconds(3), nanoseconds(600)};
  Uniform inter{gigabytes_per_second(50), nanoseconds(900), microseconds(7), microseconds(2)};
  const double S = static_cast<double>(gibibytes(1).value());
  const double a1 = secs(intra.step + 2 * intra.latency), a2 = secs(inter.step + 2 * inter.latency);
  for (const auto& [m, g] : {std::pair{4, 8}, std::pair{16, 4}}) {
    SCOPED_TRACE(m);
    const Machine c = two_level(m, g, intra, inter);
    const double nvlink = 2 * (g - 1.0) / g * S / intra.bandwidth.value();
    const double rail = 2 * (m - 1.0) / m * (S / g) / inter.bandwidth.value();
    const double expected = 2 * (g - 1) * a1 + 2 * (m - 1) * a2 + std::max(nvlink, rail);
    EXPECT_NEAR(simulate(c, spec_for(c, CollectiveOp::kAllReduce, gibibytes(1)), CollectiveAlgorithm::kHierarchical), expected, expected * 1e-3);
  }
  // Reduce-scatter: half of each (one intra pass, (m-1)/m across).
  const int m = 4, g = 8;
  const Machine c = two_level(m, g, intra, inter);
  const double rs = (g - 1) * a1 + (m - 1) * a2 +
                    std::max((g - 1.0) / g * S / intra.bandwidth.value(), (m - 1.0) / m * (S / g) / inter.bandwidth.value());
  EXPECT_NEAR(simulate(c, spec_for(c, CollectiveOp::kReduceScatter, gibibytes(1)), CollectiveAlgorithm::kHierarchical), rs, rs * 1e-3);
}

TEST(ClosedForm, TreeAcrossServersIsNcclsChainsAndDoubleBinaryTrees) {
  // 4 servers of 4 GPUs: per channel c (4, S/4 each), a chain through each server from GPU c and
  // two binary trees over the servers (tree 1 the mirror of tree 0), S/8 each, reduce up and
  // broadcast down. The rail link of GPU c carries channel c's trees only: on server 0 tree 0
  // (root, two children) sends 2 edges and tree 1 (a leaf) 1, on server 2 tree 0 sends 1 and
  // tree 1 2, so with rates r0, r1: 2 r0 + r1 <= B2 and r0 + 2 r1 <= B2, r0 = r1 = B2/3, and each
  // tree's S/8 takes 3 S/8 / B2. NVLink carries 4(g-1) edges per GPU at B2/3: 4 B2 < B1, not
  // binding. Latency: 2(g-1) intra steps a1 and 2 floor(log2 m) network steps a2.
  Uniform intra{gigabytes_per_second(300), nanoseconds(400), microseconds(3), nanoseconds(600)};
  Uniform inter{gigabytes_per_second(50), nanoseconds(900), microseconds(7), microseconds(2)};
  const int m = 4, g = 4;
  const Machine c = two_level(m, g, intra, inter);
  const double S = static_cast<double>(gibibytes(1).value());
  const double a1 = secs(intra.step + 2 * intra.latency), a2 = secs(inter.step + 2 * inter.latency);
  const double expected = 2 * (g - 1) * a1 + 2 * 2 * a2 + 3 * S / (2 * g) / inter.bandwidth.value();
  EXPECT_NEAR(simulate(c, spec_for(c, CollectiveOp::kAllReduce, gibibytes(1)), CollectiveAlgorithm::kTree), expected, expected * 1e-3);
}

TEST(Auto, IsTheFastestOfItsCandidatesAndNeverSlowerThanAnyOfThem) {
  // auto = min over NCCL's algorithms for the situation (auto_candidates) x both protocols;
  // send_recv and all_to_all take NCCL's point-to-point protocol rule.
  const Uniform u;
  std::vector<Machine> clusters;
  clusters.push_back(testing::uniform_star(8, u));
  clusters.push_back(testing::uniform_ring(6, u));
  clusters.push_back(testing::uniform_star(8, u, gigabytes_per_second(80)));
  for (const auto& c : clusters) {
    CollectiveSimulator sim(c);
    const ScheduleContext ctx(c.cluster);
    for (CollectiveOp op : kCollectiveOps) {
      for (Bytes size : {bytes(64), kibibytes(64), mebibytes(4), mebibytes(256)}) {
        CollectiveSpec s = spec_for(c, op, size, op == CollectiveOp::kSendRecv ? 2 : 0);
        const CollectiveResult best = sim.run(s);
        if (op == CollectiveOp::kSendRecv || op == CollectiveOp::kAllToAll) {
          // Point-to-point: NCCL's size rule, not its tuner: LL up to 16 KiB per peer.
          const std::int64_t per_peer = op == CollectiveOp::kSendRecv ? size.value() : size.value() / static_cast<std::int64_t>(s.ranks.size());
          const Protocol rule = per_peer <= 16384 ? Protocol::kLowLatency : Protocol::kSimple;
          EXPECT_EQ(best.protocol, rule) << c.cluster.name() << " " << to_string(op) << " " << size.value();
          const auto r = sim.run_fixed(s, CollectiveAlgorithm::kDirect, rule, nullptr);
          ASSERT_TRUE(r);
          EXPECT_EQ(best.time, r->time);
          continue;
        }
        Duration fastest = Duration::max();
        for (CollectiveAlgorithm a : auto_candidates(ctx, s)) {
          for (Protocol p : {Protocol::kSimple, Protocol::kLowLatency}) {
            if (simple_protocol_only(a) && p != Protocol::kSimple) continue;
            auto r = sim.run_fixed(s, a, p, nullptr);
            if (!r) continue;
            EXPECT_LE(best.time, r->time) << c.cluster.name() << " " << to_string(op) << " " << to_string(a);
            fastest = std::min(fastest, r->time);
          }
        }
        EXPECT_EQ(best.time, fastest) << c.cluster.name() << " " << to_string(op);
      }
    }
  }
}

TEST(Auto, UsesInSwitchReductionForLargeMessagesWhereTheSwitchIsFasterThanARing) {
  // Ring algbw is n/(2(n-1)) B = 0.57 B; NVLS algbw is min(n B/(n+1), R) = 0.8 B with R = 0.8 B
  // (tests/collectives/nvls_test.cpp): NVLS wins for large S.
  const Uniform u;
  const coll::Machine c = testing::uniform_star(8, u, gigabytes_per_second(80));
  CollectiveSimulator sim(c);
  EXPECT_EQ(sim.run(spec_for(c, CollectiveOp::kAllReduce, gibibytes(1))).algorithm, CollectiveAlgorithm::kNvls);
}

}  // namespace
}  // namespace cs::coll
