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

}  // namespace

std::vector<int> stage_layers(const Model& m, const ParallelPlan& plan) {
  if (!plan.layers_per_stage.empty()) return plan.layers_per_stage;
  const int total = pipeline_layers(m);
  std::vector<int> out(static_cast<std::size_t>(plan.pp), total / plan.pp);
  const int extra = total % plan.pp;
  for (int i = 0; i < extra; ++i)
    ++out[static_cast<std::size_t>(1 + i)];  // extra < pp, so 1 + i < pp
  return out;
}

double micro_batches_in_flight(const ParallelPlan& plan, int stage) {
  const int p = plan.pp;
  const int m = std::max(1, plan.micro_batches());
  if (p <= 1) return 1.0;
  switch (plan.schedule) {
    case PipelineSchedule::kGpipe:
      return m;
    case PipelineSchedule::kOneFOneB:
      return std::min(p - stage, m);
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
  const int p = plan.pp;
  const std::int64_t dense_ways = std::int64_t{plan.dp} * plan.cp;
  const std::int64_t expert_ways = std::max<std::int64_t>(1, dense_ways / plan.ep);
  const bool is_transformer = m.family == ModelFamily::kTransformer;

  std::vector<MemoryEstimate> out;
  int first_layer = 0;
  for (int stage = 0; stage < p; ++stage) {
    MemoryEstimate e;
    e.stage = stage;
    e.layers = layers[static_cast<std::size_t>(stage)];
    e.capacity = capacity;
    e.micro_batches_in_flight = micro_batches_in_flight(plan, stage);

    // What one micro-batch leaves on this stage, and its parameters.
    std::int64_t dense = 0, experts = 0;
    Bytes saved{0}, transient{0}, layer_weights{0};
    const auto add = [&](const LayerCost& c) {
      dense += c.parameters - c.expert_parameters;
      experts += c.expert_parameters;
      saved += c.activations_saved;
      transient = std::max(transient, c.recompute_transient);
      layer_weights = std::max(layer_weights, c.weights);
    };
    if (is_transformer) {
      const LayerCost block = transformer_block_cost(m, params);
      for (int i = 0; i < e.layers; ++i) add(block);
      if (stage == 0) add(embedding_cost(m, params));
      if (stage == p - 1) {
        add(head_cost(m, params));
        const TransformerConfig& c = m.transformer;
        if (p > 1 && c.tied_embeddings && c.head != HeadKind::kClassifier) {
          dense += (c.vocab + params.tp - 1) / params.tp *
                   c.hidden;  // the last stage's copy of the table
        }
      }
    } else {
      for (int i = 0; i < e.layers; ++i)
        add(cnn_layer_cost(m, static_cast<std::size_t>(first_layer + i), params));
    }
    first_layer += e.layers;

    e.parameters = dense + experts;
    const bool z1 = plan.zero >= ZeroStage::kOptimizer, z2 = plan.zero >= ZeroStage::kGradients,
               z3 = plan.zero >= ZeroStage::kParameters;
    e.weights = shard(dense, kWeightBytesPerParameter, z3 ? dense_ways : 1) +
                shard(experts, kWeightBytesPerParameter, z3 ? expert_ways : 1);
    e.gradients = shard(dense, kGradientBytesPerParameter, z2 ? dense_ways : 1) +
                  shard(experts, kGradientBytesPerParameter, z2 ? expert_ways : 1);
    e.optimizer_state = shard(dense, kOptimizerBytesPerParameter, z1 ? dense_ways : 1) +
                        shard(experts, kOptimizerBytesPerParameter, z1 ? expert_ways : 1);
    e.activations = scale(saved, e.micro_batches_in_flight) + transient;
    e.workspace = kWorkspace + (z3 ? layer_weights * 2 : Bytes{0});
    e.total = e.weights + e.gradients + e.optimizer_state + e.activations + e.workspace;
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
  throw InputError("", "",
                   gpu_name + " (stage " + std::to_string(e.stage) + ") needs " + gib(e.total) +
                       " (weights " + gib(e.weights) + ", gradients " + gib(e.gradients) +
                       ", optimizer state " + gib(e.optimizer_state) + ", activations " +
                       gib(e.activations) + ", workspace " + gib(e.workspace) + ") but has " +
                       gib(e.capacity) + "; use --allow-oom to simulate anyway");
}

}  // namespace cs::wl
