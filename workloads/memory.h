// Per-GPU memory estimate of a training plan, one estimate per pipeline stage: the peak of what
// one GPU of the stage holds during an iteration, term by term. In bytes; Psi is the parameters
// one GPU of the stage holds after tensor and pipeline parallelism (and, for experts, expert
// parallelism), N_d = dp c the ranks ZeRO shards over (dp c / ep for expert parameters), g the
// bytes of one gradient value (plan.grad_reduce_bytes: 2, or 4 for fp32 gradients).
//
// Model states (Rajbhandari et al., "ZeRO", SC20, arXiv:1910.02054, Fig. 1 and Sec. 5, with
// K = 12 for mixed-precision Adam, Sec. 3.1: fp32 master weights, momentum and variance):
//   weights          2 Psi, / N_d with ZeRO-3
//   gradients        g Psi, / N_d with ZeRO-2 and ZeRO-3
//   optimizer state  K Psi, / N_d with ZeRO-1 and above
//   so that at g = 2, per stage:  0: (2 + 2 + K) Psi    1: 2 Psi + 2 Psi + K Psi / N_d
//                                 2: 2 Psi + (2 + K) Psi / N_d    3: (2 + 2 + K) Psi / N_d
//   g = 4 is Megatron-LM's bf16 parameters with fp32 main gradients: 18 bytes per parameter, or
//   6 + 12/d with its distributed optimizer (docs/user-guide/features/dist_optimizer.md).
//
// ZeRO's buffers (0 without ZeRO-2/3 or with N_d = 1), in the unit plan.zero_unit names:
//   layer (PyTorch FSDP, one unit per transformer block, embedding, head or CNN layer, as the
//         training TaskGraph all-gathers; Zhao et al., "PyTorch FSDP", VLDB 2023,
//         arXiv:2304.11277):
//     gathered weights  ZeRO-3: (1 + d) x 2 U: the unit running and the d = plan.zero_prefetch
//                       next ones, whose all-gathers are prefetched (by default d = 1: FSDP keeps
//                       two units' all-gathered parameters alive at once: limit_all_gathers in
//                       FSDP1, the prefetch defaults of FSDP2, pytorch/pytorch#128884)
//     gradient buckets  ZeRO-2/3: g U, the unit's unsharded gradient until its reduce-scatter
//                       (FSDP reduce-scatters each unit's flat gradient)
//     with U the parameters of the largest unit on the stage.
//   module (DeepSpeed ZeRO-3: each weight matrix is gathered on its own; DeepSpeed's
//          estimate_zero3_model_states_mem_needs counts 4 bytes x its largest module, the
//          gathered fp16 weights and their gradient):
//     gathered weights  ZeRO-3: 2 max(M, min(L, Psi_s)): the running module, or the
//                       stage3_max_live_parameters L = 1e9 (DeepSpeed's default) that its
//                       prefetch (stage3_prefetch_bucket_size) and reuse keep gathered, capped
//                       by the stage's parameters Psi_s (before sharding); a module larger
//                       than L is gathered whole and stops the prefetch
//     gradient buckets  ZeRO-2/3: g M + min(B, g Psi_s): the module's gradient, then the
//                       contiguous reduce bucket of B = plan.dp_bucket bytes it is copied into
//                       (DeepSpeed's reduce_bucket_size; the TaskGraph reduces in these buckets)
//     with M the parameters of the largest weight matrix on the stage (LayerCost::largest_weight).
//   With plan.reshard_after_forward false (FSDP2; FSDP1 SHARD_GRAD_OP), ZeRO-3 keeps every unit
//   gathered from its forward to its backward: gathered weights = 2 Psi_s, the stage's weights.
//   Without ZeRO-2/3 the gradient buckets are views of the gradients (Megatron-LM's contiguous
//   gradient buffer; PyTorch DDP with gradient_as_bucket_view), and ZeRO-1/2's all-gather of
//   the updated weights writes into the weights: nothing is added.
//
// Activations: A, the saved activations of one micro-batch on this stage (layer_cost.h and
// block_cost.h, per recompute mode, with TP/SP), times the micro-batches in flight at the peak,
// n_f (micro_batches_in_flight below), plus what one layer's backward adds while it runs:
//   activations = n_f A + max over layers l of (R_l - S_l)
// with R_l the activations rebuilt during l's backward (recompute_transient: under full
// recomputation all of the block's but its kept input; under selective the attention scores)
// and S_l the saved activations of the layers after l in the same model chunk, already freed
// when l's backward runs (so the head's fp32 logits are gone when a block rebuilds its own).
// In flight, stage i of p with m micro-batches:
//   GPipe        m (all forwards before any backward; Huang et al. 2019)
//   1F1B         min(p - i, m) (PipeDream-Flush; Narayanan et al. SC21)
//   zb-h1        min(p, m): the p - i of 1F1B and the i micro-batches whose weight-gradient pass
//                waits, counted whole (an upper bound: their B pass freed what W does not
//                read); Qi et al. 2024, arXiv:2401.10241, Table 1: ZB-H1 peaks at p M_B, as 1F1B
//   interleaved  min(2(p - i - 1) + (v - 1)p + 1, m v) model chunks of 1/v of the stage's
//                layers: stage 0 holds p(1 + (p - 1)/(p v)) micro-batches (Korthikanti et al.
//                2022, Sec. 4.2.3; the warm-up count of Megatron-LM's
//                forward_backward_pipelining_with_interleaving)
//   with p = 1 every schedule keeps one micro-batch.
//
// Workspace: kWorkspace, assumed (not measured here): the CUDA context, cuBLAS workspaces and
// NCCL's communication buffers, outside the tensors above.
//
// Fragmentation: the caching allocator reserves more than the tensors it holds. With f =
// plan.memory_fragmentation, the fraction of reserved memory that is free but unusable
// (1 - allocated/reserved, the ratio GMLake reports; Guo et al., ASPLOS 2024, arXiv:2401.08156),
//   fragmentation = f/(1 - f) x (everything above but the workspace)
// f = 0 by default, an assumption: GMLake measured 15 % more reserved than allocated on average
// (up to 33 %) for eight LLMs on A100 80GB with recomputation, ZeRO and LoRA, but without memory
// pressure; PyTorch frees its cache and retries before it reports out of memory, so those ratios
// bound the margin rather than measure it.
//
// Stage 0 also holds the embedding, the last stage the head; with tied embeddings and p > 1 the
// last stage keeps its own copy of the token table (Megatron does, and all-reduces its gradient
// with stage 0), with gradients and optimizer state.
//
// Limits: the working set of one layer's backward beyond the rebuilt activations (the
// activation gradients, of the order of the saved tensors already freed) is not counted; no CPU
// offload, no inference KV caches; MoE blocks keep their routed experts' activations over the
// tokens the plan's routing sends them (block_shape.h: balanced unless moe_load_imbalance says
// otherwise, on the GPU holding the busiest expert); a mixture's dense blocks are estimated as
// dense (the stage's blocks are taken as consecutive layers, also for the interleaved schedule).
#pragma once

