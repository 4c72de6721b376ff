// Properties of collectives on small random topologies: conservation, utilization <= 1,
// scale invariance, determinism.
#include <gtest/gtest.h>

#include "core/random.h"
#include "sim/collectives/collective_simulator.h"
#include "tests/collectives/test_clusters.h"

namespace cs::coll {
namespace {

// A random connected cluster: a spanning chain of switches with extra random cables, and GPUs
// hanging off random switches. Bandwidths in [10, 100] GB/s times `k`.
Machine random_cluster(std::uint64_t seed, double k, bool zero_latency) {
  Rng rng = Rng::derive(seed, 11);
  topo::ClusterBuilder c("random" + std::to_string(seed));
  const int switches = 3 + static_cast<int>(rng.below(4));
  const int gpus = 4 + static_cast<int>(rng.below(5));
  for (int g = 0; g < gpus; ++g) testing::add_gpu(c, "gpu" + std::to_string(g), g, 0);
  for (int s = 0; s < switches; ++s) testing::add_switch(c, "sw" + std::to_string(s), topo::NodeKind::kLeafSwitch);
  auto bw = [&] { return gigabytes_per_second(k * static_cast<double>(10 + rng.below(91))); };
  auto lat = [&] { return zero_latency ? Duration{0} : nanoseconds(static_cast<std::int64_t>(100 + rng.below(900))); };
  auto sw = [&](std::uint64_t i) { return topo::NodeId{static_cast<std::uint32_t>(gpus + i)}; };
  for (int s = 1; s < switches; ++s) c.add_cable(sw(static_cast<std::uint64_t>(s - 1)), sw(static_cast<std::uint64_t>(s)), bw(), lat(), hw::LinkClass::kNetwork, 2);
  for (int e = 0; e < switches; ++e) {
    const auto a = rng.below(static_cast<std::uint64_t>(switches)), b = rng.below(static_cast<std::uint64_t>(switches));
    if (a != b) c.add_cable(sw(a), sw(b), bw(), lat(), hw::LinkClass::kNetwork, 2);
  }
  for (int g = 0; g < gpus; ++g) {
    c.add_cable(topo::NodeId{static_cast<std::uint32_t>(g)}, sw(rng.below(static_cast<std::uint64_t>(switches))), bw(), lat(),
                hw::LinkClass::kNetwork, 1);
  }
  testing::Uniform u;
  if (zero_latency) u.step = u.ll_step = Duration{0};
  return Machine{std::move(c).build(), testing::uniform_protocol(u), {}};
}

CollectiveSpec all_ranks(const Machine& m, CollectiveOp op, Bytes size) {
  CollectiveSpec s;
  s.op = op;
  s.size = size;
  s.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().end());
  if (op == CollectiveOp::kSendRecv) s.ranks.resize(2);
  return s;
}

TEST(CollectiveProperties, BytesAreConservedAndNoLinkExceedsItsCapacity) {
  // Each flow's bytes cross every link of its path once: the bytes all links carried equal
  // sum over flows of (wire bytes x hops); and bytes / (capacity x run time) <= 1 per link.
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const Machine m = random_cluster(seed, 1.0, false);
    const topo::Cluster& c = m.cluster;
    CollectiveSimulator sim(m);
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllToAll, CollectiveOp::kAllGather, CollectiveOp::kBroadcast}) {
      for (CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kTree}) {
        const CollectiveSpec s = all_ranks(m, op, mebibytes(3));
        std::vector<LinkActivity> act;
        auto r = sim.run_fixed(s, a, Protocol::kSimple, nullptr, &act);
        if (!r) continue;
        // Sent = received: the schedule's wire bytes leave GPUs and arrive at GPUs.
        std::int64_t out_of_gpus = 0, into_gpus = 0, on_links = 0;
        for (const auto& la : act) {
          const auto& l = c.link(la.link);
          if (c.node(l.src).kind == topo::NodeKind::kGpu) out_of_gpus += la.bytes.value();
          if (c.node(l.dst).kind == topo::NodeKind::kGpu) into_gpus += la.bytes.value();
          on_links += la.bytes.value();
          const double util = static_cast<double>(la.bytes.value()) / (l.bandwidth.value() * to_seconds(r->time));
          EXPECT_LE(util, 1.0 + 1e-9);
          EXPECT_LE(la.busy, r->time);
        }
        EXPECT_NEAR(static_cast<double>(out_of_gpus), static_cast<double>(r->wire_bytes.value()), 1.0 * static_cast<double>(act.size()));
        EXPECT_NEAR(static_cast<double>(into_gpus), static_cast<double>(out_of_gpus), 1.0 * static_cast<double>(act.size()));
        EXPECT_GE(on_links, out_of_gpus);
      }
    }
  }
}

TEST(CollectiveProperties, ScaleInvariance) {
  // Zero latency: multiplying every size and every bandwidth by k leaves every time unchanged.
  // S = 64 x 720,720 bytes (720,720 = lcm(1..16)): every share a schedule splits it into (by up
  // to 8 ranks and 64 channels or chunks) is a whole number of bytes, so k S splits into exactly
  // k times the shares (a share rounded to whole bytes would move the bottleneck's end by up to
  // a byte at one flow's rate, which can be a fraction of the slowest link's).
  const Bytes S{64 * 720'720};
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const Machine c1 = random_cluster(seed, 1.0, true);
    const Machine ck = random_cluster(seed, 8.0, true);
    CollectiveSimulator s1(c1), sk(ck);
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllToAll, CollectiveOp::kReduceScatter}) {
      for (CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDirect}) {
        auto r1 = s1.run_fixed(all_ranks(c1, op, S), a, Protocol::kSimple, nullptr);
        auto rk = sk.run_fixed(all_ranks(ck, op, Bytes{8 * S.value()}), a, Protocol::kSimple, nullptr);
        if (!r1) continue;
        ASSERT_TRUE(rk);
        // Equal up to rounding: each event can shift later ones by at most one picosecond.
        const auto slack = static_cast<double>(r1->events + rk->events) * 1e-12 + 1e-12;
        EXPECT_NEAR(to_seconds(r1->time), to_seconds(rk->time), slack);
        EXPECT_NE(r1->time, Duration{0});
      }
    }
  }
}

TEST(CollectiveProperties, DeterministicAcrossRunsAndSimulators) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const Machine c = random_cluster(seed, 1.0, false);
    CollectiveSimulator a(c), b(c);
    const CollectiveSpec s = all_ranks(c, CollectiveOp::kAllToAll, mebibytes(5));
    std::vector<LinkActivity> x, y;
    const auto ra = a.run(s, "--algo", &x);
    const auto rb = b.run(s, "--algo", &y);
    EXPECT_EQ(ra.time, rb.time);
    EXPECT_EQ(ra.events, rb.events);
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].link, y[i].link);
      EXPECT_EQ(x[i].bytes, y[i].bytes);
      EXPECT_EQ(x[i].busy, y[i].busy);
    }
  }
}

}  // namespace
}  // namespace cs::coll
