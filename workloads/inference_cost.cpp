#include "workloads/inference_cost.h"

#include <algorithm>
#include <cmath>

namespace cs::wl {
namespace {

constexpr std::int64_t kActivationBytes = 2;  // activations in 16 bits

Bytes to_bytes(double v) { return Bytes{static_cast<std::int64_t>(std::llround(v))}; }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// KV elements per token per layer on one GPU.
std::int64_t kv_elements_per_layer(const TransformerConfig& c, int tp) {
  if (c.is_mla()) return c.mla.kv_lora_rank + c.mla.qk_rope_head_dim;  // replicated on every TP GPU
  const std::int64_t heads_per_gpu = std::max<std::int64_t>(1, c.kv_heads / tp);
  return 2 * heads_per_gpu * c.head_dim();
}

}  // namespace

void InferenceBatch::add(std::int64_t q, std::int64_t c, bool samples) {
  tokens += q;
  ++sequences;
  if (samples) ++sampled;
  attention_pairs += static_cast<double>(q) * (static_cast<double>(c) + static_cast<double>(q + 1) / 2.0);
  kv_tokens_read += c + q;
}

std::int64_t weight_bytes_per_parameter(Precision p) { return p == Precision::kFp8 ? 1 : 2; }

double expected_experts_touched(int experts, int top_k, std::int64_t tokens) {
  if (experts <= 0 || tokens <= 0) return 0;
  const double miss = 1.0 - static_cast<double>(top_k) / experts;
  return experts * (1.0 - std::pow(miss, static_cast<double>(tokens)));
}

InferenceBlockCost inference_block_cost(const TransformerConfig& model, int layer, const InferenceBatch& b,
                                        const InferenceShard& s) {
  const TransformerConfig c = block_config(model, layer);
  const double t = s.tp;
  const double T = static_cast<double>(b.tokens);
  const std::int64_t h = c.hidden;
  const double wbytes = static_cast<double>(weight_bytes_per_parameter(s.precision));
  InferenceBlockCost out;

  // Attention projections and the MLP a token uses.
  const double attn_params = static_cast<double>(attention_parameters(c));
  double mlp_active = 0, mlp_read = 0, router = 0, mlp_width = 0;
  const auto gated = c.gated_mlp ? 2 : 1;
  const bool ep = c.is_moe() && s.ep > 1;
  // Per GPU, over t: what is TP-sliced; routed experts under EP are added whole below.
  double routed_flops = 0, routed_read = 0, routed_act = 0;
  if (c.is_moe()) {
    const double expert = static_cast<double>(mlp_parameters(c, c.expert_ffn_hidden));
    const double shared = c.shared_experts > 0
                              ? static_cast<double>(mlp_parameters(c, c.shared_experts * c.expert_ffn_hidden))
                              : 0.0;
    const double touched = expected_experts_touched(c.experts, c.top_k, b.tokens);
    router = static_cast<double>(h) * c.experts;
    const std::int64_t per_expert =
        touched > 0 ? static_cast<std::int64_t>(std::ceil(T * c.top_k / touched)) : 0;
    const double ef = static_cast<double>(c.expert_ffn_hidden);
    if (ep) {
      mlp_active = mlp_read = shared;
      mlp_width = static_cast<double>(c.shared_experts) * ef;
      routed_flops = 2.0 * T * c.top_k * expert / s.ep;
      routed_read = touched / s.ep * expert;
      routed_act = T * c.top_k / s.ep * (static_cast<double>(h) + gated * ef);
      out.gemm.gemms = {{b.tokens, static_cast<std::int64_t>(attn_params / (static_cast<double>(h) * t)), h},
                        {per_expert, gated * c.expert_ffn_hidden, h},
                        {per_expert, h, c.expert_ffn_hidden}};
    } else {
      mlp_active = c.top_k * expert + shared;
      mlp_read = touched * expert + shared;
      mlp_width = static_cast<double>(c.top_k + c.shared_experts) * ef;
      const std::int64_t ew = c.expert_ffn_hidden / s.tp;
      out.gemm.gemms = {{b.tokens, static_cast<std::int64_t>(attn_params / (static_cast<double>(h) * t)), h},
                        {per_expert, gated * ew, h},
                        {per_expert, h, ew}};
    }
  } else {
    mlp_active = mlp_read = static_cast<double>(mlp_parameters(c, c.ffn_hidden));
    mlp_width = static_cast<double>(c.ffn_hidden);
    const std::int64_t fw = c.ffn_hidden / s.tp;
    out.gemm.gemms = {{b.tokens, static_cast<std::int64_t>(attn_params / (static_cast<double>(h) * t)), h},
                      {b.tokens, gated * fw, h},
                      {b.tokens, h, fw}};
  }
  out.gemm.flops = Flops{2.0 * T * (attn_params + mlp_active) / t + 2.0 * T * router + routed_flops};
  // Weights read once; activations in and out of each GEMM (input h, output width / t).
  const double act = T * kActivationBytes * (4.0 * static_cast<double>(h) + 2.0 * gated * mlp_width / t) +
                     kActivationBytes * 2.0 * routed_act;
  out.gemm.memory = to_bytes((attn_params + mlp_read) / t * wbytes + router * wbytes + routed_read * wbytes + act);

  // Attention core.
  const double heads = static_cast<double>(c.heads) / t;
  out.attention.flops = Flops{2.0 * heads * static_cast<double>(c.qk_head_dim() + c.v_head_dim()) * b.attention_pairs};
  const double kv = static_cast<double>(kv_elements_per_layer(c, s.tp) * weight_bytes_per_parameter(s.kv_precision));
  const double qo = T * heads * static_cast<double>(c.qk_head_dim() + c.v_head_dim()) * kActivationBytes;
  out.attention.memory = to_bytes(static_cast<double>(b.kv_tokens_read) * kv + T * kv + qo);

  // Norms, residual adds, the MLP's activation.
  out.elementwise.memory =
      to_bytes(kActivationBytes * (10.0 * T * static_cast<double>(h) + 3.0 * T * mlp_width / t));

  if (s.tp > 1) {
    out.all_reduces = ep ? 1 : 2;
    out.tp_all_reduce = Bytes{b.tokens * h * kActivationBytes};
  }
  if (ep) {
    out.all_to_alls = 2;
    out.ep_all_to_all = to_bytes(T / s.ep * c.top_k * static_cast<double>(h * kActivationBytes));
  }
  return out;
}

InferenceOpCost inference_head_cost(const TransformerConfig& c, const InferenceBatch& b, const InferenceShard& s) {
  InferenceOpCost out;
  const double n = static_cast<double>(b.sampled);
  const double vh = static_cast<double>(c.vocab) * static_cast<double>(c.hidden) / s.tp;
  out.flops = Flops{2.0 * n * vh};
  out.memory = to_bytes(vh * static_cast<double>(weight_bytes_per_parameter(s.precision)) +
                        n * kActivationBytes * (static_cast<double>(c.hidden) + static_cast<double>(c.vocab) / s.tp));
  if (b.sampled > 0) out.gemms = {{b.sampled, ceil_div(c.vocab, s.tp), c.hidden}};
  return out;
}

Bytes kv_bytes_per_token(const TransformerConfig& c, const InferenceShard& s) {
  const std::int64_t layers = ceil_div(c.layers, s.pp);
  return Bytes{kv_elements_per_layer(c, s.tp) * weight_bytes_per_parameter(s.kv_precision) * layers};
}

Bytes inference_weight_bytes(const Model& m, const InferenceShard& s) {
  const double p = static_cast<double>(parameter_count(m));
  return to_bytes(p / (s.tp * s.pp) * static_cast<double>(weight_bytes_per_parameter(s.precision)));
}

}  // namespace cs::wl