#include <string>
#include <vector>

#include "core/units.h"
#include "hardware/catalog.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"
#include "workloads/pipeline_split.h"  // stage_layers, used by the estimate and its callers

namespace cs::wl {

// Assumed: CUDA context, cuBLAS workspaces and NCCL buffers, per GPU.
inline constexpr Bytes kWorkspace = gibibytes(1);
inline constexpr std::int64_t kWeightBytesPerParameter = 2;  // bf16 (fp16) weights
// K: fp32 master weights, Adam momentum and variance.
inline constexpr std::int64_t kOptimizerBytesPerParameter = 12;
// L: DeepSpeed's stage3_max_live_parameters default (deepspeed/runtime/zero/config.py).
inline constexpr std::int64_t kDeepSpeedMaxLiveParameters = 1'000'000'000;

struct MemoryEstimate {
  int stage = 0;
  int layers = 0;                      // transformer blocks or CNN layers on this stage
  std::int64_t parameters = 0;         // held by one GPU of the stage, before ZeRO sharding
  double micro_batches_in_flight = 0;  // activation sets (in units of the whole stage) at the peak
  Bytes weights{0};
  Bytes gradients{0};
  Bytes optimizer_state{0};
  Bytes gathered_weights{0};  // ZeRO-3: the gathered weights of the units in flight
  Bytes gradient_buckets{0};  // ZeRO-2/3: unsharded gradients awaiting their reduce-scatter
  Bytes activations{0};
  Bytes workspace{0};
  Bytes fragmentation{0};
  Bytes total{0};
  Bytes capacity{0};
  int worst_stage = 0;  // the stage with the largest total (the same in every estimate)
  bool fits = true;     // total <= capacity
};

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
//   gathered weights ..., gradient buckets ..., activations ..., workspace ...,
//   fragmentation ...) but has 74.5 GiB; use --allow-oom to simulate anyway
// with gathered weights, gradient buckets and fragmentation listed only when not zero.
// `gpu_name` is printed as given ("GPU 0", "A100-SXM-80GB").
void check_fits(const MemoryEstimate& e, const std::string& gpu_name, bool allow_oom);

}  // namespace cs::wl
