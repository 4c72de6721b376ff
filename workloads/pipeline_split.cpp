#include "workloads/pipeline_split.h"

namespace cs::wl {

std::vector<int> stage_layers(const Model& m, const ParallelPlan& plan) {
  if (!plan.layers_per_stage.empty()) return plan.layers_per_stage;
  const int total = pipeline_layers(m);
  std::vector<int> out(static_cast<std::size_t>(plan.pp), total / plan.pp);
  const int extra = total % plan.pp;
  for (int i = 0; i < extra; ++i)
    ++out[static_cast<std::size_t>(1 + i)];  // extra < pp, so 1 + i < pp
  return out;
}

std::vector<LayerRange> chunk_layers(const Model& m, const ParallelPlan& plan) {
  const std::vector<int> layers = stage_layers(m, plan);
  const int p = plan.pp;
  const int v = plan.schedule == PipelineSchedule::kInterleaved ? plan.virtual_stages : 1;
  std::vector<LayerRange> out(static_cast<std::size_t>(p * v));
  int next = 0;
  for (int k = 0; k < v; ++k) {
    for (int s = 0; s < p; ++s) {
      const int size = layers[static_cast<std::size_t>(s)] / v;
      out[static_cast<std::size_t>(k * p + s)] = {next, next + size};
      next += size;
    }
  }
  return out;
}

}  // namespace cs::wl
