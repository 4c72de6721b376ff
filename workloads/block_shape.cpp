#include "workloads/block_shape.h"

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
  x.q_t = x.heads_t * c.head_dim();
  // Fewer KV heads than TP ranks: each rank keeps one replicated KV head (Megatron's GQA rule).
  x.kv_t = ceil_div(c.kv_heads, p.tp) * c.head_dim();
  x.f_t = ceil_div(c.ffn_hidden, p.tp);
  x.fe_t = c.is_moe() ? ceil_div(c.expert_ffn_hidden, p.tp) : 0;
  x.vocab_t = ceil_div(c.vocab, p.tp);
  x.e = kActivationBytes;
  x.g = p.precision == Precision::kFp8 ? 1 : 2;
  return x;
}

}  // namespace cs::wl
