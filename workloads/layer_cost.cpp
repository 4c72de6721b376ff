#include "workloads/layer_cost.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "workloads/block_cost.h"
#include "workloads/block_shape.h"

namespace cs::wl {
namespace {

// Weights and gradients: 2 B per parameter held.
void set_weights(LayerCost& out) {
  out.weights = Bytes{out.parameters * kActivationBytes};
  out.gradients = Bytes{out.parameters * kActivationBytes};
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
  p.moe_capacity_factor = plan.moe_capacity_factor;
  p.moe_pad_to_capacity = plan.moe_pad_to_capacity;
  p.moe_load_imbalance = plan.moe_load_imbalance;
  return p;
}

LayerCost transformer_block_cost(const Model& m, const CostParams& p, int layer) {
  if (layer < 0) layer = m.transformer.layers - 1;
  const TransformerConfig c = block_config(m.transformer, layer);
  const BlockShape x = block_shape(c, p);
  LayerCost out;
  const AttentionCoreCost attention = attention_core_cost(c, x, p.recompute, p.flash_attention);
  // The block's GEMMs plus its attention core as executed (a fused causal kernel skips the
  // masked tiles: block_cost.h).
  const BlockFlops f = block_flops(c, x);
  const Flops gemms{f.projections + f.mlp};
  out.forward = gemms + attention.forward;
  out.backward = gemms * 2.0 + attention.backward;
  // Short of full recomputation, all that is recomputed is attention.
  out.recompute = p.recompute == Recompute::kFull ? out.forward : attention.recompute;
  out.attention_forward = attention.forward;
  out.attention_backward = attention.backward;
  out.attention_recompute = attention.recompute;
  out.attention_forward_traffic = attention.forward_traffic;
  out.attention_backward_traffic = attention.backward_traffic;
  out.attention_recompute_traffic = attention.recompute_traffic;
  out.attention_fused = attention.fused;
  const GemmTraffic gemm = block_gemm_traffic(c, x);
  out.gemm_forward_traffic = gemm.forward;
  out.gemm_backward_traffic = gemm.backward;
  out.gemm_recompute_traffic = p.recompute == Recompute::kFull ? gemm.forward : Bytes{0};
  const ElementwiseTraffic elementwise = elementwise_traffic(c, x);
  const ElementwiseTraffic casts = fp8_cast_traffic(x);
  out.elementwise_forward = elementwise.forward + casts.forward;
  out.elementwise_backward = elementwise.backward + casts.backward;
  out.gemms = block_gemm_shapes(c, x);
  for (const tg::GemmShape& g : out.gemms) {
    out.largest_weight = std::max(out.largest_weight, g.n * g.k);
  }
  if (c.is_moe()) out.largest_weight = std::max(out.largest_weight, x.h * c.experts);  // router
  const BlockParameters parameters = block_parameters_per_gpu(c, x);
  out.parameters = parameters.total;
  out.expert_parameters = parameters.experts;
  const SavedActivations saved = saved_activations(c, x, p.recompute, p.flash_attention);
  out.activations_saved = saved.saved;
  out.recompute_transient = saved.transient;
  set_weights(out);
  const BlockCommunication comm = block_communication(c, x, p);
  set_tp(out, comm.tp);
  out.moe_all_to_all_bytes = comm.moe_all_to_all;
  out.cp_kv_bytes = comm.cp_kv;
  if (p.cp > 1) out.cp_q_bytes = Bytes{x.e * x.tokens * x.q_t};
  out.output_bytes = comm.output;
  return out;
}

LayerCost embedding_cost(const Model& m, const CostParams& p) {
  const TransformerConfig& c = m.transformer;
  const BlockShape x = block_shape(c, p);
  const std::int64_t rep = x.rep();
  LayerCost out;
  const std::int64_t mask = c.dropout ? rep : 0;  // embedding dropout mask (1 B per element)
  const std::int64_t row = x.e * x.tokens * x.h;  // one h-wide row per token
  const bool learned = c.position == PositionEmbedding::kLearned;
  if (c.input == InputKind::kPatches) {
    // The patch projection is a GEMM (b p, h, channels x patch^2), replicated over TP, whose
    // epilogue adds the (learned) positions. HBM bytes: the GEMM's operands and result, the
    // position rows read, the dropout mask written; backward the GEMM's backward and the mask.
    const std::int64_t patches = c.patch_tokens() - 1;
    const std::int64_t patch_in = std::int64_t{c.channels} * c.patch_size * c.patch_size;
    out.forward = Flops{2.0 * static_cast<double>(x.b * patches) * static_cast<double>(patch_in) *
                        static_cast<double>(x.h)};
    out.backward = out.forward * 2.0;
    const std::int64_t positions = learned ? c.patch_tokens() : 0;
    out.parameters = patch_in * x.h + (c.bias ? x.h : 0) + x.h + positions * x.h;
    out.largest_weight = std::max(patch_in, positions) * x.h;
    out.activations_saved = Bytes{mask + x.g * x.b * patches * patch_in};
    const std::vector<tg::GemmShape> projection = {{x.b * patches, x.h, patch_in}};
    out.gemm_forward_traffic =
        gemm_traffic(projection, x.g, x.e) + Bytes{(learned ? row : 0) + mask};
    out.gemm_backward_traffic = gemm_traffic(backward_gemms(projection), x.g, x.e) + Bytes{mask};
  } else {
    // A lookup: no FLOPs. The token table is split over TP by vocabulary (Megatron's
    // VocabParallelEmbedding, partial rows summed by one all-reduce); positions are replicated.
    // HBM bytes, with n tables (tokens, learned positions, token types): forward one row per
    // token read from each, their sum and the dropout mask written, n e T h + e T h + mask;
    // backward the output gradient and the mask read, and one row per token accumulated into
    // each table's gradient (read and written), e T h + mask + 2 n e T h.
    const std::int64_t positions = learned ? c.max_sequence : 0;
    out.parameters = x.vocab_t * x.h + (positions + c.type_vocab) * x.h;
    out.largest_weight = std::max({x.vocab_t, positions, std::int64_t{c.type_vocab}}) * x.h;
    out.activations_saved = Bytes{mask};
    const std::int64_t tables = 1 + (learned ? 1 : 0) + (c.type_vocab > 0 ? 1 : 0);
    out.gemm_forward_traffic = Bytes{tables * row + row + mask};
    out.gemm_backward_traffic = Bytes{row + mask + 2 * tables * row};
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
  set_weights(out);
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
  // HBM bytes of the head's GEMMs: operands g bytes per element, results e bytes, except the
  // vocabulary projection's fp32 logits (kLogitBytes), written once here and read by the
  // cross-entropy below.
  const tg::GemmShape vocabulary{x.tokens, v_t, x.h};
  switch (c.head) {
    case HeadKind::kLm:
      out.forward = Flops{2 * T * h * static_cast<double>(v_t)};
      out.gemms = {vocabulary};
      out.gemm_forward_traffic = gemm_traffic(out.gemms, x.g, kLogitBytes);
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
      out.gemms = {{x.tokens, x.h, x.h}, vocabulary};
      out.gemm_forward_traffic =
          gemm_traffic({out.gemms[0]}, x.g, x.e) + gemm_traffic({vocabulary}, x.g, kLogitBytes);
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
      out.gemms = {{x.b, c.classes, x.h}};
      out.gemm_forward_traffic = gemm_traffic(out.gemms, x.g, x.e);
      out.parameters += x.h * c.classes + (c.bias ? c.classes : 0);
      out.largest_weight = x.h * c.classes;
      saved += x.g * x.b * x.h;
      break;
  }
  out.backward = out.forward * 2.0;
  out.gemm_backward_traffic = gemm_traffic(backward_gemms(out.gemms), x.g, x.e);
  out.activations_saved = Bytes{saved};
  set_weights(out);
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
  set_weights(out);
  // One op per layer (convolutions, norms and activations together): weights read once plus
  // every saved activation written and read once; backward twice the forward's.
  out.gemm_forward_traffic = out.weights + Bytes{2 * saved};
  out.gemm_backward_traffic = out.gemm_forward_traffic * 2;
  out.output_bytes = Bytes{kActivationBytes * p.micro_batch * l.output_elements};
  return out;
}

LayerCost pipeline_layer_cost(const Model& m, int index, const CostParams& p) {
  if (index < 0 || index >= pipeline_layers(m)) {
    throw InternalError("pipeline_layer_cost: layer " + std::to_string(index) +
                        " out of range for " + m.name);
  }
  if (m.family == ModelFamily::kCnn) return cnn_layer_cost(m, static_cast<std::size_t>(index), p);
  return transformer_block_cost(m, p, index);
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

Bytes gemm_traffic(const std::vector<tg::GemmShape>& shapes, std::int64_t in, std::int64_t out) {
  std::int64_t bytes = 0;
  for (const tg::GemmShape& g : shapes) bytes += in * (g.m * g.k + g.k * g.n) + out * g.m * g.n;
  return Bytes{bytes};
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
    const TransformerConfig& t = m.transformer;
    if (t.input == InputKind::kPatches) p.sequence = t.patch_tokens();
    // The dense blocks (all, or a mixture's first dense_layers) and the blocks with experts.
    const int moe = t.moe_layers();
    per_sample = total(embedding_cost(m, p)) + total(head_cost(m, p));
    if (t.layers > moe) {
      per_sample += total(transformer_block_cost(m, p, 0)) * static_cast<double>(t.layers - moe);
    }
    if (moe > 0) {
      per_sample += total(transformer_block_cost(m, p, t.layers - 1)) * static_cast<double>(moe);
    }
  }
  return per_sample * static_cast<double>(global_batch);
}

Flops model_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence) {
  return training_flops(m, global_batch, sequence, Recompute::kNone);
}

}  // namespace cs::wl
