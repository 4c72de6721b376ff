// The checks of a parallel plan against a model, all in one place. They run in this order, and
// the first that fails is the error the user sees:
//   degrees      dp, tp, pp, cp and ep at least 1; dp x tp x pp x cp (in 64 bits) at most the
//                GPU limit (core/limits.h), then = the job's GPUs
//   model        transformers: tp divides the attention heads, ep the experts; CNNs: no tensor
//                or context parallelism; ep > 1 only for a mixture of experts; ep divides dp x cp;
//                moe_capacity_factor >= 0, and above 0 only for a mixture; moe_pad_to_capacity
//                and a moe_token_drop_policy other than probs only with a capacity factor;
//                moe_load_imbalance other than 1 only for a mixture, from 1 to its experts
//   stages       layers_per_stage: one entry per stage, summing to the model's layers, each at
//                least 1; without it pp divides the layers (but for the interleaved schedule)
//   batches      micro_batch at least 1; memory_fragmentation in [0, 1); global_batch a positive
//                multiple of micro_batch x dp; 1F1B, interleaved and zb-h1: at least pp
//                micro-batches
//   interleaved  virtual_stages >= 2, pp >= 2; with layers_per_stage, virtual_stages divides
//                every stage's layers (Megatron-Core's rule), else the layers split into pp x
//                virtual_stages equal chunks; micro-batches a multiple of pp
//   shapes       what the per-layer formulas (layer_cost.h) cover, for transformers: tp divides,
//                or is a multiple of, the key/value heads; the sequence s (sequence_length, or
//                a ViT's patch tokens) at least 1, within a learned position table, and divided
//                by cp; cp_comm_type a2a: cp divides the query and the key/value heads per
//                tensor-parallel rank
#pragma once

#include <string>

#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

// Throws ConfigError naming `file` and the JSON path under `plan_path` of the key at fault
// ("/plan/tp"); with an empty plan_path the path is the key's alone ("/tp").
void validate_plan(const Model& model, const ParallelPlan& plan, int gpus, const std::string& file,
                   const std::string& plan_path);

// The first of those checks alone, for a reader to make as soon as it has the degrees, before
// anything multiplies them as ints: dp x tp x pp x cp, formed in 64 bits, at most the largest
// cluster (limits().gpus). Throws ConfigError at `where` (the plan's "dp", or the plan without one).
void check_plan_size(const ParallelPlan& plan, const std::string& file, const std::string& where);

}  // namespace cs::wl
