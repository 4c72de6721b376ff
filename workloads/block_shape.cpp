#include "workloads/block_shape.h"

#include <algorithm>
#include <cmath>

namespace cs::wl {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

BlockShape block_shape(const TransformerConfig& c, const CostParams& p) {
  BlockShape x{};
  x.b = p.micro_batch;
  x.s = p.sequence;
  x.sl = p.sequence / p.cp;
  x.tokens = x.b * x.sl;
  x.h = c.hidden;
  x.t = p.tp;
  x.r = p.sequence_parallel ? p.tp : 1;
  x.heads_t = c.heads / p.tp;
  x.q_t = x.heads_t * c.qk_head_dim();
  if (c.is_mla()) {
    x.kv_t = x.q_t;
    x.v_t = x.ctx_t = x.heads_t * c.v_head_dim();
  } else {
    // Fewer KV heads than TP ranks: each rank keeps one replicated KV head (Megatron's GQA rule).
    x.kv_t = x.v_t = ceil_div(c.kv_heads, p.tp) * c.head_dim();
    x.ctx_t = x.q_t;
  }
  x.f_t = ceil_div(c.ffn_hidden, p.tp);
  x.fe_t = c.is_moe() ? ceil_div(c.expert_ffn_hidden, p.tp) : 0;
  x.vocab_t = ceil_div(c.vocab, p.tp);
  x.e = kActivationBytes;
  x.g = p.precision == Precision::kFp8 ? 1 : 2;
  x.moe = expert_tokens(c, p);
  return x;
}

ExpertTokens expert_tokens(const TransformerConfig& c, const CostParams& p) {
  ExpertTokens out;
  if (!c.is_moe()) return out;
  const std::int64_t r = p.sequence_parallel ? p.tp : 1;
  const double E = c.experts, k = c.top_k, ep = p.ep, lambda = p.moe_load_imbalance;
  const double routed_tokens = static_cast<double>(p.micro_batch * (p.sequence / p.cp) / r);
  out.local = c.experts / p.ep;
  out.routed = k * routed_tokens / E;
  const double busiest = lambda * out.routed;
  const double other = lambda == 1 ? out.routed : (E - lambda) * out.routed / (E - 1);
  if (p.moe_capacity_factor > 0) {
    // Megatron-Core's get_capacity: ceil(num_tokens x topk / num_experts x capacity_factor).
    out.capacity = std::ceil(p.moe_capacity_factor * out.routed);
    if (p.moe_pad_to_capacity) {
      out.sent_busiest = out.sent_other = out.capacity;
    } else {
      out.sent_busiest = std::min(busiest, out.capacity);
      out.sent_other = std::min(other, out.capacity);
    }
    out.dropped = k * routed_tokens - std::min(busiest, out.capacity) -
                  (E - 1) * std::min(other, out.capacity);
  } else {
    out.sent_busiest = busiest;
    out.sent_other = other;
  }
  out.busiest = static_cast<double>(r) * ep * out.sent_busiest;
  out.other = static_cast<double>(r) * ep * out.sent_other;
  out.dispatched = ep * (static_cast<double>(out.local - 1) * out.sent_other + out.sent_busiest);
  return out;
}

}  // namespace cs::wl
