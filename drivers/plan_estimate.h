// The fast estimate of a training iteration that ranks parallel plans before the best are
// simulated in full (`clustersim search`, docs/plan-search.md). It uses the simulator's own
// pieces, so the two agree on what separates plans: the per-layer costs (workloads/layer_cost.h)
// timed by the compute model (GEMM shape efficiency, the roofline), and each communication group
// of rank 0 timed by the collective simulator on the cluster itself (cached per operation, group
// size, stride and size, fitted alpha + S / beta from two sizes), not a bandwidth formula beside it.
//
// Per micro-batch on pipeline stage s (L_s blocks, the embedding on the first, the head on the
// last): F_s and B_s, the forward and backward (with recomputation) compute, plus the stage's
// tensor-parallel collectives (all-reduce, or all-gather + reduce-scatter with sequence
// parallelism), context-parallel exchanges, expert all-to-alls; t_p2p a pipeline send of one
// activation. With m micro-batches and p stages:
//   1F1B, GPipe   T_pipe = sum_s (F_s + B_s) + (m - 1) max_s (F_s + B_s + 2 t_p2p) + 2 (p - 1) t_p2p
//   interleaved   the bubble (p - 1) max_s(F_s + B_s) / v (Narayanan et al., SC21, Sec. 2.2), and
//                 v times the pipeline sends
//   zb-h1         the bubble (p - 1)(F + B - W), W the weight-gradient half of the backward GEMMs
//                 (Qi et al., ICLR 2024, Sec. 3.1)
// Data parallelism over the dp cp ranks of rank 0's stage: ZeRO 0 an all-reduce of the
// gradients (grad_reduce bytes each), ZeRO 1 a reduce-scatter and an all-gather of the weights,
// ZeRO 2 a reduce-scatter per micro-batch, ZeRO 3 also two all-gathers per micro-batch;
// overlapped with one micro-batch's backward (dp_overlap, as DDP's buckets), ZeRO 2/3 with the
// compute of every micro-batch. The optimizer step is memory-bound: 46 bytes per parameter
// (workloads/training_graph.cpp) over the stage's shard.
//   T = T_pipe + exposed data-parallel time + optimizer step
// Not modelled: stragglers, data loading, contention between concurrent collectives of
// different groups (the full simulation has them).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <tuple>

#include "core/units.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/compute/compute_model.h"
#include "workloads/layer_cost.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

struct PlanEstimate {
  Duration iteration{0};
  Duration pipeline{0};      // T_pipe
  Duration bubble{0};        // its idle part
  Duration exposed_dp{0};
  Duration dp_window{0};     // the backward the data-parallel reduction hides behind (dp_overlap)
  Bytes dp_bytes{0};         // what one data-parallel group reduces (grad_reduce bytes per parameter)
  Duration tp_comm{0};       // per iteration on the bottleneck stage
  Duration optimizer{0};
};

class PlanEstimator {
 public:
  // The machine and model must outlive the estimator.
  PlanEstimator(const coll::Machine& machine, const wl::Model& model, std::shared_ptr<const cal::ProfileModel> profile = nullptr);
  PlanEstimate estimate(const wl::ParallelPlan& plan);

  // Time of one collective over `n` GPUs of rank order, every `stride`-th from GPU 0. A group the
  // collective model refuses counts 0 here and makes the plan's estimate kMaxDuration (last).
  Duration collective(CollectiveOp op, int n, int stride, Bytes size);

 private:
  // A layer's tensor-parallel collectives `n` over the first `tp` GPUs.
  Duration tp_time(const wl::LayerCost& c, const wl::TpCollectives& n, int tp);

  const coll::Machine& machine_;
  const wl::Model& model_;
  const hw::GpuSpec& gpu_;
  coll::CollectiveSimulator simulator_;
  std::map<std::string, compute::ComputeModel> compute_;  // per precision
  std::shared_ptr<const cal::ProfileModel> profile_;
  std::map<std::tuple<int, int, int>, std::array<double, 2>> fits_;
  bool refused_ = false;  // the plan being estimated needs a group the model refuses  // (op, n, stride) -> alpha s, s per byte
};

}  // namespace cs::drv
