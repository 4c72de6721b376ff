#include "workloads/layer_cost.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "workloads/block_cost.h"
#include "workloads/block_shape.h"

namespace cs::wl {
namespace {

// Weights and gradients (2 B per parameter) and the roofline's HBM traffic: weights read once
// plus every saved activation written once and read once; backward moves twice the forward's.
void set_memory(LayerCost& out, std::int64_t saved_without_recompute) {
  out.weights = Bytes{out.parameters * kActivationBytes};
  out.gradients = Bytes{out.parameters * kActivationBytes};
  out.forward_memory_traffic = out.weights + Bytes{2 * saved_without_recompute};
  out.backward_memory_traffic = out.forward_memory_traffic * 2;
}

void set_tp(LayerCost& out, const TpCommunication& tp) {
  out.tp_collective_bytes = tp.bytes;
  out.tp_forward = tp.forward;
  out.tp_backward = tp.backward;
}

}  // namespace

CostParams cost_params(const Model& m, const ParallelPlan& plan) {
  CostParams p;
  p.micro_batch = plan.micro_batch;
  p.sequence = plan.sequence_length;
  if (m.family == ModelFamily::kTransformer && m.transformer.input == InputKind::kPatches) {
    p.sequence = m.transformer.patch_tokens();
  }
  p.tp = plan.tp;
  p.cp = plan.cp;
  p.ep = plan.ep;
  p.sequence_parallel = plan.sequence_parallel && plan.tp > 1;
  p.recompute = plan.recompute;
  p.precision = plan.precision;
  p.flash_attention = plan.flash_attention;
  return p;
}

LayerCost transformer_block_cost(const Model& m, const CostParams& p) {
  const TransformerConfig& c = m.transformer;
  const BlockShape x = block_shape(c, p);
  LayerCost out;
  out.forward = block_flops(c, x).forward();
  out.backward = out.forward * 2.0;
  const AttentionCoreCost attention = attention_core_cost(c, x, p.recompute, p.flash_attention);
  // Short of full recomputation, all that is recomputed is attention.
  out.recompute = p.recompute == Recompute::kFull ? out.forward : attention.recompute;
  out.attention_forward = attention.forward;
  out.attention_backward = attention.backward;
  out.attention_recompute = attention.recompute;
  out.attention_forward_traffic = attention.forward_traffic;
  out.attention_backward_traffic = attention.backward_traffic;
  out.attention_recompute_traffic = attention.recompute_traffic;
  out.attention_fused = attention.fused;
  const ElementwiseTraffic elementwise = elementwise_traffic(c, x);
  out.elementwise_forward = elementwise.forward;
  out.elementwise_backward = elementwise.backward;
  out.gemms = block_gemm_shapes(c, x, p.ep);
  for (const tg::GemmShape& g : out.gemms) {
    out.largest_weight = std::max(out.largest_weight, g.n * g.k);
  }
  if (c.is_moe()) out.largest_weight = std::max(out.largest_weight, x.h * c.experts);  // router
  const BlockParameters parameters = block_parameters_per_gpu(c, x, p.ep);
  out.parameters = parameters.total;
  out.expert_parameters = parameters.experts;
  const SavedActivations saved = saved_activations(c, x, p.recompute, p.flash_attention);
  out.activations_saved = saved.saved;
  out.recompute_transient = saved.transient;
  set_memory(out, saved.without_recompute.value());
  const BlockCommunication comm = block_communication(c, x, p);
  set_tp(out, comm.tp);
  out.moe_all_to_all_bytes = comm.moe_all_to_all;
  out.cp_kv_bytes = comm.cp_kv;
  out.output_bytes = comm.output;
  return out;
}

LayerCost embedding_cost(const Model& m, const CostParams& p) {
  const TransformerConfig& c = m.transformer;
  const BlockShape x = block_shape(c, p);
  const std::int64_t rep = x.rep();
  LayerCost out;
  std::int64_t saved = c.dropout ? rep : 0;  // embedding dropout mask
  if (c.input == InputKind::kPatches) {
    // The patch projection is a GEMM over (channels x patch^2) inputs, replicated over TP.
    const std::int64_t patches = c.patch_tokens() - 1;
    const std::int64_t patch_in = std::int64_t{c.channels} * c.patch_size * c.patch_size;
    out.forward = Flops{2.0 * static_cast<double>(x.b * patches) * static_cast<double>(patch_in) *
                        static_cast<double>(x.h)};
    out.backward = out.forward * 2.0;
    const std::int64_t positions = c.position == PositionEmbedding::kLearned ? c.patch_tokens() : 0;
    out.parameters = patch_in * x.h + (c.bias ? x.h : 0) + x.h + positions * x.h;
    out.largest_weight = std::max(patch_in, positions) * x.h;
    saved += x.g * x.b * patches * patch_in;
    out.activations_saved = Bytes{saved};
    set_memory(out, saved + x.e * x.tokens * x.h);
  } else {
    // A lookup: no FLOPs. The token table is split over TP by vocabulary (Megatron's
    // VocabParallelEmbedding, partial rows summed by one all-reduce); positions are replicated.
    const std::int64_t positions = c.position == PositionEmbedding::kLearned ? c.max_sequence : 0;
    out.parameters = x.vocab_t * x.h + (positions + c.type_vocab) * x.h;
    out.largest_weight = std::max({x.vocab_t, positions, std::int64_t{c.type_vocab}}) * x.h;
    out.activations_saved = Bytes{saved};
    set_memory(out, saved);
    out.forward_memory_traffic =
        Bytes{2 * x.e * x.tokens * x.h + saved};  // rows read, output written
    out.backward_memory_traffic = out.forward_memory_traffic * 2;
    if (x.t > 1) {
      out.tp_collective_bytes = Bytes{x.e * x.tokens * x.h};
      if (p.sequence_parallel) {
        out.tp_forward.reduce_scatter = 1;
        out.tp_backward.all_gather = 1;
      } else {
        out.tp_forward.all_reduce = 1;
      }
    }
  }
  out.output_bytes = Bytes{x.e * rep};
  return out;
}

LayerCost head_cost(const Model& m, const CostParams& p) {
  const TransformerConfig& c = m.transformer;
  const BlockShape x = block_shape(c, p);
  const double T = static_cast<double>(x.tokens), h = static_cast<double>(x.h);
  const std::int64_t rep = x.rep();
  const std::int64_t v_t = x.vocab_t;
  const std::int64_t untied = c.tied_embeddings ? 0 : v_t * x.h;
  LayerCost out;
  out.parameters = norm_parameters(c.norm, x.h);
  std::int64_t saved = x.e * rep;  // final norm input
  switch (c.head) {
    case HeadKind::kLm:
      out.forward = Flops{2 * T * h * static_cast<double>(v_t)};
      out.gemms = {{x.tokens, v_t, x.h}};
      out.parameters += untied;
      out.largest_weight = v_t * x.h;
      saved += x.g * rep + kLogitBytes * x.tokens * v_t;  // projection input, fp32 logits
      // Column-parallel: identity forward, all-reduce backward.
      set_tp(out, tp_communication(x, false, 0, 1));
      if (p.sequence_parallel && x.t > 1) {  // with SP: gather the input forward, scatter back
        out.tp_forward = {0, 1, 0};
        out.tp_backward = {0, 0, 1};
      }
      break;
    case HeadKind::kMlm:
      // BERT: dense h x h + GELU + norm (replicated over TP), then the vocabulary projection.
      out.forward = Flops{2 * T * h * h + 2 * T * h * static_cast<double>(v_t)};
      out.parameters +=
          x.h * x.h + (c.bias ? x.h : 0) + norm_parameters(c.norm, x.h) + untied + v_t;
      out.largest_weight = std::max(x.h, v_t) * x.h;
      saved += x.g * rep + 2 * x.e * x.tokens * x.h + x.g * x.tokens * x.h +
               kLogitBytes * x.tokens * v_t;
      set_tp(out, tp_communication(x, false, 0, 1));
      break;
    case HeadKind::kClassifier:
      // One token per sample (the class token), replicated over TP.
      out.forward = Flops{2.0 * static_cast<double>(x.b) * h * c.classes};
      out.parameters += x.h * c.classes + (c.bias ? c.classes : 0);
      out.largest_weight = x.h * c.classes;
      saved += x.g * x.b * x.h;
      break;
  }
  out.backward = out.forward * 2.0;
  out.activations_saved = Bytes{saved};
  set_memory(out, saved);
  // The final norm (read, write; backward 3 passes) and, for vocabulary heads, the
  // cross-entropy over the fp32 logits: forward max, exp-sum and normalise (4 passes), backward
  // read the probabilities, subtract the target and write the gradient (3 passes).
  const std::int64_t logits = c.head == HeadKind::kClassifier ? 0 : kLogitBytes * x.tokens * v_t;
  out.elementwise_forward = Bytes{2 * x.e * rep + 4 * logits};
  out.elementwise_backward = Bytes{3 * x.e * rep + 3 * logits};
  return out;
}

LayerCost cnn_layer_cost(const Model& m, std::size_t index, const CostParams& p) {
  if (m.family != ModelFamily::kCnn || index >= m.cnn.layers.size()) {
    throw InternalError("cnn_layer_cost: no CNN layer " + std::to_string(index) + " in " + m.name);
  }
  const CnnLayer& l = m.cnn.layers[index];
  LayerCost out;
  out.forward = l.forward_per_sample * static_cast<double>(p.micro_batch);
  out.backward = out.forward * 2.0;
  out.parameters = l.parameters;
  out.largest_weight = l.parameters;  // the layer list knows no finer module
  const std::int64_t saved = kActivationBytes * p.micro_batch * l.activation_elements;
  out.activations_saved = Bytes{saved};
  set_memory(out, saved);
  out.output_bytes = Bytes{kActivationBytes * p.micro_batch * l.output_elements};
  return out;
}

LayerCost pipeline_layer_cost(const Model& m, int index, const CostParams& p) {
  if (index < 0 || index >= pipeline_layers(m)) {
    throw InternalError("pipeline_layer_cost: layer " + std::to_string(index) +
                        " out of range for " + m.name);
  }
  if (m.family == ModelFamily::kCnn) return cnn_layer_cost(m, static_cast<std::size_t>(index), p);
  return transformer_block_cost(m, p);
}

std::vector<tg::GemmShape> backward_gemms(const std::vector<tg::GemmShape>& forward) {
  std::vector<tg::GemmShape> out;
  out.reserve(2 * forward.size());
  for (const tg::GemmShape& g : forward) {
    out.push_back({g.m, g.k, g.n});
    out.push_back({g.k, g.n, g.m});
  }
  return out;
}

Flops megatron_eq3_flops(std::int64_t global_batch, std::int64_t sequence, std::int64_t layers,
                         std::int64_t hidden, std::int64_t vocab) {
  const double B = static_cast<double>(global_batch), s = static_cast<double>(sequence);
  const double l = static_cast<double>(layers), h = static_cast<double>(hidden),
               V = static_cast<double>(vocab);
  return Flops{96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h))};
}

