#include "workloads/plan_check.h"

#include <algorithm>
#include <numeric>

#include "core/checked.h"
#include "core/errors.h"
#include "core/limits.h"
#include "workloads/layer_cost.h"

namespace cs::wl {

void check_plan_size(const ParallelPlan& plan, const std::string& file, const std::string& where) {
  if (saturating_product({plan.dp, plan.tp, plan.pp, plan.cp}) > limits().gpus) {
    throw ConfigError(file, where,
                      "dp x tp x pp x cp = " + std::to_string(plan.dp) + " x " + std::to_string(plan.tp) + " x " + std::to_string(plan.pp) + " x " +
                          std::to_string(plan.cp) + " is more than the largest cluster clustersim simulates (" + std::to_string(limits().gpus) +
                          " GPUs; " + limit_hint("gpus") + ")");
  }
}

void validate_plan(const Model& model, const ParallelPlan& plan, int gpus, const std::string& file,
                   const std::string& at) {
  auto fail = [&](const std::string& key, const std::string& msg) { throw ConfigError(file, at + "/" + key, msg); };
  if (plan.dp < 1 || plan.tp < 1 || plan.pp < 1 || plan.cp < 1 || plan.ep < 1) fail("dp", "parallel degrees must be at least 1");
  // The products this check and the graph builder form, first in 64 bits (saturating): past
  // these two tests every product of degrees and batch sizes below fits an int.
  check_plan_size(plan, file, at + "/dp");
  if (saturating_product({plan.micro_batch, plan.dp}) > plan.global_batch) {
    fail("global_batch", "the global batch " + std::to_string(plan.global_batch) + " is smaller than micro_batch x dp = " +
                             std::to_string(plan.micro_batch) + " x " + std::to_string(plan.dp));
  }
  if (plan.gpus() != gpus) {
    fail("dp", "dp x tp x pp x cp = " + std::to_string(plan.dp) + " x " + std::to_string(plan.tp) + " x " + std::to_string(plan.pp) +
                   " x " + std::to_string(plan.cp) + " = " + std::to_string(plan.gpus()) + ", but the job has " + std::to_string(gpus) + " GPUs");
  }
  if (model.family == ModelFamily::kTransformer) {
    const auto& t = model.transformer;
    if (t.heads % plan.tp != 0) fail("tp", "the model's " + std::to_string(t.heads) + " attention heads are not divisible by tp = " + std::to_string(plan.tp));
    if (t.is_moe() && (t.experts % plan.ep != 0)) fail("ep", "the model's " + std::to_string(t.experts) + " experts are not divisible by ep = " + std::to_string(plan.ep));
  } else if (plan.tp > 1 || plan.cp > 1) {
    fail("tp", "tensor and context parallelism apply to transformers only");
  }
  if (!model.transformer.is_moe() && plan.ep > 1) fail("ep", "expert parallelism needs a mixture-of-experts model");
  // Megatron-Core's routing options (parallel_plan.h).
  const bool moe = model.family == ModelFamily::kTransformer && model.transformer.is_moe();
  if (!(plan.moe_capacity_factor >= 0)) fail("moe_capacity_factor", "expected a capacity factor above 0, or 0 (the default) for dropless routing");
  if (plan.moe_capacity_factor > 0 && !moe) fail("moe_capacity_factor", "an expert capacity needs a mixture-of-experts model");
  if (plan.moe_pad_to_capacity && plan.moe_capacity_factor <= 0) {
    fail("moe_pad_to_capacity", "padding to the expert capacity needs moe_capacity_factor, as Megatron-Core's --moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor");
  }
  if (plan.moe_token_drop_policy != MoeDropPolicy::kProbs && plan.moe_capacity_factor <= 0) {
    fail("moe_token_drop_policy", "a drop policy needs moe_capacity_factor: dropless routing drops nothing");
  }
  if (plan.moe_load_imbalance != 1) {
    if (!moe) fail("moe_load_imbalance", "a load imbalance needs a mixture-of-experts model");
    const double experts = model.transformer.experts;
    if (!(plan.moe_load_imbalance >= 1 && plan.moe_load_imbalance <= experts)) {
      fail("moe_load_imbalance", "expected max/mean tokens per expert, from 1 (balanced) to the " + std::to_string(model.transformer.experts) + " experts (all tokens on one)");
    }
  }
  if ((plan.dp * plan.cp) % plan.ep != 0) fail("ep", "ep = " + std::to_string(plan.ep) + " must divide dp x cp = " + std::to_string(plan.dp * plan.cp));
  const int units = pipeline_layers(model);
  if (!plan.layers_per_stage.empty()) {
    if (static_cast<int>(plan.layers_per_stage.size()) != plan.pp) fail("layers_per_stage", "expected one entry per pipeline stage (" + std::to_string(plan.pp) + ")");
    const int sum = std::accumulate(plan.layers_per_stage.begin(), plan.layers_per_stage.end(), 0);
    if (sum != units) fail("layers_per_stage", "sums to " + std::to_string(sum) + " layers; " + model.name + " has " + std::to_string(units));
    for (int n : plan.layers_per_stage) {
      if (n < 1) fail("layers_per_stage", "every stage needs at least one layer");
    }
  } else if (units % plan.pp != 0 && plan.schedule != PipelineSchedule::kInterleaved) {
    fail("pp", "the model's " + std::to_string(units) + " layers are not divisible by pp = " + std::to_string(plan.pp) + " (give layers_per_stage for an uneven split)");
  }
  if (plan.micro_batch < 1) fail("micro_batch", "expected at least 1 sample per micro-batch");
  if (!(plan.memory_fragmentation >= 0 && plan.memory_fragmentation < 1)) {
    fail("memory_fragmentation", "expected a fraction of reserved memory, at least 0 and below 1");
  }
  if (plan.global_batch % (plan.micro_batch * plan.dp) != 0 || plan.global_batch < plan.micro_batch * plan.dp) {
    fail("global_batch", "the global batch " + std::to_string(plan.global_batch) + " is not a positive multiple of micro_batch x dp = " +
                             std::to_string(plan.micro_batch * plan.dp));
  }
  // The task graph holds every micro-batch's ops: refuse, before building it, a count no
  // training run uses (docs/cli.md, "Limits").
  if (plan.micro_batches() > limits().micro_batches) {
    fail("global_batch", std::to_string(plan.micro_batches()) + " micro-batches per iteration (global_batch / (micro_batch x dp)) are more than " +
                             std::to_string(limits().micro_batches) + "; " + limit_hint("micro_batches"));
  }
  // Each micro-batch passes every layer of a stage forward and backward, a handful of ops each:
  // the product bounds the task graph of one rank (a 10^6-layer model ran 100 s and 2 GB).
  const std::int64_t layers_per_stage = (pipeline_layers(model) + plan.pp - 1) / plan.pp;
  if (saturating_product({plan.micro_batches(), layers_per_stage}) > limits().layer_passes) {
    fail("global_batch", std::to_string(plan.micro_batches()) + " micro-batches through " + std::to_string(layers_per_stage) +
                             " layers per pipeline stage are more than " + std::to_string(limits().layer_passes) + " layer passes per rank; " +
                             limit_hint("layer_passes"));
  }
  if (plan.schedule != PipelineSchedule::kInterleaved && plan.virtual_stages != 1) {
    fail("virtual_stages", "model chunks per GPU apply to the interleaved schedule; the plan's schedule is another (it would be ignored)");
  }
  if (plan.schedule != PipelineSchedule::kGpipe && plan.pp > 1 && plan.micro_batches() < plan.pp) {
    fail("global_batch", std::to_string(plan.micro_batches()) + " micro-batches are fewer than the " + std::to_string(plan.pp) +
                             " pipeline stages that 1F1B needs");
  }
  if (plan.tp_comm_overlap && (plan.tp < 2 || !plan.sequence_parallel)) {
    fail("tp_comm_overlap", "overlaps the sequence-parallel all-gathers and reduce-scatters of tensor parallelism: it needs tp >= 2 and sequence_parallel, as Megatron-Core's --tp-comm-overlap does");
  }
  if (plan.zero_shard > 0 && plan.zero == ZeroStage::kNone) {
    fail("zero_shard", "shards the ZeRO state over groups of data-parallel ranks: it needs zero 1, 2 or 3");
  }
  if (plan.zero_shard > 0 && (plan.dp * plan.cp) % plan.zero_shard != 0) {
    fail("zero_shard", "the shard group of " + std::to_string(plan.zero_shard) + " ranks does not divide dp x cp = " + std::to_string(plan.dp * plan.cp));
  }
  if (plan.hybrid_sharding() && plan.shard_ways() % plan.ep != 0) {
    fail("zero_shard", "the shard group of " + std::to_string(plan.zero_shard) + " ranks must hold whole expert-parallel groups (ep = " + std::to_string(plan.ep) + ")");
  }
  if (plan.overlap_param_gather && plan.zero != ZeroStage::kOptimizer && plan.zero != ZeroStage::kGradients) {
    fail("overlap_param_gather", "overlaps the all-gather of the weights a sharded optimizer updated: it needs zero 1 or 2 (Megatron-Core's distributed optimizer)");
  }
  if (plan.schedule == PipelineSchedule::kInterleaved) {
    const int v = plan.virtual_stages;
    if (v < 2) fail("virtual_stages", "the interleaved schedule needs virtual_stages >= 2 (model chunks per GPU)");
    if (plan.pp < 2) fail("pp", "the interleaved schedule needs pp >= 2");
    if (!plan.layers_per_stage.empty()) {
      // Megatron-Core's rule for an uneven split with a virtual pipeline (transformer_config.py):
      // every stage's layers split into v equal chunks.
      for (std::size_t i = 0; i < plan.layers_per_stage.size(); ++i) {
        if (plan.layers_per_stage[i] % v != 0) {
          fail("layers_per_stage/" + std::to_string(i),
               std::to_string(plan.layers_per_stage[i]) + " layers do not split into virtual_stages = " + std::to_string(v) +
                   " equal chunks (the interleaved schedule gives each stage's chunks equal layers, as Megatron-Core does)");
        }
      }
    } else if (units % (plan.pp * v) != 0) {
      fail("virtual_stages", "the model's " + std::to_string(units) + " layers do not split into pp x virtual_stages = " + std::to_string(plan.pp * v) + " equal chunks");
    }
    if (plan.micro_batches() % plan.pp != 0) {
      fail("global_batch", "the interleaved schedule needs the " + std::to_string(plan.micro_batches()) + " micro-batches to be a multiple of pp = " + std::to_string(plan.pp));
    }
  }
  if (model.family != ModelFamily::kTransformer) return;
  // The shapes the per-layer formulas cover.
  const TransformerConfig& c = model.transformer;
  const std::string of_model = " of " + model.name;
  if (c.kv_heads % plan.tp != 0 && plan.tp % c.kv_heads != 0) {
    fail("tp", "tensor parallelism " + std::to_string(plan.tp) + " must divide, or be a multiple of, the " + std::to_string(c.kv_heads) +
                   " key/value heads" + of_model);
  }
  const std::int64_t s = cost_params(model, plan).sequence;
  if (s < 1) fail("sequence_length", "must be at least 1");
  if (c.input == InputKind::kTokens && c.position == PositionEmbedding::kLearned && s > c.max_sequence) {
    fail("sequence_length", "sequence length " + std::to_string(s) + " exceeds the " + std::to_string(c.max_sequence) + " learned positions" + of_model);
  }
  if (s % plan.cp != 0) fail("cp", "context parallelism " + std::to_string(plan.cp) + " must divide the sequence length " + std::to_string(s));
  if (plan.cp > 1 && plan.cp_comm_type == CpCommType::kA2a) {
    // The all-to-all hands each of the c GPUs a/(t c) query heads and kv/(t c) key/value heads
    // over the whole sequence; Transformer Engine's flash_attn_a2a_communicate asserts that the
    // heads divide by the CP size.
    const int q_heads = c.heads / plan.tp, kv_heads = std::max(1, c.kv_heads / plan.tp);
    if (q_heads % plan.cp != 0 || kv_heads % plan.cp != 0) {
      fail("cp_comm_type", "a2a splits the heads over context parallelism: cp = " + std::to_string(plan.cp) + " must divide the " +
                               std::to_string(q_heads) + " query and " + std::to_string(kv_heads) + " key/value heads per tensor-parallel rank" + of_model);
    }
  }
}

}  // namespace cs::wl
