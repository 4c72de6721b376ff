// Generated training graphs against closed forms, executed by the runtime.
#include "workloads/training_graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "hardware/catalog.h"
#include "sim/compute/compute_model.h"
#include "sim/compute/gemm_model.h"
#include "results/stall_attribution.h"
#include "sim/runtime/executor.h"
#include "tests/collectives/test_clusters.h"
#include "tests/support/small_gpt.h"
#include "workloads/layer_cost.h"
#include "workloads/memory.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

using test::small_gpt;

hw::GpuSpec test_gpu() { return testing::round_gpu(); }
coll::Machine star(int n, bool free_comm) { return testing::compute_star(n, free_comm); }

// small_gpt (tests/support/small_gpt.h): 8 blocks, h = 1024, 16 heads, vocab 8 (so the
// embedding and head are negligible).

// Building the graph of `plan` is a ConfigError whose message names `path` under /plan.
void expect_plan_error(const Model& m, const ParallelPlan& plan, const std::string& path) {
  try {
    build_training_graph(m, plan, "exp.json", "/plan");
    ADD_FAILURE() << "no error for " << path;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("at /plan/" + path), std::string::npos) << e.what();
  }
}

struct Execution {
  double seconds;
  SimTime end;
  tg::Timeline records;
};

Execution execute(const coll::Machine& m, const TrainingGraph& tgraph) {
  const topo::Cluster& c = m.cluster;
  sim::Simulator sim;
  coll::NetworkLayout layout(m);
  net::FlowNetwork net(sim, layout.capacities());
  topo::Router router(c);
  coll::AlgorithmTuner tuner(m);
  compute::ComputeModel compute("bf16");
  std::vector<topo::NodeId> gpus;  // simulated then mirrored ranks, each on its grid rank's GPU
  for (int r : tgraph.grid_rank) gpus.push_back(c.gpus()[static_cast<std::size_t>(r)]);
  rt::Executor ex(sim, net, router, layout, tuner, compute, tgraph.graph, gpus);
  ex.start();
  sim.run();
  EXPECT_TRUE(ex.finished());
  return {to_seconds(ex.end_time()), ex.end_time(), ex.timeline()};
}

// Sum of the compute times of one rank's ops, by the compute model.
double compute_seconds(const TrainingGraph& t, std::uint32_t rank) {
  compute::ComputeModel cm("bf16");
  double s = 0;
  for (const tg::Op& op : t.graph.ops()) {
    if (op.rank == rank && op.kind == tg::OpKind::kCompute) s += to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
  }
  return s;
}

TEST(TrainingGraph, DataParallelIsComputePlusTheExposedAllReduce) {
  // DP = 4, one gradient bucket (larger than all gradients): the all-reduce of every gradient
  // starts when the backward ends and the optimizer waits for it, so
  //   iteration = (compute before the optimizer) + T_allreduce(gradient bytes) + optimizer.
  const coll::Machine c = star(4, false);
  const Model m = small_gpt();
  ParallelPlan plan;
  plan.dp = 4;
  plan.micro_batch = 2;
  plan.global_batch = 16;
  plan.sequence_length = 1024;
  plan.dp_bucket_mib = 1e6;
  const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
  Bytes grads{0};
  double optimizer = 0;
  compute::ComputeModel cm("bf16");
  for (const tg::Op& op : t.graph.ops()) {
    if (op.rank == 0 && op.kind == tg::OpKind::kCollective) grads += op.bytes;
    if (op.rank == 0 && op.compute_class == tg::ComputeClass::kOptimizer) optimizer = to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
  }
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = grads;
  spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
  const double allreduce = to_seconds(coll::CollectiveSimulator(c).run(spec).time);
  const double expected = compute_seconds(t, 0) - optimizer + allreduce + optimizer;
  const Execution run = execute(c, t);
  EXPECT_NEAR(run.seconds, expected, expected * 1e-9);
  // Stall attribution: compute, then the whole all-reduce exposed as DP communication.
  for (const auto& b : results::attribute_stalls(t.graph, run.records, run.end)) {
    EXPECT_NEAR(to_seconds(b.total()), run.seconds, 1e-9);
    EXPECT_NEAR(to_seconds(b.time[static_cast<int>(results::Stall::kDp)]), allreduce, 1e-9);
    EXPECT_NEAR(to_seconds(b.time[static_cast<int>(results::Stall::kCompute)]), compute_seconds(t, 0), 1e-9);
  }
  // Small buckets overlap with the backward: never slower than one bucket, never faster than
  // compute alone.
  plan.dp_bucket_mib = 4;
  const TrainingGraph bucketed = build_training_graph(m, plan, "test", "/plan");
  const double overlapped = execute(c, bucketed).seconds;
  EXPECT_LT(overlapped, expected);
  EXPECT_GT(overlapped, compute_seconds(bucketed, 0));
}

