// Per-GPU memory estimate of a training plan, one estimate per pipeline stage.
//
//   weights        2 B x parameters held (bf16), / (dp c) with ZeRO-3 (FSDP)
//   gradients      2 B x parameters, / (dp c) with ZeRO-2 and ZeRO-3
//   optimizer      12 B x parameters (Adam in mixed precision: fp32 master weights, momentum,
//                  variance), / (dp c) with ZeRO-1 and above.
//                  Together 16 B per parameter before sharding: the Psi accounting of
//                  Rajbhandari et al., "ZeRO", SC20 (arXiv:1910.02054), Sec. 3.1 and Fig. 1.
//                  Expert parameters shard over their own data-parallel group, dp c / ep.
//   activations    saved activations of one micro-batch on this stage (layer_cost.h: per
//                  recompute mode, with TP/SP) x the micro-batches in flight at the peak:
//                    GPipe        m (all forwards before any backward; Huang et al. 2019)
//                    1F1B         min(p - i, m) on stage i (PipeDream-Flush; Narayanan et al. SC21)
//                    interleaved  min(2(p - i - 1) + (v - 1)p + 1, m v) model chunks of 1/v of the
//                                 stage's layers: stage 0 holds p(1 + (p - 1)/(p v)) micro-batches
//                                 (Korthikanti et al. 2022, Sec. 4.2.3; the warm-up count of
//                                 Megatron-LM's forward_backward_pipelining_with_interleaving)
//                  with p = 1 every schedule keeps one micro-batch. Plus the largest
//                  recompute_transient of one layer (rebuilt during its backward).
//   workspace      kWorkspace (CUDA context, cuBLAS/cuDNN workspaces, NCCL buffers), plus with
//                  ZeRO-3 the gathered weights of two layers (the one running and the prefetched
//                  one).
// Stage 0 also holds the embedding, the last stage the head; with tied embeddings and p > 1 the
// last stage keeps its own copy of the token table (Megatron does, and all-reduces its gradient
// with stage 0), with gradients and optimizer state.
//
// Limits: no allocator fragmentation, no CPU offload, no memory for inference KV caches; MoE
// routing is assumed balanced.
#pragma once

#include <string>
#include <vector>

#include "core/units.h"
#include "hardware/catalog.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

inline constexpr Bytes kWorkspace = gibibytes(1);
inline constexpr std::int64_t kWeightBytesPerParameter = 2;
inline constexpr std::int64_t kGradientBytesPerParameter = 2;
inline constexpr std::int64_t kOptimizerBytesPerParameter = 12;

struct MemoryEstimate {
  int stage = 0;
  int layers = 0;                      // transformer blocks or CNN layers on this stage
  std::int64_t parameters = 0;         // held by one GPU of the stage, before ZeRO sharding
  double micro_batches_in_flight = 0;  // activation sets (in units of the whole stage) at the peak
  Bytes weights{0};
  Bytes gradients{0};
  Bytes optimizer_state{0};
  Bytes activations{0};
  Bytes workspace{0};
  Bytes total{0};
  Bytes capacity{0};
  int worst_stage = 0;  // the stage with the largest total (the same in every estimate)
  bool fits = true;     // total <= capacity
};

// Layers of each pipeline stage: plan.layers_per_stage when given, else an even split with the
// remainder going to stages 1, 2, ... (stage 0 already holds the embedding and the most
// activations). For pp >= 1 and a layers_per_stage that validate_plan (plan_check.h) accepts.
std::vector<int> stage_layers(const Model& m, const ParallelPlan& plan);
// Micro-batches whose activations stage `stage` holds at its peak (formulas above).
double micro_batches_in_flight(const ParallelPlan& plan, int stage);

// One estimate per pipeline stage, for one GPU of that stage. The plan is validated first
// (validate_plan, plan_check.h, for the plan's own GPU count): a ConfigError with no file, at the
// key's path ("/tp"), for the caller to place in its plan's file.
std::vector<MemoryEstimate> estimate_memory(const Model& m, const ParallelPlan& plan,
                                            Bytes capacity);
std::vector<MemoryEstimate> estimate_memory(const Model& m, const ParallelPlan& plan,
                                            const hw::GpuSpec& gpu);
// The estimate of the worst stage.
MemoryEstimate peak_memory(const std::vector<MemoryEstimate>& stages);

// Throws InputError when the estimate does not fit and allow_oom is false:
//   GPU 0 (stage 0) needs 142.3 GiB (weights 130.4 GiB, gradients ..., optimizer state ...,
//   activations ..., workspace ...) but has 74.5 GiB; use --allow-oom to simulate anyway
// `gpu_name` is printed as given ("GPU 0", "A100-SXM-80GB").
void check_fits(const MemoryEstimate& e, const std::string& gpu_name, bool allow_oom);

}  // namespace cs::wl
