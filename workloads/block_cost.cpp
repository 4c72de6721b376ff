#include "workloads/block_cost.h"

#include <algorithm>
#include <cmath>

namespace cs::wl {
namespace {

// Saved bytes of one MLP (or one expert's share) whose input is `tokens_in` elements and whose
// hidden is w wide per token: fc1 input (T h / r: replicated without SP), activation-function
// input(s), fc2 input.
std::int64_t mlp_activations(const TransformerConfig& c, const BlockShape& x,
                             std::int64_t tokens_in, std::int64_t w) {
  return x.g * tokens_in + x.e * x.tokens * w * (c.gated_mlp ? 2 : 1) + x.g * x.tokens * w;
}

// A forward GEMM and how many times the block runs it (the local experts share one shape).
struct CountedGemm {
  tg::GemmShape shape;
  std::int64_t times = 1;
};

std::int64_t tokens_of(double m) { return std::max<std::int64_t>(1, std::llround(m)); }

// The forward GEMMs of block_gemm_shapes with their counts, the router's aside (its operands stay
// 2-byte).
std::vector<CountedGemm> counted_gemms(const TransformerConfig& c, const BlockShape& x) {
  const std::int64_t fc1 = c.gated_mlp ? 2 : 1;
  const std::int64_t T = x.tokens, Tr = x.tokens / x.r, h = x.h;
  std::vector<CountedGemm> out;
  if (c.is_mla()) {
    const TransformerConfig::Mla& a = c.mla;
    if (a.q_lora_rank > 0) {
      out.push_back({{Tr, a.q_lora_rank, h}});  // query down-projection (replicated over TP)
      out.push_back({{T, x.q_t, a.q_lora_rank}});
    } else {
      out.push_back({{T, x.q_t, h}});
    }
    out.push_back({{Tr, a.kv_lora_rank + a.qk_rope_head_dim, h}});  // key/value down-projection
    out.push_back({{T, x.heads_t * a.qk_nope_head_dim + x.v_t, a.kv_lora_rank}});
  } else {
    out.push_back({{T, x.q_t + x.kv_t + x.v_t, h}});
  }
  out.push_back({{T, h, x.ctx_t}});
  if (!c.is_moe()) {
    out.push_back({{T, fc1 * x.f_t, h}});
    out.push_back({{T, h, x.f_t}});
    return out;
  }
  if (c.shared_experts > 0) {
    const std::int64_t w = c.shared_experts * x.fe_t;
    out.push_back({{T, fc1 * w, h}});
    out.push_back({{T, h, w}});
  }
  // The busiest GPU's local experts: n_l - 1 of m_o tokens and the busiest of m_max; one shape
  // when they coincide (balanced routing, or padding to the capacity).
  const ExpertTokens& e = x.moe;
  const std::int64_t m_o = tokens_of(e.other), m_max = tokens_of(e.busiest);
  if (m_o == m_max) {
    out.push_back({{m_o, fc1 * x.fe_t, h}, e.local});
    out.push_back({{m_o, h, x.fe_t}, e.local});
  } else {
    if (e.local > 1) {
      out.push_back({{m_o, fc1 * x.fe_t, h}, e.local - 1});
      out.push_back({{m_o, h, x.fe_t}, e.local - 1});
    }
    out.push_back({{m_max, fc1 * x.fe_t, h}});
    out.push_back({{m_max, h, x.fe_t}});
  }
  return out;
}

}  // namespace

BlockFlops block_flops(const TransformerConfig& c, const BlockShape& x) {
  const double T = static_cast<double>(x.tokens), h = static_cast<double>(x.h);
  const double Tr = static_cast<double>(x.tokens / x.r);
  BlockFlops f;
  if (c.is_mla()) {
    const TransformerConfig::Mla& a = c.mla;
    const double rq = static_cast<double>(a.q_lora_rank), rkv = static_cast<double>(a.kv_lora_rank);
    const double q = a.q_lora_rank > 0 ? 2 * Tr * h * rq + 2 * T * rq * static_cast<double>(x.q_t)
                                       : 2 * T * h * static_cast<double>(x.q_t);
    const double kv = 2 * Tr * h * (rkv + static_cast<double>(a.qk_rope_head_dim)) +
                      2 * T * rkv * static_cast<double>(x.heads_t * a.qk_nope_head_dim + x.v_t);
    f.projections = q + kv + 2 * T * static_cast<double>(x.ctx_t) * h;
  } else {
    f.projections = 2 * T * h * static_cast<double>(x.q_t + x.kv_t + x.v_t) +
                    2 * T * static_cast<double>(x.ctx_t) * h;
  }
  f.attention = 2.0 * static_cast<double>(x.b * x.sl) * static_cast<double>(x.s) *
                static_cast<double>(x.q_t + x.ctx_t);
  const double mlp_factor = c.gated_mlp ? 6.0 : 4.0;
  if (c.is_moe()) {
    f.mlp = 2 * Tr * h * c.experts +
            mlp_factor * h * static_cast<double>(x.fe_t) *
                (static_cast<double>(c.shared_experts) * T + x.moe.processed());
  } else {
    f.mlp = mlp_factor * T * h * static_cast<double>(x.f_t);
  }
  return f;
}

double causal_tile_fraction(std::int64_t s) {
  const std::int64_t n = (s + kFlashBlock - 1) / kFlashBlock;
  return static_cast<double>(n + 1) / static_cast<double>(2 * n);
}

AttentionCoreCost attention_core_cost(const TransformerConfig& c, const BlockShape& x,
                                      Recompute recompute, bool flash_attention) {
  const double rho = flash_attention && c.causal() ? causal_tile_fraction(x.s) : 1.0;
  const double core = block_flops(c, x).attention * rho;
  AttentionCoreCost out;
  out.forward = Flops{core};
  out.backward = Flops{2 * core};
  if (recompute == Recompute::kFull) {
    out.recompute = Flops{core};
  } else if (flash_attention) {
    out.recompute = Flops{core / 2};  // the scores QK^T, rebuilt tile by tile in backward
  } else if (recompute == Recompute::kSelective) {
    out.recompute = Flops{core};
  }
  out.fused = flash_attention;
  // Q, K, V in; context out.
  const std::int64_t qkvo = x.e * x.tokens * (x.q_t + x.kv_t + x.v_t + x.ctx_t);
  if (flash_attention) {
    out.forward_traffic = Bytes{qkvo};
    out.backward_traffic = Bytes{2 * qkvo};
    // A full recomputation runs the fused forward again; otherwise the scores are rebuilt
    // inside the fused backward, whose bytes are already counted.
    out.recompute_traffic = recompute == Recompute::kFull ? Bytes{qkvo} : Bytes{0};
  } else {
    const std::int64_t score = x.e * x.b * x.heads_t * x.sl * x.s;
    const std::int64_t dropout_half_passes = c.dropout ? 5 : 0;
    out.forward_traffic = Bytes{qkvo + score * (8 + dropout_half_passes) / 2};
    out.backward_traffic = Bytes{2 * qkvo + score * (14 + dropout_half_passes) / 2};
    out.recompute_traffic = out.recompute.value() > 0 ? out.forward_traffic : Bytes{0};
  }
  return out;
}

ElementwiseTraffic fp8_cast_traffic(const BlockShape& x) {
  if (x.g != 1) return {};
  return {Bytes{kFp8CastBytesPerElement * x.tokens * x.ctx_t},
          Bytes{kFp8CastBytesPerElement * x.tokens * (2 * x.h + x.q_t + x.kv_t + x.v_t)}};
}

ElementwiseTraffic elementwise_traffic(const TransformerConfig& c, const BlockShape& x) {
  const std::int64_t rep = x.rep();
  const std::int64_t w =
      c.is_moe() ? x.tokens * c.shared_experts * x.fe_t +
                       std::llround(x.moe.processed() * static_cast<double>(x.fe_t))
                 : x.tokens * x.f_t;
  const std::int64_t d = c.dropout ? 1 : 0;
  // MLA's RMSNorms over the query and key/value latents, on this GPU's T/r tokens.
  const std::int64_t latents = c.is_mla() ? x.tokens / x.r * (c.mla.q_lora_rank + c.mla.kv_lora_rank) : 0;
  // In half elements, so that the 1-byte masks stay integers.
  const std::int64_t fwd_half = (8 + 12 + 2 * d) * rep + (c.gated_mlp ? 6 : 4) * w + 4 * latents;
  const std::int64_t bwd_half = (12 + 12 + 2 * d) * rep + (c.gated_mlp ? 10 : 6) * w + 6 * latents;
  return {Bytes{x.e * fwd_half / 2}, Bytes{x.e * bwd_half / 2}};
}

std::vector<tg::GemmShape> block_gemm_shapes(const TransformerConfig& c, const BlockShape& x) {
  std::vector<tg::GemmShape> out;
  for (const CountedGemm& g : counted_gemms(c, x)) out.push_back(g.shape);
  return out;
}

GemmTraffic block_gemm_traffic(const TransformerConfig& c, const BlockShape& x) {
  GemmTraffic out;
  const auto add = [&](const tg::GemmShape& fwd, std::int64_t in, std::int64_t times) {
    out.forward += gemm_traffic({fwd}, in, x.e) * times;
    out.backward += gemm_traffic(backward_gemms({fwd}), in, x.e) * times;
  };
  for (const CountedGemm& g : counted_gemms(c, x)) add(g.shape, x.g, g.times);
  if (c.is_moe()) add({x.tokens / x.r, c.experts, x.h}, x.e, 1);  // the router
  return out;
}

BlockParameters block_parameters_per_gpu(const TransformerConfig& c, const BlockShape& x) {
  std::int64_t attention = 0;
  if (c.is_mla()) {
    const TransformerConfig::Mla& a = c.mla;
    attention = (a.q_lora_rank > 0 ? x.h * a.q_lora_rank + norm_parameters(c.norm, a.q_lora_rank) +
                                         a.q_lora_rank * x.q_t
                                   : x.h * x.q_t) +
                x.h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                norm_parameters(c.norm, a.kv_lora_rank) +
                a.kv_lora_rank * (x.heads_t * a.qk_nope_head_dim + x.v_t) + x.ctx_t * x.h;
  } else {
    attention = x.h * (x.q_t + x.kv_t + x.v_t) + x.ctx_t * x.h +
                (c.bias ? x.q_t + x.kv_t + x.v_t + x.h : 0);
  }
  BlockParameters out;
  out.total = 2 * norm_parameters(c.norm, x.h) + attention;
  if (c.is_moe()) {
    out.experts = x.moe.local * mlp_parameters(c, x.fe_t);
    out.total += x.h * c.experts + out.experts +
                 (c.shared_experts > 0 ? mlp_parameters(c, c.shared_experts * x.fe_t) : 0);
  } else {
    out.total += mlp_parameters(c, x.f_t);
  }
  return out;
}

SavedActivations saved_activations(const TransformerConfig& c, const BlockShape& x,
                                   Recompute recompute, bool flash_attention) {
  const std::int64_t rep = x.rep();
  const std::int64_t mask = c.dropout ? rep : 0;  // one dropout mask (1 byte per element)
  // MLA: the latents' norm inputs and up-projection inputs, on this GPU's T/r tokens.
  const std::int64_t latents =
      c.is_mla() ? (x.e + x.g) * (x.tokens / x.r) * (c.mla.q_lora_rank + c.mla.kv_lora_rank) : 0;
  const std::int64_t attention = x.e * rep        // norm input
                                 + x.g * rep      // QKV (MLA: down-projections') input
                                 + latents
                                 + x.e * x.tokens * (x.q_t + x.kv_t)  // Q and K for the scores
                                 + x.e * x.tokens * x.v_t             // V for the context
                                 + x.g * x.tokens * x.ctx_t           // output projection input
                                 + mask;
  // The score tensors: softmax output, and with dropout its mask and output. Flash attention
  // keeps only the fp32 log-sum-exp of each score row instead.
  const std::int64_t scores =
      flash_attention ? kLogitBytes * x.b * x.heads_t * x.sl
                      : (x.e + (c.dropout ? 1 + x.e : 0)) * x.b * x.heads_t * x.sl * x.s;
  std::int64_t feed_forward = x.e * rep + mask;  // norm input, dropout mask
  if (c.is_moe()) {
    // The routed experts' inputs (whole: after the dispatch and the TP all-gather), activation
    // inputs and fc2 inputs, over the N_e tokens of the local experts.
    const double n_e = x.moe.processed();
    const double routed = static_cast<double>(x.g * x.h) * n_e +
                          static_cast<double>(x.e * x.fe_t * (c.gated_mlp ? 2 : 1)) * n_e +
                          static_cast<double>(x.g * x.fe_t) * n_e;
    feed_forward += x.e * rep                                   // router input
                    + kLogitBytes * x.tokens * c.experts / x.r  // router probabilities (fp32)
                    + (c.shared_experts > 0
                           ? mlp_activations(c, x, rep, c.shared_experts * x.fe_t)
                           : 0)
                    + std::llround(routed);
  } else {
    feed_forward += mlp_activations(c, x, rep, x.f_t);
  }
  const std::int64_t none = attention + scores + feed_forward;
  SavedActivations out;
  out.without_recompute = Bytes{none};
  switch (recompute) {
    case Recompute::kNone:
      out.saved = Bytes{none};
      break;
    case Recompute::kSelective:
      // With flash attention there is nothing left to drop: the statistics stay.
      out.saved = Bytes{flash_attention ? none : none - scores};
      out.transient = Bytes{flash_attention ? 0 : scores};
      break;
    case Recompute::kFull:
      out.saved = Bytes{x.e * rep};  // the block input only
      // The rebuilt block's first norm reads the kept input itself (the checkpoint is not
      // copied), so what its backward adds is the rest.
      out.transient = Bytes{none - x.e * rep};
      break;
  }
  return out;
}

TpCommunication tp_communication(const BlockShape& x, bool sequence_parallel, int forward,
                                 int backward) {
  TpCommunication out;
  if (x.t <= 1) return out;
  out.bytes = Bytes{x.e * x.tokens * x.h};
  if (sequence_parallel) {
    out.forward.all_gather = out.forward.reduce_scatter = forward;
    out.backward.all_gather = out.backward.reduce_scatter = backward;
  } else {
    out.forward.all_reduce = forward;
    out.backward.all_reduce = backward;
  }
  return out;
}

BlockCommunication block_communication(const TransformerConfig& c, const BlockShape& x,
                                       const CostParams& p) {
  const std::int64_t rep = x.rep();
  BlockCommunication out;
  out.tp = tp_communication(x, p.sequence_parallel, 2, 2);
  if (c.is_moe() && p.ep > 1) {
    out.moe_all_to_all =
        Bytes{std::llround(static_cast<double>(x.e * x.h) * x.moe.dispatched)};
  }
  if (p.cp > 1) out.cp_kv = Bytes{x.e * x.tokens * (x.kv_t + x.v_t)};
  out.output = Bytes{x.e * rep};
  return out;
}

}  // namespace cs::wl