// Eight identical layers and nothing else (no embedding, no head): every stage does the same work.
Model uniform_layers() {
  Model m;
  m.name = "uniform";
  m.family = ModelFamily::kCnn;
  for (int i = 0; i < 8; ++i) m.cnn.layers.push_back({"layer" + std::to_string(i), flops(1e11), 1'000'000, 1'000'000, 100'000});
  return m;
}

TEST(TrainingGraph, PipelineBubbleMatchesTheClosedForm) {
  // Compute-only pipeline (free communication), p = 4 identical stages of 2 layers, m
  // micro-batches: iteration = (m + p - 1)(t_f + t_b) + optimizer, with t_f and t_b one stage's
  // forward and backward per micro-batch; the bubble is (p - 1) / (m + p - 1).
  const Model m = uniform_layers();
  for (auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    for (int micro : {4, 8, 16}) {
      const coll::Machine c = star(4, true);
      ParallelPlan plan;
      plan.pp = 4;
      plan.schedule = schedule;
      plan.micro_batch = 1;
      plan.global_batch = micro;
      plan.sequence_length = 1024;
      const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
      compute::ComputeModel cm("bf16");
      double per_micro = 0, optimizer = 0;  // stage 1 (no embedding, no head)
      for (const tg::Op& op : t.graph.ops()) {
        if (op.rank != 1 || op.kind != tg::OpKind::kCompute) continue;
        const double d = to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
        (op.compute_class == tg::ComputeClass::kOptimizer ? optimizer : per_micro) += d;
      }
      per_micro /= micro;
      const double expected = (micro + 4 - 1) * per_micro + optimizer;
      const Execution run = execute(c, t);
      const double total = run.seconds;
      EXPECT_NEAR(total, expected, expected * 1e-9) << "m=" << micro;
      EXPECT_NEAR(1 - (micro * per_micro) / (total - optimizer), 3.0 / (micro + 3), 1e-9);
      // Stall attribution: every stage computes m (t_f + t_b) + optimizer and spends the rest in
      // the pipeline bubble, (p - 1)(t_f + t_b); the categories add up to the iteration.
      const auto stalls = results::attribute_stalls(t.graph, run.records, run.end);
      for (const auto& b : stalls) {
        EXPECT_NEAR(to_seconds(b.total()), total, 1e-9);
        EXPECT_NEAR(to_seconds(b.time[static_cast<int>(results::Stall::kBubble)]), 3 * per_micro, 1e-6);
        EXPECT_NEAR(to_seconds(b.time[static_cast<int>(results::Stall::kCompute)]), micro * per_micro + optimizer, 1e-6);
      }
    }
  }
}

TEST(TrainingGraph, InterleavedBubbleIsPMinusOneOverVmPlusPMinusOne) {
  // v model chunks per GPU: a chunk's forward and backward per micro-batch take t_c = (t_f + t_b)
  // / v, and the iteration is (v m + p - 1) t_c + optimizer: bubble (p - 1) / (v m + p - 1).
  const Model m = uniform_layers();
  for (auto [p, v, micro] : {std::tuple{2, 2, 4}, std::tuple{2, 4, 8}, std::tuple{4, 2, 8}, std::tuple{4, 2, 16}}) {
    const coll::Machine c = star(p, true);
    ParallelPlan plan;
    plan.pp = p;
    plan.schedule = PipelineSchedule::kInterleaved;
    plan.virtual_stages = v;
    plan.micro_batch = 1;
    plan.global_batch = micro;
    const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
    compute::ComputeModel cm("bf16");
    double work = 0, optimizer = 0;  // stage 0: all its chunks, all micro-batches
    for (const tg::Op& op : t.graph.ops()) {
      if (op.rank != 0 || op.kind != tg::OpKind::kCompute) continue;
      const double d = to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
      (op.compute_class == tg::ComputeClass::kOptimizer ? optimizer : work) += d;
    }
    const double t_chunk = work / (micro * v);
    const Execution run = execute(c, t);
    const double expected = (v * micro + p - 1) * t_chunk + optimizer;
    EXPECT_NEAR(run.seconds, expected, expected * 1e-9) << "p=" << p << " v=" << v << " m=" << micro;
    EXPECT_NEAR(1 - work / (run.seconds - optimizer), (p - 1.0) / (v * micro + p - 1.0), 1e-9);
  }
  // Bad interleaved plans name their key.
  ParallelPlan bad;
  bad.pp = 2;
  bad.schedule = PipelineSchedule::kInterleaved;
  bad.virtual_stages = 3;  // 8 layers do not split into 6 chunks
  bad.global_batch = 4;
  expect_plan_error(m, bad, "virtual_stages");
}

TEST(TrainingGraph, InterleavedWithAnUnevenSplitFollowsItsBottleneckStage) {
  // Interleaved 1F1B with layers_per_stage (Megatron-Core: every stage's layers cut into v equal
  // chunks, chunk k of stage s the (k p + s)-th slice). p = 2, v = 2, 8 layers split 2 + 6:
  // chunks of 1 layer on stage 0 and of 3 on stage 1. Free communication. Stage 1 is the
  // bottleneck and, stage 0 being three times faster, never waits once it has started: it starts
  // after stage 0's first chunk forward f0, then computes its m v chunk forwards and backwards
  // back to back; stage 0 ends with its last chunk backward b0 after that; each then runs its
  // optimizer. So the iteration is
  //     f0 + m v (f1 + b1) + max(opt1, b0 + opt0)
  // and stage 1's bubble is f0 (plus what its optimizer waits, nothing here).
  const Model m = uniform_layers();
  for (int micro : {2, 4, 8}) {
    const coll::Machine c = star(2, true);
    ParallelPlan plan;
    plan.pp = 2;
    plan.schedule = PipelineSchedule::kInterleaved;
    plan.virtual_stages = 2;
    plan.layers_per_stage = {2, 6};
    plan.micro_batch = 1;
    plan.global_batch = micro;
    const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
    compute::ComputeModel cm("bf16");
    double fwd[2] = {0, 0}, bwd[2] = {0, 0}, opt[2] = {0, 0};
    for (tg::OpId id = 0; id < t.graph.size(); ++id) {
      const tg::Op& op = t.graph.ops()[id];
      if (op.kind != tg::OpKind::kCompute) continue;
      const double d = to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
      if (op.compute_class == tg::ComputeClass::kOptimizer) opt[op.rank] += d;
      else if (t.graph.name_of(id).find("bwd") != std::string::npos) bwd[op.rank] += d;
      else fwd[op.rank] += d;
    }
    const double chunks = 2.0 * micro;
    const double f0 = fwd[0] / chunks, b0 = bwd[0] / chunks, f1 = fwd[1] / chunks, b1 = bwd[1] / chunks;
    EXPECT_NEAR(f1, 3 * f0, f0 * 1e-9);  // 3 layers per chunk against 1
    const double expected = f0 + chunks * (f1 + b1) + std::max(opt[1], b0 + opt[0]);
    EXPECT_NEAR(execute(c, t).seconds, expected, expected * 1e-9) << "m=" << micro;
  }
}

TEST(TrainingGraph, InterleavedUnevenSplitNeedsChunksOfEqualLayers) {
  // 3 layers on stage 0 do not cut into v = 2 equal chunks: Megatron-Core refuses it, and so
  // does the plan check, naming the entry.
  ParallelPlan bad;
  bad.pp = 2;
  bad.schedule = PipelineSchedule::kInterleaved;
  bad.virtual_stages = 2;
  bad.layers_per_stage = {3, 5};
  bad.global_batch = 4;
  expect_plan_error(uniform_layers(), bad, "layers_per_stage/0");
}

TEST(TrainingGraph, ZeroStagesMoveTheClosedFormBytesPerMicroBatch) {
  // DP 4, m micro-batches, 16-bit weights and gradients (grad_reduce_dtype bf16), Psi the
  // model's parameter bytes in 16 bits (2 per parameter). Sizes S of the collectives one rank
  // issues per iteration (each moves (N-1)/N S per GPU):
  //   ZeRO-0   one all-reduce of the gradients, Psi, after the last micro-batch
  //   ZeRO-1   one reduce-scatter, Psi, after the last micro-batch; an all-gather of the updated
  //            weights, Psi
  //   ZeRO-2   a reduce-scatter of Psi after every micro-batch (DeepSpeed and FSDP keep only
  //            their gradient shard); the all-gather of the weights, Psi
  //   ZeRO-3   per micro-batch: all-gather Psi for the forward, Psi again for the backward,
  //            reduce-scatter Psi: 3 Psi per micro-batch; with reshard_after_forward false the
  //            backward's all-gather is gone: 2 Psi.
  const Model m = small_gpt();
  ParallelPlan plan;
  plan.dp = 4;
  plan.micro_batch = 1;
  plan.sequence_length = 1024;
  plan.grad_reduce_bytes = 2;
  const double psi = 2.0 * static_cast<double>(parameter_count(m));
  for (int micro : {1, 3}) {
    plan.global_batch = 4 * micro;
    struct Sums {
      double all_reduce = 0, reduce_scatter = 0, all_gather = 0;
    };
    auto sums = [&](ZeroStage zero, bool reshard) {
      plan.zero = zero;
      plan.reshard_after_forward = reshard;
      const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
      Sums out;
      for (const tg::Op& op : t.graph.ops()) {
        if (op.rank != 0 || op.kind != tg::OpKind::kCollective) continue;
        const double b = static_cast<double>(op.bytes.value());
        if (op.collective == CollectiveOp::kAllReduce) out.all_reduce += b;
        if (op.collective == CollectiveOp::kReduceScatter) out.reduce_scatter += b;
        if (op.collective == CollectiveOp::kAllGather) out.all_gather += b;
      }
      return out;
    };
    const double tol = psi * 1e-9;
    const Sums z0 = sums(ZeroStage::kNone, true);
    EXPECT_NEAR(z0.all_reduce, psi, tol);
    EXPECT_EQ(z0.reduce_scatter + z0.all_gather, 0);
    const Sums z1 = sums(ZeroStage::kOptimizer, true);
    EXPECT_NEAR(z1.reduce_scatter, psi, tol) << "m=" << micro;
    EXPECT_NEAR(z1.all_gather, psi, tol);
    const Sums z2 = sums(ZeroStage::kGradients, true);
    EXPECT_NEAR(z2.reduce_scatter, micro * psi, tol) << "m=" << micro;
    EXPECT_NEAR(z2.all_gather, psi, tol);
    const Sums z3 = sums(ZeroStage::kParameters, true);
    EXPECT_NEAR(z3.all_gather + z3.reduce_scatter, 3 * micro * psi, tol) << "m=" << micro;
    EXPECT_NEAR(z3.reduce_scatter, micro * psi, tol);
    const Sums kept = sums(ZeroStage::kParameters, false);
    EXPECT_NEAR(kept.all_gather + kept.reduce_scatter, 2 * micro * psi, tol) << "m=" << micro;
    EXPECT_EQ(z0.all_reduce + z1.all_reduce + z2.all_reduce + z3.all_reduce + kept.all_reduce, psi);
  }
}

TEST(TrainingGraph, OverlappedParamGatherHidesAllButTheFirstUnitsGather) {
  // ZeRO-1 (Megatron-Core's distributed optimizer) on DP 2, one micro-batch, 8 identical layers.
  // Without overlap the updated weights are all-gathered after the step, whole: the iteration
  // ends with an all-gather of 8 w bytes (w one layer's weights). With overlap_param_gather the
  // gathers run unit by unit on the DP stream while the forward proceeds; each takes far less
  // than a layer's forward, so only the first layer's waits:
  //     T(overlap) = T(no overlap) - t_AG(8 w) + t_AG(w).
  const Model m = uniform_layers();
  const coll::Machine c = star(2, false);
  ParallelPlan plan;
  plan.dp = 2;
  plan.zero = ZeroStage::kOptimizer;
  plan.micro_batch = 1;
  plan.global_batch = 2;
  const double plain = execute(c, build_training_graph(m, plan, "test", "/plan")).seconds;
  plan.overlap_param_gather = true;
  const TrainingGraph overlapped = build_training_graph(m, plan, "test", "/plan");
  int gathers = 0;
  Bytes w{0};
  for (const tg::Op& op : overlapped.graph.ops()) {
    if (op.rank == 0 && op.kind == tg::OpKind::kCollective && op.collective == CollectiveOp::kAllGather) {
      ++gathers;
      w = op.bytes;
    }
  }
  EXPECT_EQ(gathers, 8);
  auto all_gather = [&](Bytes size) {
    coll::CollectiveSpec spec;
    spec.op = CollectiveOp::kAllGather;
    spec.size = size;
    spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
    return to_seconds(coll::CollectiveSimulator(c).run(spec).time);
  };
  const double expected = plain - all_gather(Bytes{8 * w.value()}) + all_gather(w);
  EXPECT_NEAR(execute(c, overlapped).seconds, expected, expected * 1e-9);
  // It needs a sharded optimizer to gather for.
  plan.zero = ZeroStage::kNone;
  expect_plan_error(m, plan, "overlap_param_gather");
}

TEST(TrainingGraph, Zero3PrefetchHidesAllButEachPasssFirstGather) {
  // ZeRO-3 on DP 2, one micro-batch, 8 identical layers of w bytes of weights. Without prefetch
  // each layer's forward waits for its own all-gather; with zero_prefetch 1 the gather of layer
  // u + 1 is issued when layer u starts and runs beside its compute (a layer's forward outlasts
  // a gather here), so only the first layer's waits. The backward gathers again (reshard after
  // forward), from the last layer down, and its gathers hide the same way:
  //     T(prefetch 1) = T(prefetch 0) - 2 x 7 t_AG(w).
  const Model m = uniform_layers();
  const coll::Machine c = star(2, false);
  ParallelPlan plan;
  plan.dp = 2;
  plan.zero = ZeroStage::kParameters;
  plan.micro_batch = 1;
  plan.global_batch = 2;
  plan.zero_prefetch = 0;
  const TrainingGraph none = build_training_graph(m, plan, "test", "/plan");
  const double plain = execute(c, none).seconds;
  plan.zero_prefetch = 1;
  const TrainingGraph ahead = build_training_graph(m, plan, "test", "/plan");
  // The same collectives either way: 16 gathers of w (8 forward, 8 backward) per rank.
  auto gathers = [](const TrainingGraph& t, Bytes& w) {
    int n = 0;
    for (const tg::Op& op : t.graph.ops()) {
      if (op.rank == 0 && op.kind == tg::OpKind::kCollective && op.collective == CollectiveOp::kAllGather) ++n, w = op.bytes;
    }
    return n;
  };
  Bytes w{0};
  EXPECT_EQ(gathers(none, w), 16);
  EXPECT_EQ(gathers(ahead, w), 16);
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllGather;
  spec.size = w;
  spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
  const double t_ag = to_seconds(coll::CollectiveSimulator(c).run(spec).time);
  const double expected = plain - 14 * t_ag;
  EXPECT_NEAR(execute(c, ahead).seconds, expected, expected * 1e-9);
}

TEST(TrainingGraph, TpCommOverlapHidesTheRingExchangeAndExposesTheLastReduceScatterChunk) {
  // TP 2 with sequence parallelism, one micro-batch. With tp_comm_overlap every block
  // all-gather of S bytes becomes TE's ring exchange: GEMM chunk 0 on the local shard, one step
  // passing the shard (S/2) to the other rank beside it (with two ranks an all-to-all of S), GEMM
  // chunk 1 after it; every block reduce-scatter of S runs as 2 chunks of S/2 by userbuffers'
  // one-step kernel (the direct algorithm), after its GEMM chunk. A GEMM chunk takes far longer
  // than a step here, so the all-gathers are hidden and each reduce-scatter exposes its last chunk:
  //     T(overlap) = T(no overlap) - sum over all-gathers of t(S)
  //                                - sum over reduce-scatters of (t(S) - t_direct(S/2)),
  // t by the algorithm `auto` picks (the plain graph's), t_direct by the direct one. The
  // embedding's and head's collectives are not overlapped (TE overlaps the blocks' linear
  // layers), so they count as before.
  const coll::Machine c = star(2, false);
  ParallelPlan plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = 1;
  plan.sequence_length = 1024;
  const TrainingGraph plain = build_training_graph(small_gpt(), plan, "test", "/plan");
  plan.tp_comm_overlap = true;
  const TrainingGraph overlapped = build_training_graph(small_gpt(), plan, "test", "/plan");
  // Count the TP collectives by kind, size and algorithm in both graphs (rank 0).
  using Key = std::tuple<CollectiveOp, std::int64_t, CollectiveAlgorithm>;
  std::map<Key, int> before, after;
  for (const tg::Op& op : plain.graph.ops()) {
    if (op.rank == 0 && op.kind == tg::OpKind::kCollective) ++before[{op.collective, op.bytes.value(), op.algorithm}];
  }
  for (const tg::Op& op : overlapped.graph.ops()) {
    if (op.rank == 0 && op.kind == tg::OpKind::kCollective) ++after[{op.collective, op.bytes.value(), op.algorithm}];
  }
  auto time_of = [&](CollectiveOp kind, std::int64_t bytes, CollectiveAlgorithm algorithm) {
    coll::CollectiveSpec spec;
    spec.op = kind;
    spec.size = Bytes{bytes};
    spec.algorithm = algorithm;
    spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
    return to_seconds(coll::CollectiveSimulator(c).run(spec).time);
  };
  constexpr CollectiveAlgorithm kAuto = CollectiveAlgorithm::kAuto, kDirect = CollectiveAlgorithm::kDirect;
  double saved = 0;
  int gathers = 0, scatters = 0;
  for (const auto& [key, count] : before) {
    const auto [op, bytes, algorithm] = key;
    ASSERT_EQ(algorithm, kAuto);
    const int blocks = count - (after.count(key) ? after.at(key) : 0);  // the ones now chunked
    if (blocks <= 0) continue;
    if (op == CollectiveOp::kAllGather) {
      EXPECT_EQ((after[{CollectiveOp::kAllToAll, bytes, kAuto}]), blocks);  // one step: S/2 each way
      saved += blocks * time_of(op, bytes, kAuto);
      gathers += blocks;
    } else {
      ASSERT_EQ(op, CollectiveOp::kReduceScatter);
      EXPECT_EQ((after[{op, bytes / 2, kDirect}]), 2 * blocks);
      saved += blocks * (time_of(op, bytes, kAuto) - time_of(op, bytes / 2, kDirect));
      scatters += blocks;
    }
  }
  // Every block: 2 all-gathers and 2 reduce-scatters forward, as many backward.
  EXPECT_GE(gathers, 8 * 2);
  EXPECT_GE(scatters, 8 * 2);
  // Every op's duration is rounded up to the picosecond (core/units.h): within 1 ps per op.
  const double rounding = 1e-12 * static_cast<double>(overlapped.graph.size());
  const double expected = execute(c, plain).seconds - saved;
  EXPECT_NEAR(execute(c, overlapped).seconds, expected, rounding);
  // The same compute, cut differently.
  EXPECT_NEAR(compute_seconds(overlapped, 0), compute_seconds(plain, 0), rounding);
}

TEST(TrainingGraph, TensorParallelCollectivesSitOnTheCriticalPath) {
  // TP = 2 without sequence parallelism: every block runs two all-reduces forward and two
  // backward; they add to the iteration (one rank's compute alone is a lower bound).
  const coll::Machine c = star(2, false);
  ParallelPlan plan;
  plan.tp = 2;
  plan.micro_batch = 1;
  plan.global_batch = 2;
  plan.sequence_length = 1024;
  const TrainingGraph t = build_training_graph(small_gpt(), plan, "test", "/plan");
  int tp_collectives = 0;
  for (const tg::Op& op : t.graph.ops()) tp_collectives += op.rank == 0 && op.kind == tg::OpKind::kCollective;
  // Per micro-batch: every block's forward and backward TP collectives (2 + 2 all-reduces), and
  // the embedding's and head's (vocab-parallel) ones, as the layer costs count them.
  const CostParams cp = cost_params(small_gpt(), plan);
  const LayerCost block = transformer_block_cost(small_gpt(), cp), emb = embedding_cost(small_gpt(), cp), head = head_cost(small_gpt(), cp);
  EXPECT_EQ(block.tp_forward.all_reduce + block.tp_backward.all_reduce, 4);
  const int per_micro = 8 * (block.tp_forward.count() + block.tp_backward.count()) + emb.tp_forward.count() +
                        emb.tp_backward.count() + head.tp_forward.count() + head.tp_backward.count();
  EXPECT_EQ(tp_collectives, 2 * per_micro);
  EXPECT_GT(execute(c, t).seconds, compute_seconds(t, 0));
}

TEST(TrainingGraph, PipelineCutsScatterAndGatherOverTensorParallelism) {
  // TP 2 x PP 2 without SP: each TP rank sends half of an activation across the cut and the
  // receiving stage all-gathers the halves over its TP group (Megatron's default); switched
  // off, every TP rank sends the whole activation and nothing is gathered.
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.micro_batch = 1;
  plan.global_batch = 4;
  plan.sequence_length = 1024;
  const Bytes activation{2 * 1024 * 1024};  // T h x 2 B
  for (bool sg : {true, false}) {
    plan.pp_scatter_gather = sg;
    const TrainingGraph t = build_training_graph(small_gpt(), plan, "test", "/plan");
    int sends = 0, gathers = 0;
    for (const tg::Op& op : t.graph.ops()) {
      if (op.kind == tg::OpKind::kSend) {
        ++sends;
        EXPECT_EQ(op.bytes, sg ? Bytes{activation.value() / 2} : activation);
      }
      if (op.kind == tg::OpKind::kCollective && op.collective == CollectiveOp::kAllGather) {
        ++gathers;
        EXPECT_EQ(op.bytes, activation);
      }
    }
    EXPECT_GT(sends, 0);
    EXPECT_EQ(gathers, sg ? sends : 0) << "one all-gather per received activation or gradient";
    EXPECT_GT(execute(star(4, false), t).seconds, 0);
  }
}

TEST(TrainingGraph, EveryByteOfABlockBelongsToOneOp) {
  // The HBM bytes of all the ops one micro-batch gives a block, summed (8 blocks of the small
  // GPT: h = 1024, a = 16, f = 4h, no dropout; b = 2, s = 1024, T = b s; bf16), against the
  // closed form per block on each of t GPUs (t = 1, 2, no SP):
  //   GEMMs       each reads its operands and writes its result once, 2 (mk + kn + mn) bytes:
  //               QKV (T, 3h/t, h), output (T, h, h/t), fc1 (T, 4h/t, h), fc2 (T, h, 4h/t) give
  //               G = 2 (4 T h + 12 T h/t + 12 h^2/t) forward; backward 2G (dX and dW of each)
  //   attention   Q, K, V read and the context written, q = 8 T h/t, and the score tensor
  //               S = 2 b (a/t) s^2 through HBM 4 times forward, 7 backward: A_f = q + 4S,
  //               A_b = 2q + 7S; flash attention: A_f = q, A_b = 2q, and no score traffic
  //   elementwise norms 2 x 2 T h + residual adds 2 x 3 T h + bias-GELU 2 x 4 T h/t forward,
  //               E_f = 2 (10 T h + 8 T h/t); backward 2 x 3 T h + 2 x 3 T h + 3 x 4 T h/t,
  //               E_b = 2 (12 T h + 12 T h/t)
  // One micro-batch: G + A_f + E_f forward, 2G + A_b + E_b backward, and the recomputation:
  // nothing (none, or flash attention short of full: inside the fused backward), the attention
  // forward A_f again (selective), the whole forward G + A_f + E_f again (full).
  const Model m = small_gpt();
  const std::int64_t b = 2, s = 1024, h = 1024, a = 16, T = b * s;
  for (const int t : {1, 2}) {
    for (const bool flash : {false, true}) {
      for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        ParallelPlan plan;
        plan.tp = t;
        plan.micro_batch = b;
        plan.global_batch = b;
        plan.sequence_length = s;
        plan.recompute = r;
        plan.flash_attention = flash;
        const TrainingGraph graph = build_training_graph(m, plan, "test", "/plan");
        Bytes blocks{0};
        for (tg::OpId id = 0; id < graph.graph.size(); ++id) {
          const tg::Op& op = graph.graph.ops()[id];
          const std::string& name = graph.graph.name_of(id);
          const bool other = name.starts_with("embedding") || name.starts_with("head") || name.starts_with("optimizer");
          if (op.rank == 0 && op.kind == tg::OpKind::kCompute && !other) blocks += op.bytes;
        }
        const std::int64_t G = 2 * (4 * T * h + 12 * T * h / t + 12 * h * h / t);
        const std::int64_t q = 8 * T * h / t, S = 2 * b * (a / t) * s * s;
        const std::int64_t A_f = flash ? q : q + 4 * S, A_b = flash ? 2 * q : 2 * q + 7 * S;
        const std::int64_t E_f = 2 * (10 * T * h + 8 * T * h / t), E_b = 2 * (12 * T * h + 12 * T * h / t);
        std::int64_t per_block = (G + A_f + E_f) + (2 * G + A_b + E_b);
        if (r == Recompute::kSelective && !flash) per_block += A_f;
        if (r == Recompute::kFull) per_block += G + A_f + E_f;
        EXPECT_EQ(blocks.value(), 8 * per_block) << "t=" << t << " flash=" << flash << " recompute=" << static_cast<int>(r);
      }
    }
  }
}

TEST(TrainingGraph, ForwardGemmsOfALongSequenceAreComputeBound) {
  // Llama 3 8B on an H100, one sample of 16k or 32k tokens, no flash attention, t = 1: the
  // block's forward GEMM op does F = 2 T h (h + 2 k_v + h + 3 f) = 436.2M T FLOPs and moves
  // only its operands and results, 2 (17 T h + 53248 h) bytes (the weights once, 218.1M
  // elements): about 2 600 (16k) and 2 900 (32k) FLOP per byte, far above the H100's ridge
  // (989.4 TFLOP/s x 0.72 over 3.35 TB/s x 0.8: 266 FLOP per byte), so on the roofline it takes
  // its FLOP time, kernel_launch + F / (peak x eff_gemm). The attention scores, 2 b a s^2 bytes
  // (69 GB at 32k), are the attention op's. Before each op counted only its own bytes, this op
  // also carried twice the saved activations (scores included): 1.46x (16k), 2.73x (32k).
  const Model m = load_model("llama3-8b");
  const hw::GpuSpec& gpu = hw::Catalog::builtin().gpu("H100-SXM", "test", "/gpu");
  const compute::ComputeModel cm("bf16");
  for (const int s : {16384, 32768}) {
    ParallelPlan plan;
    plan.micro_batch = 1;
    plan.global_batch = 1;
    plan.sequence_length = s;
    plan.flash_attention = false;
    const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
    int checked = 0;
    double worst = 0;  // the largest time / FLOP time over the blocks' forward GEMM ops
    for (tg::OpId id = 0; id < t.graph.size(); ++id) {
      const tg::Op& op = t.graph.ops()[id];
      if (t.graph.name_of(id) != "block fwd") continue;
      ++checked;
      const double flop_time = to_seconds(gpu.roofline.kernel_launch) +
                               op.flops.value() / (compute::full_wave_rate(gpu, "bf16").value() * gpu.roofline.gemm);
      worst = std::max(worst, to_seconds(cm.time(gpu, op.compute_class, op.flops, op.bytes)) / flop_time);
    }
    EXPECT_EQ(checked, m.transformer.layers);
    EXPECT_NEAR(worst, 1.0, 0.03) << "s=" << s << ": the forward GEMM op takes " << worst << "x its FLOP time";
  }
}

std::string plan_error(ParallelPlan plan, int gpus_unused = 0) {
  (void)gpus_unused;
  try {
    build_training_graph(small_gpt(), plan, "exp.json", "/plan");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainingGraph, BadPlansNameTheFileAndPath) {
  ParallelPlan p;
  p.tp = 3;  // 16 heads
  p.global_batch = 3;
  EXPECT_NE(plan_error(p).find("exp.json at /plan/tp: the model's 16 attention heads are not divisible by tp = 3"), std::string::npos) << plan_error(p);
  p = {};
  p.pp = 3;  // 8 blocks
  p.global_batch = 3;
  EXPECT_NE(plan_error(p).find("at /plan/pp: the model's 8 layers are not divisible by pp = 3"), std::string::npos) << plan_error(p);
  p.layers_per_stage = {3, 3, 2};
  EXPECT_EQ(plan_error(p), "no error");
  p = {};
  p.pp = 4;
  p.global_batch = 2;
  EXPECT_NE(plan_error(p).find("at /plan/global_batch: 2 micro-batches are fewer than the 4 pipeline stages"), std::string::npos) << plan_error(p);
  p = {};
  p.dp = 2;
  p.global_batch = 3;
  EXPECT_NE(plan_error(p).find("at /plan/global_batch"), std::string::npos);
}

// small_gpt with 4 blocks of E experts of width 1024, each token routed to 2.
Model small_mixture(int experts) {
  Model m = small_gpt();
  m.transformer.layers = 4;
  m.transformer.experts = experts;
  m.transformer.top_k = 2;
  m.transformer.expert_ffn_hidden = 1024;
  return m;
}

TEST(TrainingGraph, ExpertAllToAllsCarryTheRoutedTokens) {
  // A mixture on DP 4 = EP 4: 4 blocks, the first dense (dense_layers 1), then E = 8 experts of
  // 1024 (top_k 2) and one shared expert; h = 1024, s = 1024, b = 1: the router sees T_r = 1024
  // tokens and sends u = k T_r / E = 256 to each expert. Each block with experts runs four
  // all-to-alls per micro-batch (dispatch and combine, forward and backward) of e h A bytes, A the
  // buffer of one GPU in tokens (block_shape.h):
  //   dropless            A = k T_r = 2048 (every routed copy)
  //   capacity 0.5        C = ceil(0.5 u) = 128 per GPU and expert: A = E C = 1024
  //   capacity 1.25, pad  C = 320: A = E C = 2560
  // and (ep - 1)/ep of each leaves the GPU. The dense block runs none.
  Model m = small_mixture(8);
  m.transformer.shared_experts = 1;
  m.transformer.dense_layers = 1;
  ParallelPlan plan;
  plan.dp = 4;
  plan.ep = 4;
  plan.micro_batch = 1;
  plan.global_batch = 8;  // 2 micro-batches
  plan.sequence_length = 1024;
  struct Case {
    double factor;
    bool pad;
    std::int64_t a;
  };
  for (const Case& c : {Case{0, false, 2048}, Case{0.5, false, 1024}, Case{1.25, true, 2560}}) {
    SCOPED_TRACE(c.a);
    plan.moe_capacity_factor = c.factor;
    plan.moe_pad_to_capacity = c.pad;
    const TrainingGraph g = build_training_graph(m, plan, "test", "/plan");
    int count = 0;
    for (const tg::Op& op : g.graph.ops()) {
      if (op.rank != 0 || op.kind != tg::OpKind::kCollective || op.collective != CollectiveOp::kAllToAll) continue;
      ++count;
      EXPECT_EQ(op.bytes, Bytes{2 * 1024 * c.a});
      EXPECT_EQ(g.graph.groups()[op.group].ranks.size(), 4u);
    }
    EXPECT_EQ(count, 3 * 2 * 4);  // 3 blocks with experts x 2 micro-batches x 4
  }
}

TEST(TrainingGraph, ExpertGradientsAndStatesGoOverTheExpertDataParallelGroup) {
  // A mixture on DP 4 with EP 2: GPU k holds experts of block k mod 2, so its expert gradients
  // are reduced over the ranks holding the same experts, {k mod 2, k mod 2 + 2} (Megatron-Core's
  // expert_data_parallel_group, dp cp / ep = 2 ranks), and only its dense gradients over all
  // four. With ZeRO-1 (the distributed optimizer) the reduce-scatters and the all-gathers after
  // the step move, per iteration, the dense weights' bytes Psi_d over the group of four and the
  // experts' Psi_e over the group of two; ZeRO-3 gathers each micro-batch's weights likewise.
  const Model m = small_mixture(4);
  ParallelPlan plan;
  plan.dp = 4;
  plan.ep = 2;
  plan.micro_batch = 1;
  plan.global_batch = 8;  // 2 micro-batches
  plan.sequence_length = 1024;
  const CostParams params = cost_params(m, plan);
  const LayerCost block = transformer_block_cost(m, params, 0);
  ASSERT_GT(block.expert_parameters, 0);
  const std::int64_t psi_e = 4 * 2 * block.expert_parameters;  // 4 blocks, 16-bit
  std::int64_t psi = 2 * (embedding_cost(m, params).parameters + head_cost(m, params).parameters) + 4 * block.weights.value();
  const std::int64_t psi_d = psi - psi_e;
  for (ZeroStage zero : {ZeroStage::kOptimizer, ZeroStage::kParameters}) {
    SCOPED_TRACE(static_cast<int>(zero));
    plan.zero = zero;
    const TrainingGraph g = build_training_graph(m, plan, "test", "/plan", false);
    Bytes dense_rs{0}, expert_rs{0}, dense_ag{0}, expert_ag{0};
    const std::uint32_t rank = 1;  // grid rank 1 (all simulated, in grid order): experts of position 1
    for (const tg::Op& op : g.graph.ops()) {
      if (op.rank != rank || op.kind != tg::OpKind::kCollective || op.collective == CollectiveOp::kAllToAll) continue;
      std::vector<std::uint32_t> grid;
      for (std::uint32_t r : g.graph.groups()[op.group].ranks) grid.push_back(g.grid_rank[r]);
      std::sort(grid.begin(), grid.end());
      const bool expert = grid == std::vector<std::uint32_t>{1, 3};
      if (!expert) {
        EXPECT_EQ(grid, (std::vector<std::uint32_t>{0, 1, 2, 3})) << g.graph.groups()[op.group].name;
      }
      if (op.collective == CollectiveOp::kReduceScatter) (expert ? expert_rs : dense_rs) += op.bytes;
      if (op.collective == CollectiveOp::kAllGather) (expert ? expert_ag : dense_ag) += op.bytes;
    }
    const std::int64_t passes = zero == ZeroStage::kParameters ? 2 * 2 : 1;  // forward + backward per micro-batch
    const std::int64_t reductions = zero == ZeroStage::kParameters ? 2 : 1;  // ZeRO-3 reduces every micro-batch
    EXPECT_EQ(dense_rs, Bytes{reductions * psi_d});
    EXPECT_EQ(expert_rs, Bytes{reductions * psi_e});
    EXPECT_EQ(dense_ag, Bytes{passes * psi_d});
    EXPECT_EQ(expert_ag, Bytes{passes * psi_e});
  }
  // Folded by the expert-parallel symmetries, the iteration is the full simulation's.
  plan.zero = ZeroStage::kOptimizer;
  const coll::Machine c = star(4, false);
  const double full = execute(c, build_training_graph(m, plan, "test", "/plan", false)).seconds;
  EXPECT_NEAR(execute(c, build_training_graph(m, plan, "test", "/plan", true)).seconds, full, full * 1e-12);
}

}  // namespace
}  // namespace cs::wl

