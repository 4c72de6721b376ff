// The parallel plans of a model on N GPUs (`clustersim search`, docs/plan-search.md): every
// combination of TP, CP, PP, DP, EP, schedule and virtual stages, micro-batch, ZeRO stage,
// recomputation and sequence parallelism that divides, each checked by the same validate_plan and
// memory estimate `run` uses. What is dropped is counted by reason.
//
// The values tried:
//   tp   divisors of N that divide the attention heads and the GPUs of one server (its NVLink
//        domain: beyond it, or in a group straddling two servers, every layer's all-reduces cross
//        the network; SC21, Sec. 3.3 takeaway 1)
//   cp   1, and for sequences of 8,192 tokens and more the powers of two up to 8 that divide the
//        sequence (context parallelism only pays for long sequences: Megatron-Core's guidance)
//   pp   divisors of N / (tp cp) that divide the layers (an even split), at most the layers
//   dp   N / (tp cp pp); ep (mixtures only): divisors of dp cp that divide the experts
//   schedule  1F1B; with pp > 1 also zb-h1 and interleaved 1F1B with v = 2, 3, 4, 6, 8 model
//        chunks dividing the layers per stage
//   micro_batch  powers of two up to 1,024 and the base plan's, dividing global_batch / dp
//   zero 0 and 1; 2 and 3 only without pipeline parallelism (DeepSpeed refuses ZeRO-2/3 with PP)
//   recompute none, selective, full; sequence_parallel off, and on with tp > 1
// Everything else (sequence length, precision, flash attention, overlap flags, framework preset)
// is the base plan's, and so is every dimension named in `keep` (kPlanDimensions).
//
// A plan whose experiment names a framework (its `framework` preset) is searched among what that
// framework offers, as its documentation lists its options:
//   megatron-lm-2021  no ZeRO (no distributed optimizer), no sequence parallelism, no selective
//                     recomputation (--checkpoint-activations is all or nothing), no CP, no ZB-H1
//   megatron-core     ZeRO 0 or 1 (--use-distributed-optimizer), no ZB-H1 (not in its schedules)
//   deepspeed         1F1B only (its PipelineEngine's schedule), no CP
//   torch-fsdp        no TP, PP or CP (FSDP alone); ZeRO 2 (SHARD_GRAD_OP) or 3 (FULL_SHARD);
//                     recomputation none or full (activation checkpointing per block)
//   torchtitan        ZeRO 3 (FSDP2)
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/framework_preset.h"
#include "hardware/catalog.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

struct PlanSpace {
  std::vector<wl::ParallelPlan> plans;           // valid and fitting, in enumeration order
  std::map<std::string, std::size_t> dropped;    // reason -> count
  std::size_t considered = 0;                    // plans formed (kept + dropped)
};

// The dimensions a search varies, by the plan keys that name them ("schedule" covers the
// virtual stages too).
inline constexpr const char* kPlanDimensions[] = {"tp", "cp", "pp", "ep", "schedule", "micro_batch", "zero", "recompute", "sequence_parallel"};

// The plans of `model` on `gpus` GPUs for `base`'s global batch and fixed settings; memory is
// checked against `gpu`'s, less the headroom.
struct SpaceOptions {
  int per_server = 8;          // GPUs of one server: the largest tp tried
  std::set<std::string> keep;  // dimensions held at the base plan's value
  // The share of GPU memory a plan must leave free: what the estimate (workloads/memory.h) does
  // not hold, the allocator's fragmentation above all (PyTorch's caching allocator), so that the
  // search does not recommend a plan that only fits on paper.
  double headroom = 0.05;
  std::optional<Framework> framework;  // the experiment's framework preset: its options only
};

PlanSpace enumerate_plans(const wl::Model& model, const wl::ParallelPlan& base, int gpus, const hw::GpuSpec& gpu,
                          const SpaceOptions& options);

// A plan in one line: "tp 8 pp 4 dp 16 mb 2 1f1b zero 1 recompute full sp".
std::string describe_plan(const wl::ParallelPlan& p);

}  // namespace cs::drv
