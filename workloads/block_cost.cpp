#include "workloads/block_cost.h"

#include <algorithm>

namespace cs::wl {
namespace {

// Saved bytes of one MLP (or one expert's share) whose input is `tokens_in` elements and whose
// hidden is w wide per token: fc1 input (T h / r: replicated without SP), activation-function
// input(s), fc2 input.
std::int64_t mlp_activations(const TransformerConfig& c, const BlockShape& x,
                             std::int64_t tokens_in, std::int64_t w) {
  return x.g * tokens_in + x.e * x.tokens * w * (c.gated_mlp ? 2 : 1) + x.g * x.tokens * w;
}

}  // namespace

BlockFlops block_flops(const TransformerConfig& c, const BlockShape& x) {
  const double T = static_cast<double>(x.tokens), h = static_cast<double>(x.h);
  BlockFlops f;
  f.projections =
      2 * T * h * static_cast<double>(x.q_t + 2 * x.kv_t) + 2 * T * static_cast<double>(x.q_t) * h;
  f.attention =
      4.0 * static_cast<double>(x.b * x.sl) * static_cast<double>(x.s) * static_cast<double>(x.q_t);
  const double mlp_factor = c.gated_mlp ? 6.0 : 4.0;
  if (c.is_moe()) {
    f.mlp = 2 * T / static_cast<double>(x.r) * h * c.experts +
            c.top_k * mlp_factor * T * h * static_cast<double>(x.fe_t);
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
  const std::int64_t qkvo = x.e * x.tokens * 2 * (x.q_t + x.kv_t);  // Q, K, V in; context out
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
  return {Bytes{kFp8CastBytesPerElement * x.tokens * x.q_t},
          Bytes{kFp8CastBytesPerElement * x.tokens * (2 * x.h + x.q_t + 2 * x.kv_t)}};
}

ElementwiseTraffic elementwise_traffic(const TransformerConfig& c, const BlockShape& x) {
  const std::int64_t rep = x.rep();
  const std::int64_t w = x.tokens * (c.is_moe() ? c.top_k * x.fe_t : x.f_t);
  const std::int64_t d = c.dropout ? 1 : 0;
  // In half elements, so that the 1-byte masks stay integers.
  const std::int64_t fwd_half = (8 + 12 + 2 * d) * rep + (c.gated_mlp ? 6 : 4) * w;
  const std::int64_t bwd_half = (12 + 12 + 2 * d) * rep + (c.gated_mlp ? 10 : 6) * w;
  return {Bytes{x.e * fwd_half / 2}, Bytes{x.e * bwd_half / 2}};
}

std::vector<tg::GemmShape> block_gemm_shapes(const TransformerConfig& c, const BlockShape& x,
                                             int ep) {
  const std::int64_t fc1 = c.gated_mlp ? 2 : 1;
  std::vector<tg::GemmShape> out = {{x.tokens, x.q_t + 2 * x.kv_t, x.h}, {x.tokens, x.h, x.q_t}};
  if (c.is_moe()) {
    const std::int64_t m_e = std::max<std::int64_t>(1, x.tokens * c.top_k * ep / c.experts);
    out.push_back({m_e, fc1 * x.fe_t, x.h});
    out.push_back({m_e, x.h, x.fe_t});
  } else {
    out.push_back({x.tokens, fc1 * x.f_t, x.h});
    out.push_back({x.tokens, x.h, x.f_t});
  }
  return out;
}

GemmTraffic block_gemm_traffic(const TransformerConfig& c, const BlockShape& x, int ep) {
  const std::vector<tg::GemmShape> shapes = block_gemm_shapes(c, x, ep);
  const auto both = [&](const std::vector<tg::GemmShape>& fwd, std::int64_t in,
                        std::int64_t times) {
    return GemmTraffic{gemm_traffic(fwd, in, x.e) * times,
                       gemm_traffic(backward_gemms(fwd), in, x.e) * times};
  };
  if (!c.is_moe()) return both(shapes, x.g, 1);
  const GemmTraffic projections = both({shapes[0], shapes[1]}, x.g, 1);
  const GemmTraffic experts = both({shapes[2], shapes[3]}, x.g, c.experts / ep);
  const GemmTraffic router = both({{x.tokens / x.r, c.experts, x.h}}, x.e, 1);
  return {projections.forward + experts.forward + router.forward,
          projections.backward + experts.backward + router.backward};
}

BlockParameters block_parameters_per_gpu(const TransformerConfig& c, const BlockShape& x, int ep) {
  const std::int64_t attention =
      2 * x.h * x.q_t + 2 * x.h * x.kv_t + (c.bias ? x.q_t + 2 * x.kv_t + x.h : 0);
  BlockParameters out;
  out.total = 2 * norm_parameters(c.norm, x.h) + attention;
  if (c.is_moe()) {
    out.experts = (c.experts / ep) * mlp_parameters(c, x.fe_t);
    out.total += x.h * c.experts + out.experts;
  } else {
    out.total += mlp_parameters(c, x.f_t);
  }
  return out;
}

SavedActivations saved_activations(const TransformerConfig& c, const BlockShape& x,
                                   Recompute recompute, bool flash_attention) {
  const std::int64_t rep = x.rep();
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
      flash_attention ? kLogitBytes * x.b * x.heads_t * x.sl
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
  if (c.is_moe() && p.ep > 1) out.moe_all_to_all = Bytes{x.e * c.top_k * rep};
  if (p.cp > 1) out.cp_kv = Bytes{x.e * 2 * x.tokens * x.kv_t};
  out.output = Bytes{x.e * rep};
  return out;
}

}  // namespace cs::wl