namespace cs::wl {
namespace {

double iteration_seconds(const coll::Machine& c, const Model& m, const ParallelPlan& plan, bool symmetry) {
  return execute(c, build_training_graph(m, plan, "test", "/plan", symmetry)).seconds;
}

TEST(TrainingGraphSymmetry, OneRankPerStageGivesTheFullSimulationsResult) {
  // DP 2 x TP 2 x PP 2 = 8 GPUs behind one switch: replicas and TP ranks are identical and
  // their transfers use disjoint links, so simulating one rank per stage (the others mirrored)
  // gives exactly the full simulation's iteration time, with 2 simulated ranks instead of 8.
  const coll::Machine c = star(8, false);
  ParallelPlan plan;
  plan.dp = 2;
  plan.tp = 2;
  plan.pp = 2;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  plan.sequence_length = 1024;
  const TrainingGraph folded = build_training_graph(small_gpt(), plan, "test", "/plan", true);
  EXPECT_EQ(folded.graph.ranks(), 2u);
  EXPECT_EQ(folded.graph.mirrored(), 6u);
  const double full = iteration_seconds(c, small_gpt(), plan, false);
  const double sym = iteration_seconds(c, small_gpt(), plan, true);
  EXPECT_NEAR(sym, full, full * 1e-12);
  // The graph survives a JSON round trip (as `clustersim plan --emit-graph` writes it) and
  // validates: a user can hand-write or import one.
  folded.graph.validate("folded");
  const tg::TaskGraph back = tg::TaskGraph::from_json(folded.graph.to_json(), "folded.json");
  EXPECT_EQ(back.to_json().dump(), folded.graph.to_json().dump());
  EXPECT_EQ(back.symmetries().size(), 3u);  // (dp, tp) shifts other than the identity
}

// The symmetries as grid shifts (taskgraph/rank_symmetries.h) against the dense permutations
// they stand for, built here from grid coordinates: for each data-, context- and tensor-parallel
// shift (dd, cc, tt) in that order, the identity left out, rank r goes to the graph rank at the
// shifted coordinates (with hybrid sharding, dd = shard-group shift x S_d + position shift, each
// part cyclic). The kept shifts must map every process group onto a process group of the same
// stream as a set (the job is invariant), and there are as many as the shifts that do.
void expect_grid_symmetries_are_the_coordinate_shifts(const Model& m, const ParallelPlan& plan) {
  const TrainingGraph t = build_training_graph(m, plan, "test", "/plan", true);
  const tg::RankSymmetries& sym = t.graph.symmetries();
  const std::uint32_t n = t.graph.all_ranks();
  std::vector<std::uint32_t> graph_rank(n);
  for (std::uint32_t r = 0; r < n; ++r) graph_rank[static_cast<std::size_t>(t.grid_rank[r])] = r;
  // The groups of the unfolded job (every rank simulated, graph rank = grid rank).
  const TrainingGraph full = build_training_graph(m, plan, "test", "/plan", false);
  std::set<std::pair<tg::Stream, std::vector<std::uint32_t>>> groups;
  for (const tg::ProcessGroup& g : full.graph.groups()) {
    std::vector<std::uint32_t> ranks = g.ranks;
    std::sort(ranks.begin(), ranks.end());
    groups.insert({g.stream, ranks});
  }
  const int sd = plan.hybrid_sharding() ? plan.shard_ways() / plan.cp : plan.dp;
  std::size_t k = 0;
  for (int dd = 0; dd < plan.dp; ++dd) {
    for (int cc = 0; cc < plan.cp; ++cc) {
      for (int tt = 0; tt < plan.tp; ++tt) {
        std::vector<std::uint32_t> on_grid(n);  // grid rank -> grid rank
        for (std::uint32_t g = 0; g < n; ++g) {
          GridCoord c = t.grid.coord(static_cast<int>(g));
          c.dp = (c.dp / sd + dd / sd) % (plan.dp / sd) * sd + (c.dp % sd + dd % sd) % sd;
          c.cp = (c.cp + cc) % plan.cp;
          c.tp = (c.tp + tt) % plan.tp;
          on_grid[g] = static_cast<std::uint32_t>(t.grid.rank(c));
        }
        std::vector<std::uint32_t> sigma(n);  // graph rank -> graph rank
        for (std::uint32_t r = 0; r < n; ++r) sigma[r] = graph_rank[on_grid[static_cast<std::size_t>(t.grid_rank[r])]];
        bool invariant = true;
        for (const auto& [stream, ranks] : groups) {
          std::vector<std::uint32_t> image;
          for (std::uint32_t g : ranks) image.push_back(on_grid[g]);
          std::sort(image.begin(), image.end());
          invariant = invariant && groups.count({stream, image}) > 0;
        }
        if (!invariant || (dd == 0 && cc == 0 && tt == 0)) continue;
        ASSERT_LT(k, sym.size()) << "dd " << dd << " cc " << cc << " tt " << tt;
        for (std::uint32_t r = 0; r < n; ++r) ASSERT_EQ(sym.image(k, r), sigma[r]) << "symmetry " << k << " rank " << r;
        ++k;
      }
    }
  }
  EXPECT_EQ(k, sym.size());
  EXPECT_GT(k, 0u);
  EXPECT_FALSE(sym.explicit_form());
}

TEST(TrainingGraphSymmetry, GridShiftsAreTheCoordinateShiftsThatKeepEveryGroup) {
  const auto plan_of = [](int dp, int tp, int pp, int cp, int global_batch) {
    ParallelPlan p;
    std::tie(p.dp, p.tp, p.pp, p.cp, p.global_batch) = std::tie(dp, tp, pp, cp, global_batch);
    p.micro_batch = 1;
    p.sequence_length = 1024;
    return p;
  };
  ParallelPlan plan = plan_of(4, 2, 2, 2, 8);
  expect_grid_symmetries_are_the_coordinate_shifts(small_gpt(), plan);
  plan.order = {"dp", "pp", "tp", "cp"};  // another placement: other strides
  expect_grid_symmetries_are_the_coordinate_shifts(small_gpt(), plan);
  ParallelPlan hybrid = plan_of(8, 1, 1, 1, 8);  // ZeRO-3 hybrid sharding: dp as two digits (S_d = 2)
  hybrid.zero = ZeroStage::kParameters;
  hybrid.zero_shard = 2;
  expect_grid_symmetries_are_the_coordinate_shifts(small_gpt(), hybrid);
  ParallelPlan expert = plan_of(4, 1, 1, 2, 4);  // EP 4 over DP 4 x CP 2: only the shifts that keep expert groups
  expert.ep = 4;
  expect_grid_symmetries_are_the_coordinate_shifts(small_mixture(4), expert);
}

TEST(TrainingGraphSymmetry, ExpertParallelGroupsMapOntoExpertParallelGroups) {
  // DP 4 with EP 2 on 4 GPUs behind one switch: a shift by one data-parallel rank would replay
  // the all-to-alls of the group {0, 1} on GPUs {1, 2}, which form no group (on a real cluster
  // they may straddle servers). The shifts kept are by 0 and 2, so both ranks of the first
  // expert-parallel group are simulated, every symmetry maps each expert-parallel group onto one,
  // and the result is the full simulation's.
  const Model m = small_mixture(4);
  ParallelPlan plan;
  plan.dp = 4;
  plan.ep = 2;
  plan.micro_batch = 1;
  plan.global_batch = 4;
  plan.sequence_length = 1024;
  const TrainingGraph folded = build_training_graph(m, plan, "test", "/plan", true);
  EXPECT_EQ(folded.graph.ranks(), 2u);
  EXPECT_EQ(folded.graph.mirrored(), 2u);
  ASSERT_EQ(folded.graph.symmetries().size(), 1u);
  std::vector<std::vector<std::uint32_t>> groups;
  for (const tg::ProcessGroup& g : folded.graph.groups()) {
    if (g.stream != tg::Stream::kEp) continue;
    std::vector<std::uint32_t> r = g.ranks;
    std::sort(r.begin(), r.end());
    groups.push_back(r);
  }
  ASSERT_FALSE(groups.empty());
  const tg::RankSymmetries& symmetries = folded.graph.symmetries();
  for (std::size_t k = 0; k < symmetries.size(); ++k) {
    for (const auto& g : groups) {
      std::vector<std::uint32_t> image;
      for (std::uint32_t r : g) image.push_back(symmetries.image(k, r));
      std::sort(image.begin(), image.end());
      // The image is an expert-parallel group: grid ranks 2i and 2i + 1.
      EXPECT_EQ(std::abs(static_cast<int>(folded.grid_rank[image[0]]) - static_cast<int>(folded.grid_rank[image[1]])), 1);
      EXPECT_EQ(std::min(folded.grid_rank[image[0]], folded.grid_rank[image[1]]) % 2, 0);
    }
  }
  const coll::Machine c = star(4, false);
  const double full = iteration_seconds(c, m, plan, false);
  const double sym = iteration_seconds(c, m, plan, true);
  EXPECT_NEAR(sym, full, full * 1e-12);
}

}  // namespace
}  // namespace cs::wl

