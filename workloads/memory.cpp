#include "workloads/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.h"
#include "workloads/layer_cost.h"
#include "workloads/plan_check.h"

namespace cs::wl {
namespace {

// GiB with one decimal, the same unit for every term so that they compare at a glance.
std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB",
                static_cast<double>(b.value()) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

Bytes shard(std::int64_t parameters, std::int64_t bytes_per_parameter, std::int64_t ways) {
  return Bytes{(parameters * bytes_per_parameter + ways - 1) / ways};
}

// One pipeline unit of a stage (a transformer block, the embedding, the head, a CNN layer) as
// the memory estimate sees it, on one GPU.
struct Unit {
  std::int64_t dense = 0;    // parameters, the experts' excluded
  std::int64_t experts = 0;  // MoE expert parameters
  std::int64_t largest_weight = 0;
  Bytes saved{0};      // activations kept from forward to backward
  Bytes transient{0};  // activations rebuilt during its backward
  int chunk = 0;       // its model chunk on the stage (interleaved schedule), else 0
  std::int64_t parameters() const { return dense + experts; }
};

Unit unit_of(const LayerCost& c, int chunk) {
  Unit u;
  u.dense = c.parameters - c.expert_parameters;
  u.experts = c.expert_parameters;
  u.largest_weight = c.largest_weight;
  u.saved = c.activations_saved;
  u.transient = c.recompute_transient;
  u.chunk = chunk;
  return u;
}

// n_f A + max over units l of (R_l - S_l), S_l the saved activations of the units after l in
// l's chunk (memory.h). The last unit of a chunk has S_l = 0, so the maximum is at least 0.
Bytes peak_activations(const std::vector<Unit>& units, double in_flight) {
  Bytes saved{0};
  for (const Unit& u : units) saved += u.saved;
  Bytes rebuilt{0}, after{0};
  for (std::size_t i = units.size(); i-- > 0;) {
    if (i + 1 < units.size() && units[i + 1].chunk != units[i].chunk) after = Bytes{0};
    if (units[i].transient > after) rebuilt = std::max(rebuilt, units[i].transient - after);
    after += units[i].saved;
  }
  return scale(saved, in_flight) + rebuilt;
}

// The units of pipeline stage `stage` in forward order: the embedding (stage 0), its layers,
// the head (last stage) with, for tied embeddings and p > 1, its own copy of the token table.
std::vector<Unit> stage_units(const Model& m, const ParallelPlan& plan, const CostParams& params,
                              int stage, int layers, int first_layer) {
  const int p = plan.pp;
  const int v = plan.schedule == PipelineSchedule::kInterleaved ? plan.virtual_stages : 1;
  const int per_chunk = std::max(1, layers / v);  // interleaved: validate_plan makes it exact
  std::vector<Unit> units;
  if (m.family != ModelFamily::kTransformer) {
    for (int i = 0; i < layers; ++i) {
      units.push_back(unit_of(cnn_layer_cost(m, static_cast<std::size_t>(first_layer + i), params),
                              std::min(v - 1, i / per_chunk)));
    }
    return units;
  }
  if (stage == 0) units.push_back(unit_of(embedding_cost(m, params), 0));
  // Two kinds of block at most: a mixture's first dense_layers, and the rest.
  const TransformerConfig& t = m.transformer;
  const Unit block = unit_of(transformer_block_cost(m, params, t.layers - 1), 0);
  const Unit dense = t.moe_layers() > 0 && t.dense_layers > 0
                         ? unit_of(transformer_block_cost(m, params, 0), 0)
                         : block;
  for (int i = 0; i < layers; ++i) {
    units.push_back(t.is_moe_layer(first_layer + i) || !t.is_moe() ? block : dense);
    units.back().chunk = std::min(v - 1, i / per_chunk);
  }
  if (stage == p - 1) {
    Unit head = unit_of(head_cost(m, params), v - 1);
    const TransformerConfig& c = m.transformer;
    if (p > 1 && c.tied_embeddings && c.head != HeadKind::kClassifier) {
      head.dense += (c.vocab + params.tp - 1) / params.tp * c.hidden;  // the last stage's copy
    }
    units.push_back(head);
  }
  return units;
}

}  // namespace

double micro_batches_in_flight(const ParallelPlan& plan, int stage) {
  const int p = plan.pp;
  const int m = std::max(1, plan.micro_batches());
  if (p <= 1) return 1.0;
  switch (plan.schedule) {
    case PipelineSchedule::kGpipe:
      return m;
    case PipelineSchedule::kOneFOneB:
      return std::min(p - stage, m);
    case PipelineSchedule::kZbH1:
      // Stage i holds p - i micro-batches as 1F1B does, plus the i whose W pass is deferred
      // (their B has run): counted whole, the bound of Qi et al. 2024 (Table 1, ZB-H1: p M_B).
      return std::min(p, m);
    case PipelineSchedule::kInterleaved: {
      const int v = std::max(1, plan.virtual_stages);
      const int chunks = std::min(2 * (p - stage - 1) + (v - 1) * p + 1, m * v);
      return static_cast<double>(chunks) / v;
    }
  }
  return 1.0;
}

std::vector<MemoryEstimate> estimate_memory(const Model& m, const ParallelPlan& plan,
                                            Bytes capacity) {
  validate_plan(m, plan, plan.gpus(), "", "");
  const CostParams params = cost_params(m, plan);
  const std::vector<int> layers = stage_layers(m, plan);
  // ZeRO shards over all data-parallel (x context) ranks, or over a hybrid shard group.
  const std::int64_t dense_ways = plan.shard_ways();
  const std::int64_t expert_ways = std::max<std::int64_t>(1, dense_ways / plan.ep);
  const std::int64_t g = plan.grad_reduce_bytes;
  const bool z1 = plan.zero >= ZeroStage::kOptimizer, z2 = plan.zero >= ZeroStage::kGradients,
             z3 = plan.zero >= ZeroStage::kParameters;
  const Bytes bucket{std::llround(plan.dp_bucket_mib * 1024 * 1024)};
  const double f = plan.memory_fragmentation;

  std::vector<MemoryEstimate> out;
  int first_layer = 0;
  for (int stage = 0; stage < plan.pp; ++stage) {
    MemoryEstimate e;
    e.stage = stage;
    e.layers = layers[static_cast<std::size_t>(stage)];
    e.capacity = capacity;
    e.micro_batches_in_flight = micro_batches_in_flight(plan, stage);
    const std::vector<Unit> units = stage_units(m, plan, params, stage, e.layers, first_layer);
    first_layer += e.layers;

    // Model states: the ZeRO paper's stages.
    std::int64_t dense = 0, experts = 0, largest_unit = 0, largest_weight = 0;
    for (const Unit& u : units) {
      dense += u.dense;
      experts += u.experts;
      largest_unit = std::max(largest_unit, u.parameters());
      largest_weight = std::max(largest_weight, u.largest_weight);
    }
    e.parameters = dense + experts;
    e.weights = shard(dense, kWeightBytesPerParameter, z3 ? dense_ways : 1) +
                shard(experts, kWeightBytesPerParameter, z3 ? expert_ways : 1);
    e.gradients = shard(dense, g, z2 ? dense_ways : 1) + shard(experts, g, z2 ? expert_ways : 1);
    e.optimizer_state = shard(dense, kOptimizerBytesPerParameter, z1 ? dense_ways : 1) +
                        shard(experts, kOptimizerBytesPerParameter, z1 ? expert_ways : 1);

    // ZeRO-2/3's buffers, per the unit they work in.
    if (z2 && dense_ways > 1) {
      if (plan.zero_unit == ZeroUnit::kLayer) {
        e.gradient_buckets = Bytes{g * largest_unit};
        if (z3) e.gathered_weights = Bytes{(1 + plan.zero_prefetch) * kWeightBytesPerParameter * largest_unit};
      } else {
        e.gradient_buckets = Bytes{g * largest_weight} + std::min(bucket, Bytes{g * e.parameters});
        if (z3) {
          e.gathered_weights =
              Bytes{kWeightBytesPerParameter *
                    std::max(largest_weight, std::min(kDeepSpeedMaxLiveParameters, e.parameters))};
        }
      }
    }

    // Kept after the forward (reshard_after_forward false): every unit of the stage stays gathered
    // until its backward, so at the peak the whole stage's weights are.
    if (z3 && dense_ways > 1 && !plan.reshard_after_forward) {
      e.gathered_weights = Bytes{kWeightBytesPerParameter * e.parameters};
    }
    e.activations = peak_activations(units, e.micro_batches_in_flight);
    e.workspace = kWorkspace;
    const Bytes allocated = e.weights + e.gradients + e.optimizer_state + e.gathered_weights +
                            e.gradient_buckets + e.activations;
    e.fragmentation = scale(allocated, f / (1 - f));
    e.total = allocated + e.workspace + e.fragmentation;
    e.fits = e.total <= capacity;
    out.push_back(e);
  }
  int worst = 0;
  for (const auto& e : out) {
    if (e.total > out[static_cast<std::size_t>(worst)].total) worst = e.stage;
  }
  for (auto& e : out) e.worst_stage = worst;
  return out;
}

std::vector<MemoryEstimate> estimate_memory(const Model& m, const ParallelPlan& plan,
                                            const hw::GpuSpec& gpu) {
  return estimate_memory(m, plan, gpu.hbm_capacity);
}

MemoryEstimate peak_memory(const std::vector<MemoryEstimate>& stages) {
  if (stages.empty()) throw InternalError("peak_memory: no stages");
  return stages[static_cast<std::size_t>(stages.front().worst_stage)];
}

void check_fits(const MemoryEstimate& e, const std::string& gpu_name, bool allow_oom) {
  if (e.fits || allow_oom) return;
  std::string terms = "weights " + gib(e.weights) + ", gradients " + gib(e.gradients) +
                      ", optimizer state " + gib(e.optimizer_state);
  if (e.gathered_weights.value() > 0) terms += ", gathered weights " + gib(e.gathered_weights);
  if (e.gradient_buckets.value() > 0) terms += ", gradient buckets " + gib(e.gradient_buckets);
  terms += ", activations " + gib(e.activations) + ", workspace " + gib(e.workspace);
  if (e.fragmentation.value() > 0) terms += ", fragmentation " + gib(e.fragmentation);
  throw MemoryFitError("", "",
                   gpu_name + " (stage " + std::to_string(e.stage) + ") needs " + gib(e.total) +
                       " (" + terms + ") but has " + gib(e.capacity) +
                       "; use --allow-oom to simulate anyway");
}

}  // namespace cs::wl