Flops megatron_model_flops(std::int64_t global_batch, std::int64_t sequence, std::int64_t layers,
                           std::int64_t hidden, std::int64_t vocab) {
  const double B = static_cast<double>(global_batch), s = static_cast<double>(sequence);
  const double l = static_cast<double>(layers), h = static_cast<double>(hidden),
               V = static_cast<double>(vocab);
  return Flops{72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h))};
}

Flops megatron_eq3_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence) {
  const TransformerConfig& c = m.transformer;
  return megatron_eq3_flops(global_batch, sequence, c.layers, c.hidden, c.vocab);
}

Flops megatron_model_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence) {
  const TransformerConfig& c = m.transformer;
  return megatron_model_flops(global_batch, sequence, c.layers, c.hidden, c.vocab);
}

Flops training_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence,
                     Recompute recompute) {
  // One sample's FLOPs times the batch: every term is linear in b.
  CostParams p;
  p.micro_batch = 1;
  p.sequence = sequence;
  p.recompute = recompute;
  const auto total = [](const LayerCost& c) { return c.forward + c.backward + c.recompute; };
  Flops per_sample{0};
  if (m.family == ModelFamily::kCnn) {
    for (std::size_t i = 0; i < m.cnn.layers.size(); ++i)
      per_sample += total(cnn_layer_cost(m, i, p));
  } else {
    if (m.transformer.input == InputKind::kPatches) p.sequence = m.transformer.patch_tokens();
    per_sample = total(transformer_block_cost(m, p)) * static_cast<double>(m.transformer.layers) +
                 total(embedding_cost(m, p)) + total(head_cost(m, p));
  }
  return per_sample * static_cast<double>(global_batch);
}

Flops model_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence) {
  return training_flops(m, global_batch, sequence, Recompute::kNone);
}

}  // namespace cs::wl