// ---- context parallelism (plan.cp_comm_type) and the zero-bubble schedule ----------------------
namespace cs::wl {
namespace {

// n round GPUs behind one switch whose links carry `bandwidth`, with a 5 us collective launch
// and test_clusters.h's latencies, or (`no_latency`) none.
coll::Machine star_at(int n, Bandwidth bandwidth, bool no_latency = false) {
  testing::Uniform u;
  u.bandwidth = bandwidth;
  if (no_latency) u.latency = u.step = u.ll_step = u.nvls_step = Duration{0};
  const hw::GpuSpec gpu = test_gpu();
  coll::Machine m = testing::uniform_star(n, u, Bandwidth{0}, &gpu);
  m.protocol.launch_latency = no_latency ? Duration{0} : microseconds(5);
  return m;
}

double collective_seconds(const coll::Machine& c, CollectiveOp op, Bytes size) {
  coll::CollectiveSpec spec;
  spec.op = op;
  spec.size = size;
  spec.ranks.assign(c.cluster.gpus().begin(), c.cluster.gpus().end());
  return to_seconds(coll::CollectiveSimulator(c).run(spec).time);
}

// The small GPT on cp GPUs: one sample of 1024 tokens, flash attention, everything else off.
ParallelPlan cp_plan(int cp, CpCommType type) {
  ParallelPlan plan;
  plan.cp = cp;
  plan.cp_comm_type = type;
  plan.micro_batch = 1;
  plan.global_batch = 1;
  plan.sequence_length = 1024;
  plan.flash_attention = true;
  plan.dp_bucket_mib = 1e6;  // one gradient all-reduce, after the backward
  return plan;
}

// The duration of rank 0's first compute op named `name`, by the compute model.
double op_seconds(const TrainingGraph& t, const std::string& name) {
  compute::ComputeModel cm("bf16");
  for (tg::OpId id = 0; id < t.graph.size(); ++id) {
    const tg::Op& op = t.graph.ops()[id];
    if (op.rank == 0 && op.kind == tg::OpKind::kCompute && t.graph.name_of(id) == name) {
      return to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
    }
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

// Bytes of the gradient all-reduce rank 0 issues (over DP x CP).
Bytes dp_bytes(const TrainingGraph& t) {
  Bytes b{0};
  for (const tg::Op& op : t.graph.ops()) {
    if (op.rank == 0 && op.kind == tg::OpKind::kCollective && t.graph.groups()[op.group].stream == tg::Stream::kDp) b += op.bytes;
  }
  return b;
}

TEST(TrainingGraph, HybridShardingGathersInItsGroupAndAllReducesTheShardAcrossReplicas) {
  // ZeRO-3 on DP 4 with zero_shard 2 (FSDP HYBRID_SHARD): every all-gather and reduce-scatter of
  // rank 0 runs over its shard group {0, 1}; each reduce-scatter of B bytes is followed by an
  // all-reduce of B/2 (its shard) over the replica group {0, 2}. Per micro-batch, with Psi the
  // weights' bytes: gathers 2 Psi (forward and backward), reduce-scatters Psi, replica
  // all-reduces Psi/2. The memory estimate shards the weights 2 ways instead of 4.
  const Model m = uniform_layers();
  ParallelPlan plan;
  plan.dp = 4;
  plan.zero = ZeroStage::kParameters;
  plan.zero_shard = 2;
  plan.micro_batch = 1;
  plan.global_batch = 4;
  const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
  Bytes gathered{0}, scattered{0}, replicated{0};
  for (const tg::Op& op : t.graph.ops()) {
    if (op.rank != 0 || op.kind != tg::OpKind::kCollective) continue;
    const tg::ProcessGroup& g = t.graph.groups()[op.group];
    if (op.collective == CollectiveOp::kAllGather) {
      EXPECT_EQ(g.ranks, (std::vector<std::uint32_t>{0, 1})) << g.name;
      gathered += op.bytes;
    } else if (op.collective == CollectiveOp::kReduceScatter) {
      EXPECT_EQ(g.ranks, (std::vector<std::uint32_t>{0, 1})) << g.name;
      scattered += op.bytes;
    } else if (op.collective == CollectiveOp::kAllReduce) {
      EXPECT_EQ(g.ranks, (std::vector<std::uint32_t>{0, 2})) << g.name;
      replicated += op.bytes;
    }
  }
  std::int64_t weights = 0;  // 16-bit weights of the 8 layers
  for (const CnnLayer& l : m.cnn.layers) weights += 2 * l.parameters;
  EXPECT_EQ(gathered, Bytes{2 * weights});
  EXPECT_EQ(scattered, Bytes{weights});
  EXPECT_EQ(replicated, Bytes{weights / 2});
  // It runs, simulating one rank (the others mirrored) as simulating all four.
  const double all_ranks = iteration_seconds(star(4, false), m, plan, false);
  EXPECT_GT(all_ranks, 0);
  EXPECT_NEAR(iteration_seconds(star(4, false), m, plan, true), all_ranks, all_ranks * 1e-12);
  // The memory estimate shards over the group.
  const MemoryEstimate hybrid = estimate_memory(m, plan, gibibytes(80)).front();
  plan.zero_shard = 0;
  const MemoryEstimate full = estimate_memory(m, plan, gibibytes(80)).front();
  EXPECT_EQ(hybrid.weights.value(), 2 * full.weights.value());
  // It needs ZeRO, and a group size that divides dp x cp.
  plan.zero_shard = 3;
  expect_plan_error(m, plan, "zero_shard");
  plan.zero_shard = 2;
  plan.zero = ZeroStage::kNone;
  expect_plan_error(m, plan, "zero_shard");
}

TEST(ContextParallel, RingHidesEachTransferBehindAStepOrExposesTheDifference) {
  // p2p (Transformer Engine's ring) on n = 4 GPUs, 8 blocks, X = 2 e T k_v the K/V bytes of a
  // GPU (T = 256 tokens, k_v = h = 1024: 1 MiB). Per block, with t_a and t_b one forward and one
  // backward step of the attention core (1/n of it), t_X and t_2X one ring transfer of X and 2X
  // (a send_recv ring shift over the 4 GPUs):
  //   forward   max(n t_a, (n - 1) t_X + t_a): exposed (n - 1) max(0, t_X - t_a)
  //   backward  max(t_b, t_X) + (n - 2) max(t_b, t_2X) + max(t_b, t_X): exposed that - n t_b
  // and nothing else overlaps (one micro-batch, no TP, no PP); the gradients are all-reduced
  // over the 4 CP ranks once the backward is over. So
  //   iteration = compute + 8 (exposed forward + exposed backward) + t_allreduce.
  // At 10 TB/s without latencies every transfer hides behind its step (t_X = 0.1 us, t_a =
  // 5.4 us); at 1 GB/s with a 5 us launch every one is exposed.
  const Model m = small_gpt();
  const int n = 4;
  const TrainingGraph t = build_training_graph(m, cp_plan(n, CpCommType::kP2p), "test", "/plan");
  const Bytes X{2 * 2 * 256 * 1024};
  const double t_a = op_seconds(t, "attention fwd"), t_b = op_seconds(t, "attention bwd");
  int regimes = 0;
  for (const double gbps : {10000.0, 1.0}) {
    const coll::Machine c = star_at(n, gigabytes_per_second(gbps), gbps > 1);
    const double t_x = collective_seconds(c, CollectiveOp::kSendRecv, X);
    const double t_2x = collective_seconds(c, CollectiveOp::kSendRecv, X * 2);
    const double fwd = std::max(n * t_a, (n - 1) * t_x + t_a) - n * t_a;
    const double bwd = std::max(t_b, t_x) + (n - 2) * std::max(t_b, t_2x) + std::max(t_b, t_x) - n * t_b;
    const double eps = 1e-15;
    regimes += (fwd < eps && bwd < eps) ? 1 : (fwd > eps && bwd > eps ? 10 : 100);
    const double expected = compute_seconds(t, 0) + 8 * (fwd + bwd) + collective_seconds(c, CollectiveOp::kAllReduce, dp_bytes(t));
    const Execution run = execute(c, t);
    EXPECT_NEAR(run.seconds, expected, 1e-12 * static_cast<double>(t.graph.size())) << gbps << " GB/s";
    // The stall attribution puts the exposed part on context parallelism.
    for (const auto& b : results::attribute_stalls(t.graph, run.records, run.end)) {
      EXPECT_NEAR(to_seconds(b.time[static_cast<int>(results::Stall::kCp)]), 8 * (fwd + bwd), 1e-9) << gbps << " GB/s";
    }
  }
  EXPECT_EQ(regimes, 11) << "one hidden and one exposed regime";
}

TEST(ContextParallel, AllGatherAndAllToAllAreExposed) {
  // all_gather (Llama 3): per block K/V all-gathered (S = n X) before attention and dK/dV
  // reduce-scattered (S = n X) after its backward, exposed. a2a (Ulysses): all-to-alls of Q, K, V
  // (S = Q + X) and of the output (S = Q) in forward, the same two in backward, exposed. Q = e T
  // q_t = 0.5 MiB. iteration = compute + 8 x (the block's CP collectives) + t_allreduce.
  const Model m = small_gpt();
  const int n = 4;
  const Bytes X{2 * 2 * 256 * 1024}, Q{2 * 256 * 1024};
  const coll::Machine c = star_at(n, gigabytes_per_second(100));
  auto t = [&](CollectiveOp op, Bytes s) { return collective_seconds(c, op, s); };
  for (const CpCommType type : {CpCommType::kAllGather, CpCommType::kA2a}) {
    const TrainingGraph g = build_training_graph(m, cp_plan(n, type), "test", "/plan");
    const double per_block = type == CpCommType::kAllGather
                                 ? t(CollectiveOp::kAllGather, X * n) + t(CollectiveOp::kReduceScatter, X * n)
                                 : 2 * t(CollectiveOp::kAllToAll, Q + X) + 2 * t(CollectiveOp::kAllToAll, Q);
    const double expected = compute_seconds(g, 0) + 8 * per_block + t(CollectiveOp::kAllReduce, dp_bytes(g));
    EXPECT_NEAR(execute(c, g).seconds, expected, 1e-12 * static_cast<double>(g.graph.size())) << static_cast<int>(type);
  }
}

TEST(ContextParallel, BytesSentPerGpuPerBlockMatchTheClosedForms) {
  // Per block and micro-batch, bytes one GPU sends on the CP group (an all-gather or
  // reduce-scatter of S sends (n-1)/n S, an all-to-all (n-1)/n S, a ring shift S), X = 2 e T k_v,
  // Q = e T q_t, T = s/n:
  //   p2p         forward (n-1) X; backward 2 (n-1) X (K/V again and dK/dV)
  //   all_gather  forward (n-1) X; backward (n-1) X
  //   a2a         forward (n-1)/n (2Q + X); backward the same
  // Under full recomputation the forward's exchange runs again in the backward.
  const Model m = small_gpt();
  for (const int n : {2, 4}) {
    const double T = 1024.0 / n, X = 2 * 2 * T * 1024, Q = 2 * T * 1024;
    for (const CpCommType type : {CpCommType::kP2p, CpCommType::kAllGather, CpCommType::kA2a}) {
      for (const Recompute r : {Recompute::kNone, Recompute::kFull}) {
        ParallelPlan plan = cp_plan(n, type);
        plan.recompute = r;
        const TrainingGraph g = build_training_graph(m, plan, "test", "/plan");
        double sent = 0;
        for (const tg::Op& op : g.graph.ops()) {
          if (op.rank != 0 || op.kind != tg::OpKind::kCollective || g.graph.groups()[op.group].stream != tg::Stream::kCp) continue;
          const double s = static_cast<double>(op.bytes.value());
          sent += op.collective == CollectiveOp::kSendRecv ? s : s * (n - 1) / n;
        }
        const double fwd = type == CpCommType::kA2a ? (n - 1.0) / n * (2 * Q + X) : (n - 1) * X;
        const double bwd = type == CpCommType::kP2p ? 2 * (n - 1) * X : fwd;
        const double per_block = (r == Recompute::kFull ? 2 : 1) * fwd + bwd;
        EXPECT_NEAR(sent, 8 * per_block, 1.0) << "n=" << n << " type=" << static_cast<int>(type) << " full=" << (r == Recompute::kFull);
      }
    }
  }
}

TEST(ContextParallel, OneSimulatedRankPerStageGivesTheFullSimulationsResult) {
  // DP 2 x CP 4 (and CP 2 x PP 2) behind one switch, every variant: with symmetry only CP rank
  // 0 of each stage is simulated; its ring shifts, all-gathers and all-to-alls over the CP group
  // carry the mirrored ranks' transfers, so the iteration equals the full simulation's.
  for (const CpCommType type : {CpCommType::kP2p, CpCommType::kAllGather, CpCommType::kA2a}) {
    for (const auto& [dp, cp, pp] : {std::tuple{2, 4, 1}, std::tuple{1, 2, 2}}) {
      ParallelPlan plan = cp_plan(cp, type);
      plan.dp = dp;
      plan.pp = pp;
      plan.global_batch = 2 * dp;
      plan.dp_bucket_mib = 25;
      const coll::Machine c = star_at(8, gigabytes_per_second(10));
      const TrainingGraph folded = build_training_graph(small_gpt(), plan, "test", "/plan", true);
      EXPECT_EQ(folded.graph.ranks(), static_cast<std::uint32_t>(pp));
      const double full = execute(c, build_training_graph(small_gpt(), plan, "test", "/plan", false)).seconds;
      EXPECT_NEAR(execute(c, folded).seconds, full, full * 1e-12) << "type " << static_cast<int>(type) << " cp " << cp;
    }
  }
}

TEST(ContextParallel, AllToAllNeedsHeadsDivisibleByCp) {
  // a2a gives each CP rank a/(t c) heads: 16 heads over t = 2 leave 8, which c = 3 does not
  // divide (the sequence, 1023, does).
  ParallelPlan plan = cp_plan(3, CpCommType::kA2a);
  plan.sequence_length = 1023;  // within the 1024 positions, divisible by 3
  plan.tp = 2;
  expect_plan_error(small_gpt(), plan, "cp_comm_type");
  plan.cp_comm_type = CpCommType::kP2p;
  EXPECT_NO_THROW(build_training_graph(small_gpt(), plan, "test", "/plan"));
}

TEST(ZeroBubble, ZbH1BubbleIsPMinusOneTimesForwardPlusInputGradMinusWeightGrad) {
  // ZB-H1 (Qi et al. 2024, Sec. 3.1) on p = 4 equal stages of 2 identical layers, free
  // communication. A layer's backward is split into B (input gradient) and W (weight
  // gradient), half of its FLOPs and bytes each, so T_B = T_W = T_F here (a layer's backward
  // is twice its forward): the paper's equal-times case. The iteration is
  //   m (T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W) + optimizer
  // against 1F1B's m (T_F + T_B + T_W) + (p - 1)(T_F + T_B + T_W) + optimizer.
  const Model m = uniform_layers();
  const int p = 4;
  for (int micro : {4, 8, 12}) {
    const coll::Machine c = star(p, true);
    ParallelPlan plan;
    plan.pp = p;
    plan.schedule = PipelineSchedule::kZbH1;
    plan.micro_batch = 1;
    plan.global_batch = micro;
    const TrainingGraph t = build_training_graph(m, plan, "test", "/plan");
    compute::ComputeModel cm("bf16");
    double f = 0, b = 0, w = 0, optimizer = 0;  // stage 1's, per micro-batch
    for (tg::OpId id = 0; id < t.graph.size(); ++id) {
      const tg::Op& op = t.graph.ops()[id];
      if (op.rank != 1 || op.kind != tg::OpKind::kCompute) continue;
      const double d = to_seconds(cm.time(test_gpu(), op.compute_class, op.flops, op.bytes));
      const std::string& name = t.graph.name_of(id);
      if (op.compute_class == tg::ComputeClass::kOptimizer) optimizer += d;
      else if (name == "block bwd weight") w += d / micro;
      else if (name == "block bwd") b += d / micro;
      else f += d / micro;
    }
    EXPECT_NEAR(b, w, b * 1e-12);
    EXPECT_NEAR(b, f, b * 1e-12);
    const double expected = micro * (f + b + w) + (p - 1) * (f + b - w) + optimizer;
    EXPECT_NEAR(execute(c, t).seconds, expected, expected * 1e-9) << "m=" << micro;
    plan.schedule = PipelineSchedule::kOneFOneB;
    const double one_f_one_b = micro * (f + b + w) + (p - 1) * (f + b + w) + optimizer;
    EXPECT_NEAR(execute(c, build_training_graph(m, plan, "test", "/plan")).seconds, one_f_one_b, one_f_one_b * 1e-9);
  }
}

TEST(ZeroBubble, ZbH1SplitsEachBackwardGemmOpIntoEqualInputAndWeightHalves) {
  // The small GPT on p = 2, ZB-H1 against 1F1B: the same FLOPs and bytes on every rank; each
  // block's backward GEMM op becomes a B op ("block bwd") and a W op ("block bwd weight") of
  // half its FLOPs each (dX = dY W^T and dW = X^T dY, 2 m n k each) and, in bf16, half its
  // bytes each; the W ops of a micro-batch run after its B ops. Same iteration with p = 1
  // (no bubble to fill: B and W back to back).
  const Model m = small_gpt();
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batch = 1;
  plan.global_batch = 4;
  plan.sequence_length = 1024;
  const TrainingGraph base = build_training_graph(m, plan, "test", "/plan");
  plan.schedule = PipelineSchedule::kZbH1;
  const TrainingGraph zb = build_training_graph(m, plan, "test", "/plan");
  for (std::uint32_t r = 0; r < 2; ++r) {
    double f0 = 0, f1 = 0;
    Bytes b0{0}, b1{0};
    double block_bwd = 0, input = 0, weight = 0;
    Bytes block_bwd_bytes{0}, input_bytes{0}, weight_bytes{0};
    for (tg::OpId id = 0; id < base.graph.size(); ++id) {
      const tg::Op& op = base.graph.ops()[id];
      if (op.rank != r || op.kind != tg::OpKind::kCompute) continue;
      f0 += op.flops.value();
      b0 += op.bytes;
      if (base.graph.name_of(id) == "block bwd") {
        block_bwd += op.flops.value();
        block_bwd_bytes += op.bytes;
      }
    }
    for (tg::OpId id = 0; id < zb.graph.size(); ++id) {
      const tg::Op& op = zb.graph.ops()[id];
      if (op.rank != r || op.kind != tg::OpKind::kCompute) continue;
      f1 += op.flops.value();
      b1 += op.bytes;
      if (zb.graph.name_of(id) == "block bwd") {
        input += op.flops.value();
        input_bytes += op.bytes;
      }
      if (zb.graph.name_of(id) == "block bwd weight") {
        weight += op.flops.value();
        weight_bytes += op.bytes;
      }
    }
    EXPECT_NEAR(f1, f0, f0 * 1e-12) << "rank " << r;
    EXPECT_EQ(b1, b0) << "rank " << r;
    EXPECT_GT(block_bwd, 0);
    EXPECT_NEAR(input, block_bwd / 2, block_bwd * 1e-12);
    EXPECT_NEAR(weight, block_bwd / 2, block_bwd * 1e-12);
    EXPECT_EQ(input_bytes + weight_bytes, block_bwd_bytes);
    EXPECT_NEAR(static_cast<double>(weight_bytes.value()), static_cast<double>(block_bwd_bytes.value()) / 2, 8.0);
  }
  // Faster than 1F1B on the same machine: the W passes fill part of the bubble.
  const coll::Machine c = star(2, false);
  EXPECT_LT(execute(c, zb).seconds, execute(c, base).seconds);
  // ZB-H1 keeps up to p micro-batches on every stage (1F1B: p - i).
  EXPECT_EQ(micro_batches_in_flight(plan, 1), 2.0);
}

TEST(ZeroBubble, CombinesWithEveryOtherOption) {
  // ZB-H1 with TP 2 (SP, overlapped), CP 2 (each variant), PP 2, DP 2 under ZeRO 0-3, full
  // recomputation: the graph runs to the end (every dependency met, every collective matched)
  // and does the FLOPs of the same plan under 1F1B, in the same or less time.
  for (const ZeroStage zero : {ZeroStage::kNone, ZeroStage::kGradients, ZeroStage::kParameters}) {
    for (const CpCommType type : {CpCommType::kP2p, CpCommType::kAllGather, CpCommType::kA2a}) {
      ParallelPlan plan = cp_plan(2, type);
      plan.tp = 2;
      plan.sequence_parallel = true;
      plan.tp_comm_overlap = true;
      plan.pp = 2;
      plan.dp = 2;
      plan.zero = zero;
      plan.recompute = Recompute::kFull;
      plan.global_batch = 8;
      plan.dp_bucket_mib = 4;
      const coll::Machine c = star(16, false);
      const TrainingGraph one = build_training_graph(small_gpt(), plan, "test", "/plan", true);
      plan.schedule = PipelineSchedule::kZbH1;
      const TrainingGraph zb = build_training_graph(small_gpt(), plan, "test", "/plan", true);
      double f1 = 0, fz = 0;
      for (const tg::Op& op : one.graph.ops()) f1 += op.flops.value();
      for (const tg::Op& op : zb.graph.ops()) fz += op.flops.value();
      EXPECT_NEAR(fz, f1, f1 * 1e-12);
      const double t1 = execute(c, one).seconds, tz = execute(c, zb).seconds;
      EXPECT_LE(tz, t1 * (1 + 1e-9)) << "zero " << static_cast<int>(zero) << " cp " << static_cast<int>(type);
    }
  }
}

}  // namespace
}  // namespace cs::wl
