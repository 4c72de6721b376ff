// The per-GPU shape of one micro-batch through a transformer: the sizes every per-layer cost of
// a transformer (its blocks, embedding and head; layer_cost.h, block_cost.h) is written in.
//
// Notation as in layer_cost.h: b samples, s sequence, c context-parallel degree, T = b s / c
// tokens on this GPU, h hidden, a heads, d = h/a, t tensor-parallel degree. Tensor parallelism
// splits the heads, the MLP width and the vocabulary; with fewer key/value heads than t, each
// GPU keeps one whole (replicated) key/value head, as Megatron-LM does for GQA. Block-width
// tensors (T x h) are replicated over the t GPUs unless sequence parallelism shards them: r = t
// with SP, else 1.
#pragma once

#include <cstdint>

#include "workloads/layer_cost.h"
#include "workloads/model.h"

namespace cs::wl {

inline constexpr std::int64_t kActivationBytes = 2;  // bf16 activations and communication
inline constexpr std::int64_t kLogitBytes = 4;  // logits are kept in fp32 for the cross-entropy

struct BlockShape {
  std::int64_t b, s, sl, tokens;  // samples, sequence, local sequence s/c, T = b s/c
  std::int64_t h, t, r;  // hidden, TP degree, divisor of "replicated" tensors (t with SP, else 1)
  std::int64_t heads_t, q_t, kv_t;  // heads a/t, query width a d/t, K (or V) width ceil(kv/t) d
  std::int64_t f_t, fe_t;           // MLP width ceil(f/t), expert MLP width ceil(f_e/t) (0: dense)
  std::int64_t vocab_t;             // vocabulary rows on this GPU, ceil(V/t)
  std::int64_t e = kActivationBytes;
  std::int64_t g;  // bytes of a saved GEMM input: 2, or 1 with fp8

  // rep = T h / r: elements of one block-width tensor on this GPU.
  std::int64_t rep() const { return tokens * h / r; }
};

BlockShape block_shape(const TransformerConfig& c, const CostParams& p);

}  // namespace cs::wl
