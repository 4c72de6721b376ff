// The `framework` key of a plan: one name that sets the defaults a training framework runs with,
// so that a plan states "Megatron-Core" instead of six options. Keys the plan sets itself win over
// the preset; docs/experiment-format.md lists every default with the flag or source it mirrors.
//
//   megatron-lm-2021  Megatron-LM as in Narayanan et al. SC21 (arXiv:2104.04473): full activation
//                     recomputation, unfused attention, no sequence parallelism, no distributed
//                     optimizer, gradients all-reduced after the backward pass (--DDP-impl local).
//   megatron-core     Megatron-Core as NVIDIA's published H100 runs configure it: sequence
//                     parallelism and --tp-comm-overlap (with tp > 1), --use-distributed-optimizer
//                     (ZeRO-1) with --overlap-grad-reduce and --overlap-param-gather, fused (TE/flash)
//                     attention, gradients reduced in fp32 (arguments.py: bf16 accumulates and
//                     reduces gradients in fp32), buckets of max(40M, 1M x dp) parameters
//                     (distributed_data_parallel.py), no recomputation.
//   deepspeed         DeepSpeed ZeRO-3: parameters gathered module by module, again for backward,
//                     gradients reduce-scattered in the model's dtype (communication_data_type
//                     defaults to it) during backward (overlap_comm), reduce_bucket_size 5e8 elements.
//   torch-fsdp        PyTorch FSDP FULL_SHARD: one unit per transformer block, re-gathered for
//                     backward, gradients reduce-scattered in bf16 (MixedPrecision reduce_dtype
//                     unset = param_dtype) during backward, SDPA flash attention.
//   torchtitan        torchtitan's Llama 3 recipe: FSDP2 per block (reshard after forward),
//                     gradients reduced in fp32 (mixed_precision_reduce = "float32"), tensor
//                     parallelism with sequence-parallel norms, SDPA flash attention, async TP off.
#pragma once

#include "core/config.h"
#include "core/enum_names.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

enum class Framework { kMegatronLm2021, kMegatronCore, kDeepSpeed, kTorchFsdp, kTorchTitan };
inline constexpr EnumName<Framework> kFrameworkNames[] = {{Framework::kMegatronLm2021, "megatron-lm-2021"},
                                                         {Framework::kMegatronCore, "megatron-core"},
                                                         {Framework::kDeepSpeed, "deepspeed"},
                                                         {Framework::kTorchFsdp, "torch-fsdp"},
                                                         {Framework::kTorchTitan, "torchtitan"}};

// Sets, in `p`, each of the framework's defaults whose key the plan object `n` does not hold.
// `p` already holds the plan's parallel degrees (some defaults depend on tp and dp).
void apply_framework_defaults(Framework f, const ConfigNode& n, wl::ParallelPlan& p);

}  // namespace cs::drv
