// The per-GPU shape of one micro-batch through a transformer: the sizes every per-layer cost of
// a transformer (its blocks, embedding and head; layer_cost.h, block_cost.h) is written in.
//
// Notation as in layer_cost.h: b samples, s sequence, c context-parallel degree, T = b s / c
// tokens on this GPU, h hidden, a heads, d = h/a, t tensor-parallel degree. Tensor parallelism
// splits the heads, the MLP width and the vocabulary; with fewer key/value heads than t, each
// GPU keeps one whole (replicated) key/value head, as Megatron-LM does for GQA. Block-width
// tensors (T x h) are replicated over the t GPUs unless sequence parallelism shards them: r = t
// with SP, else 1. Multi-head latent attention (MLA) gives each of the a/t heads on a GPU a query
// and key d_qk = nope + rope wide and a value and context d_v wide.
//
// Mixture of experts (expert_tokens): E experts of which each token uses k, ep-way expert
// parallel, n_l = E/ep local experts per GPU. A GPU's router sees T_r = T/r tokens (its
// sequence-parallel shard; all T without SP) and sends each of them to k experts over the
// expert-parallel all-to-all; with t > 1 the tokens an expert receives are then gathered over
// the tensor-parallel group (Megatron-Core's alltoall dispatcher: all-to-all over EP, all-gather
// over the expert TP group), so an expert's GEMMs see the tokens of r ep source GPUs.
//   u      = k T_r / E        tokens one GPU routes to one expert, balanced routing (expected)
//   lambda                    moe_load_imbalance, max/mean tokens per expert (1: balanced);
//                             the busiest expert gets lambda u from each GPU, the other E - 1
//                             share the rest evenly, u_o = (E - lambda) u / (E - 1)
//   C      = ceil(f k T_r / E)   moe_capacity_factor f: what one GPU may send to one expert
//                             (Megatron-Core's get_capacity over the router's local tokens;
//                             GShard and Switch Transformer's capacity); none when dropless
//   sent   = min(lambda u, C) to the busiest expert, min(u_o, C) to each other one (dropless:
//            no min); with moe_pad_to_capacity exactly C to every expert (padding, as Megatron-Core's
//            --moe-pad-expert-input-to-capacity)
//   m      = r ep sent        tokens one local expert processes (its GEMMs' m)
// The estimate is for the GPU that holds the busiest expert: its other n_l - 1 local experts get
// m_o each, so it processes N_e = (n_l - 1) m_o + m_max, and its all-to-all buffer (the tokens of
// one GPU's dispatch, S of nccl-tests: S/ep to each peer, (ep - 1)/ep of it leaving the GPU) is
//   A = ep ((n_l - 1) sent_o + sent_max)
// what it receives, which every rank of the symmetric all-to-all is taken to send: balanced and
// dropless A = k T_r and N_e = k T (every routed token copy); padded A = E C, Megatron-Core's
// num_out_tokens = capacity x num_experts.
#pragma once

#include <cstdint>

#include "workloads/layer_cost.h"
#include "workloads/model.h"

namespace cs::wl {

inline constexpr std::int64_t kActivationBytes = 2;  // bf16 activations and communication
inline constexpr std::int64_t kLogitBytes = 4;  // logits are kept in fp32 for the cross-entropy

// The tokens through one MoE block's experts on one GPU (formulas above); all zero when dense.
struct ExpertTokens {
  std::int64_t local = 0;      // n_l = E/ep
  double routed = 0;           // u = k T_r / E
  double capacity = 0;         // C; 0 when dropless
  double sent_busiest = 0;     // what one GPU sends to the busiest expert
  double sent_other = 0;       // ... and to each other expert
  double busiest = 0;          // m_max = r ep sent_busiest
  double other = 0;            // m_o = r ep sent_other
  double dispatched = 0;       // A: the all-to-all buffer of one GPU, in tokens
  double dropped = 0;          // k T_r - (sent_busiest + (E - 1) sent_other), dropped per GPU
                               // (before padding; 0 when dropless)
  // N_e = (n_l - 1) m_o + m_max: the tokens through the local experts of the busiest GPU.
  double processed() const { return static_cast<double>(local - 1) * other + busiest; }
};

struct BlockShape {
  std::int64_t b, s, sl, tokens;  // samples, sequence, local sequence s/c, T = b s/c
  std::int64_t h, t, r;  // hidden, TP degree, divisor of "replicated" tensors (t with SP, else 1)
  // heads a/t; the query width a d_qk/t; the key width ceil(kv/t) d (MLA: a d_qk/t); the value
  // width (= the key width; MLA a d_v/t) and the context width (the output projection's input:
  // a d/t; MLA a d_v/t).
  std::int64_t heads_t, q_t, kv_t, v_t, ctx_t;
  std::int64_t f_t, fe_t;  // MLP width ceil(f/t), expert MLP width ceil(f_e/t) (0: dense)
  std::int64_t vocab_t;    // vocabulary rows on this GPU, ceil(V/t)
  std::int64_t e = kActivationBytes;
  std::int64_t g;  // bytes of a saved GEMM input: 2, or 1 with fp8
  ExpertTokens moe;

  // rep = T h / r: elements of one block-width tensor on this GPU.
  std::int64_t rep() const { return tokens * h / r; }
};

BlockShape block_shape(const TransformerConfig& c, const CostParams& p);
// The expert token counts of a MoE block (zero for a dense one), from the plan's capacity factor,
// padding and load imbalance in p.
ExpertTokens expert_tokens(const TransformerConfig& c, const CostParams& p);

}  // namespace cs::wl
