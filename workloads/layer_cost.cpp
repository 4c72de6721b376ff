#include "workloads/layer_cost.h"

#include <algorithm>
#include <string>

#include "core/errors.h"

namespace cs::wl {
namespace {

constexpr std::int64_t kActivationBytes = 2;  // bf16 activations and communication
constexpr std::int64_t kLogitBytes = 4;       // logits are kept in fp32 for the cross-entropy

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t norm_params(NormKind n, std::int64_t h) {
  return n == NormKind::kLayerNorm ? 2 * h : h;
}

// The per-GPU shape of one micro-batch through a transformer.
struct Shape {
  std::int64_t b, s, sl, tokens;  // samples, sequence, local sequence s/c, T = b s/c
  std::int64_t h, t, r;  // hidden, TP degree, divisor of "replicated" tensors (t with SP, else 1)
  std::int64_t heads_t, q_t, kv_t;  // heads, query width and K (or V) width on this GPU
  std::int64_t f_t, fe_t;           // MLP width and expert MLP width on this GPU
  std::int64_t e = kActivationBytes;
  std::int64_t g;  // bytes of a saved GEMM input: 2, or 1 with fp8
};

Shape shape(const TransformerConfig& c, const CostParams& p) {
  Shape x{};
  x.b = p.micro_batch;
  x.s = p.sequence;
  x.sl = p.sequence / p.cp;
  x.tokens = x.b * x.sl;
  x.h = c.hidden;
  x.t = p.tp;
  x.r = p.sequence_parallel ? p.tp : 1;
  x.heads_t = c.heads / p.tp;
  x.q_t = x.heads_t * c.head_dim();
  // Fewer KV heads than TP ranks: each rank keeps one replicated KV head (Megatron's GQA rule).
  x.kv_t = ceil_div(c.kv_heads, p.tp) * c.head_dim();
  x.f_t = ceil_div(c.ffn_hidden, p.tp);
  x.fe_t = c.is_moe() ? ceil_div(c.expert_ffn_hidden, p.tp) : 0;
  x.g = p.precision == Precision::kFp8 ? 1 : 2;
  return x;
}

std::int64_t mlp_params(const TransformerConfig& c, std::int64_t h, std::int64_t width) {
  if (c.gated_mlp) return 3 * h * width + (c.bias ? 2 * width + h : 0);
  return 2 * h * width + (c.bias ? width + h : 0);
}

// Saved bytes of one MLP (or one expert's share) over `tokens` tokens of width `w` per GPU.
std::int64_t mlp_activations(const TransformerConfig& c, const Shape& x, std::int64_t tokens_in,
                             std::int64_t w) {
  // fc1 input (T h / r: replicated without SP), activation-function input(s), fc2 input
  return x.g * tokens_in + x.e * x.tokens * w * (c.gated_mlp ? 2 : 1) + x.g * x.tokens * w;
}

void set_memory(LayerCost& out, std::int64_t saved_without_recompute) {
  out.weights = Bytes{out.parameters * kActivationBytes};
  out.gradients = Bytes{out.parameters * kActivationBytes};
  out.forward_memory_traffic = out.weights + Bytes{2 * saved_without_recompute};
  out.backward_memory_traffic = out.forward_memory_traffic * 2;
}

void set_tp(LayerCost& out, const Shape& x, bool sp, int fwd_reductions, int bwd_reductions) {
  if (x.t <= 1) return;
  out.tp_collective_bytes = Bytes{x.e * x.tokens * x.h};
  if (sp) {
    out.tp_forward.all_gather = out.tp_forward.reduce_scatter = fwd_reductions;
    out.tp_backward.all_gather = out.tp_backward.reduce_scatter = bwd_reductions;
  } else {
    out.tp_forward.all_reduce = fwd_reductions;
    out.tp_backward.all_reduce = bwd_reductions;
  }
}

[[noreturn]] void plan_error(const std::string& path, const std::string& message) {
  throw InputError("", path, message);
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

void check_cost_params(const Model& m, const CostParams& p) {
  const std::string who = " of " + m.name;
  if (p.micro_batch < 1) plan_error("/micro_batch", "must be at least 1");
  if (p.tp < 1) plan_error("/tp", "must be at least 1");
  if (p.cp < 1) plan_error("/cp", "must be at least 1");
  if (p.ep < 1) plan_error("/ep", "must be at least 1");
  if (m.family == ModelFamily::kCnn) {
    if (p.tp != 1)
      plan_error("/tp", "CNN layers are not tensor-parallel; tp must be 1 for " + m.name);
    if (p.cp != 1) plan_error("/cp", "a CNN has no sequence to split; cp must be 1 for " + m.name);
    if (p.ep != 1) plan_error("/ep", m.name + " has no experts; ep must be 1");
    return;
  }
  const TransformerConfig& c = m.transformer;
  if (c.heads % p.tp != 0) {
    plan_error("/tp", "tensor parallelism " + std::to_string(p.tp) + " must divide the " +
                          std::to_string(c.heads) + " attention heads" + who);
  }
  if (c.kv_heads % p.tp != 0 && p.tp % c.kv_heads != 0) {
    plan_error("/tp", "tensor parallelism " + std::to_string(p.tp) +
                          " must divide, or be a multiple of, the " + std::to_string(c.kv_heads) +
                          " key/value heads" + who);
  }
  if (p.sequence < 1) plan_error("/sequence_length", "must be at least 1");
  if (c.input == InputKind::kTokens && c.position == PositionEmbedding::kLearned &&
      p.sequence > c.max_sequence) {
    plan_error("/sequence_length", "sequence length " + std::to_string(p.sequence) +
                                       " exceeds the " + std::to_string(c.max_sequence) +
                                       " learned positions" + who);
  }
  if (p.sequence % p.cp != 0) {
    plan_error("/cp", "context parallelism " + std::to_string(p.cp) +
                          " must divide the sequence length " + std::to_string(p.sequence));
  }
  if (!c.is_moe() && p.ep != 1) plan_error("/ep", m.name + " has no experts; ep must be 1");
  if (c.is_moe() && c.experts % p.ep != 0) {
    plan_error("/ep", "expert parallelism " + std::to_string(p.ep) + " must divide the " +
                          std::to_string(c.experts) + " experts" + who);
  }
}

LayerCost transformer_block_cost(const Model& m, const CostParams& p) {
  const TransformerConfig& c = m.transformer;
  const Shape x = shape(c, p);
  const double T = static_cast<double>(x.tokens), h = static_cast<double>(x.h);
  LayerCost out;

  // FLOPs: QKV and output projections, attention scores and context, MLP or experts.
  const double linear =
      2 * T * h * static_cast<double>(x.q_t + 2 * x.kv_t) + 2 * T * static_cast<double>(x.q_t) * h;
  const double core =
      4.0 * static_cast<double>(x.b * x.sl) * static_cast<double>(x.s) * static_cast<double>(x.q_t);
  const double mlp_factor = c.gated_mlp ? 6.0 : 4.0;
  double mlp = 0;
  if (c.is_moe()) {
    mlp = 2 * T / static_cast<double>(x.r) * h * c.experts +
          c.top_k * mlp_factor * T * h * static_cast<double>(x.fe_t);
  } else {
    mlp = mlp_factor * T * h * static_cast<double>(x.f_t);
  }
  out.forward = Flops{linear + core + mlp};
  out.backward = out.forward * 2.0;
  if (p.recompute == Recompute::kFull) {
    out.recompute = out.forward;
  } else if (p.flash_attention) {
    out.recompute = Flops{core / 2};  // the scores QK^T, rebuilt tile by tile in backward
  } else if (p.recompute == Recompute::kSelective) {
    out.recompute = Flops{core};
  }

  const std::int64_t rep = x.tokens * x.h / x.r;  // block-width tensors that TP alone replicates

  // The attention core as its own kernels. Flash attention is one fused kernel reading Q, K, V
  // and writing the context (backward: reading those and dO, writing dQ, dK, dV). Without it
  // the b a/t s s/c score tensor (2 B per element) goes through HBM once per pass; forward:
  // QK^T writes it (1), the fused scale-mask-softmax reads and writes it (2), dropout reads it
  // and writes it with a 1-byte mask (2.5), the context GEMM reads it (1); backward: dP written
  // (1), P read for dV (1), dropout backward (2.5), softmax backward reads two and writes one
  // (3), dS read for dQ and for dK (2). Without dropout the 2.5 passes drop out of each.
  {
    const std::int64_t qkvo = x.e * x.tokens * 2 * (x.q_t + x.kv_t);  // Q, K, V in; context out
    out.attention_forward = Flops{core};
    out.attention_backward = Flops{2 * core};
    // Short of full recomputation, all that is recomputed is attention (see `recompute` above).
    out.attention_recompute = p.recompute == Recompute::kFull ? Flops{core} : out.recompute;
    out.attention_fused = p.flash_attention;
    if (p.flash_attention) {
      out.attention_forward_traffic = Bytes{qkvo};
      out.attention_backward_traffic = Bytes{2 * qkvo};
      out.attention_recompute_traffic = Bytes{0};  // inside the fused backward
    } else {
      const std::int64_t score = x.e * x.b * x.heads_t * x.sl * x.s;
      const std::int64_t dropout_half_passes = c.dropout ? 5 : 0;
      out.attention_forward_traffic = Bytes{qkvo + score * (8 + dropout_half_passes) / 2};
      out.attention_backward_traffic = Bytes{2 * qkvo + score * (14 + dropout_half_passes) / 2};
      out.attention_recompute_traffic =
          out.attention_recompute.value() > 0 ? out.attention_forward_traffic : Bytes{0};
    }
  }

  // The other memory-bound kernels, in block-width elements (2 B): two norms (read, write),
  // two residual branches each a fused bias + dropout + add (read the branch and the
  // residual, write the sum, and a 1-byte mask), and the MLP's fused bias + activation over
  // its w = T f/t wide hidden (read, write; gated: read two, write one). Backward: a norm reads
  // its input and the gradient and writes one (3); a branch reads the gradient (and mask) and
  // writes the sum of the residual gradients (3, + 0.5); the activation reads the gradient and
  // its input(s) and writes its input gradient(s) (3; gated 5). Block-width tensors are
  // replicated over TP without sequence parallelism (rep = T h / r).
  {
    const std::int64_t w = x.tokens * (c.is_moe() ? c.top_k * x.fe_t : x.f_t);
    const std::int64_t d = c.dropout ? 1 : 0;
    const std::int64_t fwd_half = (8 + 12 + 2 * d) * rep + (c.gated_mlp ? 6 : 4) * w;
    const std::int64_t bwd_half = (12 + 12 + 2 * d) * rep + (c.gated_mlp ? 10 : 6) * w;
    out.elementwise_forward = Bytes{x.e * fwd_half / 2};
    out.elementwise_backward = Bytes{x.e * bwd_half / 2};
  }

  // The GEMM shapes: QKV, output projection, MLP in and out (per expert with MoE: each local
  // expert sees k T ep / E tokens on average).
  {
    const std::int64_t fc1 = c.gated_mlp ? 2 : 1;
    out.gemms = {{x.tokens, x.q_t + 2 * x.kv_t, x.h}, {x.tokens, x.h, x.q_t}};
    if (c.is_moe()) {
      const std::int64_t m_e = std::max<std::int64_t>(1, x.tokens * c.top_k * p.ep / c.experts);
      out.gemms.push_back({m_e, fc1 * x.fe_t, x.h});
      out.gemms.push_back({m_e, x.h, x.fe_t});
    } else {
      out.gemms.push_back({x.tokens, fc1 * x.f_t, x.h});
      out.gemms.push_back({x.tokens, x.h, x.f_t});
    }
  }

  // Parameters on this GPU.
  const std::int64_t attn =
      2 * x.h * x.q_t + 2 * x.h * x.kv_t + (c.bias ? x.q_t + 2 * x.kv_t + x.h : 0);
  out.parameters = 2 * norm_params(c.norm, x.h) + attn;
  if (c.is_moe()) {
    out.expert_parameters = (c.experts / p.ep) * mlp_params(c, x.h, x.fe_t);
    out.parameters += x.h * c.experts + out.expert_parameters;
  } else {
    out.parameters += mlp_params(c, x.h, x.f_t);
  }

  // Saved activations, tensor by tensor (Korthikanti et al. 2022, Sec. 4.1).
  const std::int64_t mask = c.dropout ? rep : 0;  // one dropout mask (1 byte per element)
  const std::int64_t attention = x.e * rep        // norm input
                                 + x.g * rep      // QKV input
                                 + x.e * x.tokens * (x.q_t + x.kv_t)  // Q and K for the scores
                                 + x.e * x.tokens * x.kv_t            // V for the context
                                 + x.g * x.tokens * x.q_t             // output projection input
                                 + mask;
  // The score tensors: softmax output, and with dropout its mask and output. Flash attention
  // keeps only the fp32 log-sum-exp of each score row instead.
  const std::int64_t scores =
      p.flash_attention ? kLogitBytes * x.b * x.heads_t * x.sl
                        : (x.e + (c.dropout ? 1 + x.e : 0)) * x.b * x.heads_t * x.sl * x.s;
  std::int64_t feed_forward = x.e * rep + mask;  // norm input, dropout mask
  if (c.is_moe()) {
    feed_forward += x.e * rep                                   // router input
                    + kLogitBytes * x.tokens * c.experts / x.r  // router probabilities (fp32)
                    + c.top_k * mlp_activations(c, x, rep, x.fe_t);
  } else {
    feed_forward += mlp_activations(c, x, rep, x.f_t);
  }
  const std::int64_t none = attention + scores + feed_forward;
  switch (p.recompute) {
    case Recompute::kNone:
      out.activations_saved = Bytes{none};
      break;
    case Recompute::kSelective:
      // With flash attention there is nothing left to drop: the statistics stay.
      out.activations_saved = Bytes{p.flash_attention ? none : none - scores};
      out.recompute_transient = Bytes{p.flash_attention ? 0 : scores};
      break;
    case Recompute::kFull:
      out.activations_saved = Bytes{x.e * rep};  // the block input only
      out.recompute_transient = Bytes{none};
      break;
  }
  set_memory(out, none);

  // Communication sizes.
  set_tp(out, x, p.sequence_parallel, 2, 2);
  if (c.is_moe() && p.ep > 1) out.moe_all_to_all_bytes = Bytes{x.e * c.top_k * rep};
  if (p.cp > 1) out.cp_kv_bytes = Bytes{x.e * 2 * x.tokens * x.kv_t};
  out.output_bytes = Bytes{x.e * rep};
  return out;
}

LayerCost embedding_cost(const Model& m, const CostParams& p) {
  const TransformerConfig& c = m.transformer;
  const Shape x = shape(c, p);
  const std::int64_t rep = x.tokens * x.h / x.r;
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
    saved += x.g * x.b * patches * patch_in;
    out.activations_saved = Bytes{saved};
    set_memory(out, saved + x.e * x.tokens * x.h);
  } else {
    // A lookup: no FLOPs. The token table is split over TP by vocabulary (Megatron's
    // VocabParallelEmbedding, partial rows summed by one all-reduce); positions are replicated.
    const std::int64_t positions = c.position == PositionEmbedding::kLearned ? c.max_sequence : 0;
    out.parameters = ceil_div(c.vocab, x.t) * x.h + (positions + c.type_vocab) * x.h;
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
  const Shape x = shape(c, p);
  const double T = static_cast<double>(x.tokens), h = static_cast<double>(x.h);
  const std::int64_t rep = x.tokens * x.h / x.r;
  const std::int64_t v_t = ceil_div(c.vocab, x.t);
  const std::int64_t untied = c.tied_embeddings ? 0 : v_t * x.h;
  LayerCost out;
  out.parameters = norm_params(c.norm, x.h);
  std::int64_t saved = x.e * rep;  // final norm input
  switch (c.head) {
    case HeadKind::kLm:
      out.forward = Flops{2 * T * h * static_cast<double>(v_t)};
      out.gemms = {{x.tokens, v_t, x.h}};
      out.parameters += untied;
      saved += x.g * rep + kLogitBytes * x.tokens * v_t;  // projection input, fp32 logits
      set_tp(out, x, false, 0, 1);  // column-parallel: identity forward, all-reduce backward
      if (p.sequence_parallel && x.t > 1) {  // with SP: gather the input forward, scatter back
        out.tp_forward = {0, 1, 0};
        out.tp_backward = {0, 0, 1};
      }
      break;
    case HeadKind::kMlm:
      // BERT: dense h x h + GELU + norm (replicated over TP), then the vocabulary projection.
      out.forward = Flops{2 * T * h * h + 2 * T * h * static_cast<double>(v_t)};
      out.parameters += x.h * x.h + (c.bias ? x.h : 0) + norm_params(c.norm, x.h) + untied + v_t;
      saved += x.g * rep + 2 * x.e * x.tokens * x.h + x.g * x.tokens * x.h +
               kLogitBytes * x.tokens * v_t;
      set_tp(out, x, false, 0, 1);
      break;
    case HeadKind::kClassifier:
      // One token per sample (the class token), replicated over TP.
      out.forward = Flops{2.0 * static_cast<double>(x.b) * h * c.classes};
      out.parameters += x.h * c.classes + (c.bias ? c.classes : 0);
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
