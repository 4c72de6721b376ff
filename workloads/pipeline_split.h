// Which layers each pipeline stage, and each model chunk of the interleaved schedule, holds.
//
// Stages: plan.layers_per_stage when given, else an even split with the remainder going to
// stages 1, 2, ... (stage 0 already holds the embedding and the most activations).
//
// Chunks (the interleaved schedule, v = plan.virtual_stages model chunks per GPU): as
// Megatron-Core places them (megatron/core/transformer/transformer_config.py, uneven pipeline
// split with a virtual pipeline; transformer_layer.py, get_transformer_layer_offset), stage s's
// L_s layers are cut into v chunks of L_s / v layers each, and the model runs chunk 0 of every
// stage in stage order, then chunk 1 of every stage, and so on: chunk k of stage s is the
// (k p + s)-th slice of the layers, of L_s / v layers. With the even split it is the (k p + s)-th
// of p v equal slices (Narayanan et al., SC21, Sec. 2.2). validate_plan (plan_check.h) requires
// v to divide every L_s, as Megatron-Core does. Without interleaving a stage is one chunk.
#pragma once

#include <vector>

#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

// Layers of each pipeline stage. For pp >= 1 and a layers_per_stage that validate_plan accepts.
std::vector<int> stage_layers(const Model& m, const ParallelPlan& plan);

// The layers [first, last) of a model chunk.
struct LayerRange {
  int first = 0, last = 0;
  bool operator==(const LayerRange&) const = default;
};

// Every chunk's layers, indexed k p + s (chunk k of stage s); p entries without interleaving.
std::vector<LayerRange> chunk_layers(const Model& m, const ParallelPlan& plan);

}  // namespace cs::wl
