// The runtime against closed forms: compute chains, data parallelism with and without overlap,
// and the GPipe / 1F1B pipeline bubble.
#include "sim/runtime/executor.h"

#include <gtest/gtest.h>

#include <functional>
#include <span>

#include "tests/collectives/test_clusters.h"

namespace cs::rt {
namespace {

coll::Machine star(int n, bool free_comm) { return testing::compute_star(n, free_comm); }

struct Harness {
  const coll::Machine& machine;
  const topo::Cluster& cluster = machine.cluster;
  sim::Simulator sim;
  coll::NetworkLayout layout{machine};
  net::FlowNetwork net{sim, layout.capacities()};
  topo::Router router{cluster};
  coll::AlgorithmTuner tuner{machine};
  compute::ComputeModel compute{"bf16"};
  explicit Harness(const coll::Machine& m) : machine(m) {}
  SimTime run(const tg::TaskGraph& g) {
    std::vector<topo::NodeId> gpus(cluster.gpus().begin(), cluster.gpus().begin() + g.ranks());
    Executor ex(sim, net, router, layout, tuner, compute, g, gpus);
    ex.start();
    sim.run();
    EXPECT_TRUE(ex.finished());
    records = ex.timeline();
    return ex.end_time();
  }
  tg::Timeline records;
};

double ms(SimTime t) { return to_seconds(t) * 1e3; }

TEST(Executor, ComputeChainIsTheSumOfRooflineTimes) {
  // GEMM of 1e12 FLOP at 50 TFLOP/s = 20 ms; then an elementwise op moving 1e9 B at 1 TB/s
  // = 1 ms: the rank ends at 21 ms.
  const coll::Machine c = star(2, true);
  tg::TaskGraph g(1);
  const tg::OpId a = g.add_compute(0, "gemm", flops(1e12), bytes(0), tg::ComputeClass::kGemm);
  const tg::OpId deps[] = {a};
  g.add_compute(0, "add", flops(1e9), bytes(1'000'000'000), tg::ComputeClass::kElementwise, deps);
  Harness h(c);
  EXPECT_DOUBLE_EQ(ms(h.run(g)), 21.0);
}

TEST(Executor, DataParallelWithoutOverlapIsComputePlusAllReduce) {
  // Four ranks: 20 ms of compute, then one all-reduce of 256 MiB over all four. The iteration
  // is 20 ms + the all-reduce's isolated time (nothing else shares the network).
  const coll::Machine c = star(4, false);
  tg::TaskGraph g(4);
  const std::uint32_t dp = g.add_group({"dp0", tg::Stream::kDp, {0, 1, 2, 3}});
  for (std::uint32_t r = 0; r < 4; ++r) {
    const tg::OpId f = g.add_compute(r, "bwd", flops(1e12), bytes(0), tg::ComputeClass::kGemm);
    const tg::OpId deps[] = {f};
    g.add_collective(r, dp, "grad all-reduce", CollectiveOp::kAllReduce, mebibytes(256), 1, deps);
  }
  Harness h(c);
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = mebibytes(256);
  spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
  const double allreduce_ms = to_seconds(coll::CollectiveSimulator(c).run(spec).time) * 1e3;
  EXPECT_NEAR(ms(h.run(g)), 20.0 + allreduce_ms, 1e-9);
}

TEST(Executor, BucketedAllReduceOverlapsTheRestOfBackward) {
  // Backward in two halves of 10 ms; bucket k's all-reduce (time T) starts when half k is done,
  // on the DP stream, in order. Bucket 1 starts at 10 ms and ends at 10 + T; bucket 2 starts at
  // max(20, 10 + T) and ends T later. Exposed communication: end - 20 ms.
  const coll::Machine c = star(4, false);
  for (Bytes bucket : {mebibytes(16), mebibytes(512)}) {
    tg::TaskGraph g(4);
    const std::uint32_t dp = g.add_group({"dp0", tg::Stream::kDp, {0, 1, 2, 3}});
    for (std::uint32_t r = 0; r < 4; ++r) {
      const tg::OpId b1 = g.add_compute(r, "bwd half 1", flops(5e11), bytes(0), tg::ComputeClass::kGemm);
      const tg::OpId d1[] = {b1};
      g.add_collective(r, dp, "bucket 1", CollectiveOp::kAllReduce, bucket, 1, d1);
      const tg::OpId b2 = g.add_compute(r, "bwd half 2", flops(5e11), bytes(0), tg::ComputeClass::kGemm, d1);
      const tg::OpId d2[] = {b2};
      g.add_collective(r, dp, "bucket 2", CollectiveOp::kAllReduce, bucket, 2, d2);
    }
    coll::CollectiveSpec spec;
    spec.op = CollectiveOp::kAllReduce;
    spec.size = bucket;
    spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
    const double T = to_seconds(coll::CollectiveSimulator(c).run(spec).time) * 1e3;
    Harness h(c);
    const double expected = std::max(20.0, 10.0 + T) + T;
    EXPECT_NEAR(ms(h.run(g)), expected, 1e-6) << format_bytes(bucket);
  }
}

// A pipeline of p stages (rank i = stage i) and m micro-batches; forward tf = 10 ms, backward
// tb = 20 ms per micro-batch and stage; activations and gradients travel by send/recv on the PP
// stream at no cost. GPipe runs every forward, then every backward; 1F1B warms up with p-1-i
// forwards, then alternates.
tg::TaskGraph pipeline(int p, int m, bool one_f_one_b) {
  tg::TaskGraph g(static_cast<std::uint32_t>(p));
  const auto P = static_cast<std::uint32_t>(p);
  std::vector<std::vector<tg::OpId>> fwd(P), bwd(P);
  auto tag = [&](int dir, int mb) { return static_cast<std::uint64_t>(dir * 100000 + mb); };
  for (std::uint32_t s = 0; s < P; ++s) {
    auto forward = [&](int j) {
      std::vector<tg::OpId> deps;
      if (s > 0) deps.push_back(g.add_recv(s, tg::Stream::kPp, s - 1, bytes(0), tag(0, j), "recv act"));
      const tg::OpId f = g.add_compute(s, "fwd", flops(5e11), bytes(0), tg::ComputeClass::kGemm, deps);
      if (s + 1 < P) {
        const tg::OpId d[] = {f};
        g.add_send(s, tg::Stream::kPp, s + 1, bytes(0), tag(0, j), "send act", d);
      }
      fwd[s].push_back(f);
    };
    auto backward = [&](int j) {
      std::vector<tg::OpId> deps{fwd[s][static_cast<std::size_t>(j)]};
      if (s + 1 < P) deps.push_back(g.add_recv(s, tg::Stream::kPp, s + 1, bytes(0), tag(1, j), "recv grad"));
      const tg::OpId b = g.add_compute(s, "bwd", flops(1e12), bytes(0), tg::ComputeClass::kGemm, deps);
      if (s > 0) {
        const tg::OpId d[] = {b};
        g.add_send(s, tg::Stream::kPp, s - 1, bytes(0), tag(1, j), "send grad", d);
      }
      bwd[s].push_back(b);
    };
    if (!one_f_one_b) {
      for (int j = 0; j < m; ++j) forward(j);
      for (int j = 0; j < m; ++j) backward(j);
    } else {
      const int warmup = std::min(m, p - 1 - static_cast<int>(s));
      int f = 0, b = 0;
      for (; f < warmup; ++f) forward(f);
      while (b < m) {
        if (f < m) forward(f++);
        backward(b++);
      }
    }
  }
  return g;
}

TEST(Executor, PipelineBubbleIsPMinusOneOverMPlusPMinusOne) {
  // Compute-only pipeline: iteration = (m + p - 1)(tf + tb); each stage computes m (tf + tb),
  // so the bubble fraction is (p - 1) / (m + p - 1), for GPipe and 1F1B alike.
  for (bool one_f_one_b : {false, true}) {
    for (auto [p, m] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 4}, std::pair{8, 16}}) {
      const coll::Machine c = star(p, true);
      Harness h(c);
      const double total = ms(h.run(pipeline(p, m, one_f_one_b)));
      EXPECT_NEAR(total, (m + p - 1) * 30.0, 1e-6) << (one_f_one_b ? "1F1B" : "GPipe") << " p=" << p << " m=" << m;
      const double bubble = 1 - m * 30.0 / total;
      EXPECT_NEAR(bubble, (p - 1.0) / (m + p - 1.0), 1e-9);
    }
  }
}

TEST(Executor, ComputeBesideCommunicationIsSlowedForTheOverlapOnly) {
  // Each of two ranks runs a 5 ms op, then at once a 20 ms GEMM on its compute stream and an
  // all-reduce of time T < 20 ms on its DP stream. With an overlap slowdown s the GEMM
  // progresses at 1/s while the all-reduce runs, so it ends at 5 + 20 + T (1 - 1/s).
  hw::GpuSpec gpu = testing::round_gpu();
  gpu.name = "TestGPU-interference";
  gpu.roofline.overlap_slowdown = 1.5;
  const coll::Machine c = testing::compute_star(2, false, gpu);
  tg::TaskGraph g(2);
  const std::uint32_t dp = g.add_group({"dp0", tg::Stream::kDp, {0, 1}});
  tg::OpId a = 0;
  for (std::uint32_t r = 0; r < 2; ++r) {
    const tg::OpId pre = g.add_compute(r, "pre", flops(0), bytes(5'000'000'000), tg::ComputeClass::kElementwise);
    const tg::OpId d[] = {pre};
    g.add_collective(r, dp, "all-reduce", CollectiveOp::kAllReduce, mebibytes(64), 1, d);
    const tg::OpId gemm = g.add_compute(r, "gemm", flops(1e12), bytes(0), tg::ComputeClass::kGemm, d);
    if (r == 0) a = gemm;
  }
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = mebibytes(64);
  spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
  const double T = to_seconds(coll::CollectiveSimulator(c).run(spec).time) * 1e3;
  ASSERT_LT(T, 20.0);
  Harness h(c);
  h.run(g);
  EXPECT_NEAR(ms(h.records[a].end), 5.0 + 20.0 + T * (1 - 1 / 1.5), 1e-6) << "T = " << T << " ms";
}

// The executor keeps each point-to-point transfer's and each group collective's schedule for its
// later runs (executor.h); a later run of another size must still take its own time. Rank 0
// sends A, then B, then A again to rank 1, each after the last has arrived; the four ranks
// all-reduce A, B and A in turn. Each sequence takes 2 t(A) + t(B), with t the size's time in a
// graph of that one transfer.
TEST(Executor, RepeatedTransfersOfAnotherSizeTakeTheirOwnTime) {
  const coll::Machine c = star(4, false);
  const Bytes sizes[] = {mebibytes(64), mebibytes(512), mebibytes(64)};
  const auto p2p = [](std::span<const Bytes> list) {
    tg::TaskGraph g(2);
    std::vector<tg::OpId> last;
    for (std::size_t k = 0; k < list.size(); ++k) {
      g.add_send(0, tg::Stream::kPp, 1, list[k], k, "send", last);
      last = {g.add_recv(1, tg::Stream::kPp, 0, list[k], k, "recv", last)};
    }
    return g;
  };
  const auto all_reduce = [](std::span<const Bytes> list) {
    tg::TaskGraph g(4);
    const std::uint32_t dp = g.add_group({"dp0", tg::Stream::kDp, {0, 1, 2, 3}});
    std::vector<std::vector<tg::OpId>> last(4);
    for (std::size_t k = 0; k < list.size(); ++k) {
      for (std::uint32_t r = 0; r < 4; ++r) {
        last[r] = {g.add_collective(r, dp, "all-reduce", CollectiveOp::kAllReduce, list[k], k + 1, last[r])};
      }
    }
    return g;
  };
  for (const auto& build : {std::function<tg::TaskGraph(std::span<const Bytes>)>(p2p),
                            std::function<tg::TaskGraph(std::span<const Bytes>)>(all_reduce)}) {
    const double a = ms(Harness(c).run(build(std::span(sizes, 1))));
    const double b = ms(Harness(c).run(build(std::span(sizes + 1, 1))));
    ASSERT_GT(b, 4 * a);  // the sizes take distinct times
    EXPECT_NEAR(ms(Harness(c).run(build(sizes))), 2 * a + b, 1e-9);
  }
}

}  // namespace
}  // namespace cs::rt
