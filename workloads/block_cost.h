// The costs of one transformer block on one GPU, one concern per function; transformer_block_cost
// (layer_cost.h) assembles its LayerCost from them. Every function is pure: a per-GPU shape x
// (block_shape.h) and the plan options it depends on in, its part out.
//
// Notation (layer_cost.h, block_shape.h): b samples, s sequence, s_l = s/c, T = b s_l tokens on
// this GPU, h hidden, q_t = a d/t query width, kv_t and v_t the key and value widths, ctx_t the
// context width (q_t, or MLA's a d_v/t) on this GPU, f_t and fe_t the MLP and expert widths on
// this GPU, E experts, k top_k, S shared experts, n_l = E/ep local experts and N_e the tokens
// through them (block_shape.h: expert_tokens), r = t with sequence parallelism (else 1),
// T_r = T/r, e = 2 bytes per activation, g = 2 bytes per saved GEMM input (1 with fp8),
// rep = T h / r the block-width tensors, d_o = 1 with dropout (else 0). MLA (multi-head latent
// attention): r_q and r_kv the query and key/value latent ranks, nope and rope the key's two
// parts, a_t = a/t.
// Callers pass the block's own config (block_config, model.h): a dense block of a mixture is
// one without experts.
// Sources: Narayanan et al. SC21 (arXiv:2104.04473) for FLOPs, Korthikanti et al. 2022
// (arXiv:2205.05198) for the saved activations, Dao et al. 2022 (arXiv:2205.14135) for flash
// attention.
#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "taskgraph/task_graph.h"
#include "workloads/block_shape.h"
#include "workloads/layer_cost.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

// Forward FLOPs of one block, by part (2 per multiply-add, matrix multiplications only):
//   projections  QKV 2 T h (q_t + kv_t + v_t) + output 2 T ctx_t h; MLA: query 2 T_r h r_q +
//                2 T r_q q_t (r_q = 0: 2 T h q_t), key/value 2 T_r h (r_kv + rope)
//                + 2 T r_kv (a_t nope + v_t), output 2 T ctx_t h (the down-projections are
//                replicated over TP, each GPU projecting its own T_r tokens, as Megatron-Core's
//                duplicated linear_q_down_proj and linear_kv_down_proj)
//   attention    the core, scores QK^T and context: 2 b s_l s (q_t + ctx_t) (4 b s_l s q_t for
//                standard attention)
//   mlp          dense: 4 T h f_t (gated: 6); MoE: router 2 T_r h E + 4 h fe_t (S T + N_e)
//                (gated: 6), which balanced and dropless is k + S expert MLPs per token
// A GPT block (kv = h, f = 4h) at t = c = 1: 8 b s h^2 + 4 b s^2 h + 16 b s h^2, in all
// 24 b s h^2 + 4 b s^2 h (Narayanan et al. SC21, Sec. 5.1). Backward is 2 x forward.
struct BlockFlops {
  double projections = 0;
  double attention = 0;
  double mlp = 0;
  Flops forward() const { return Flops{projections + attention + mlp}; }
};
BlockFlops block_flops(const TransformerConfig& c, const BlockShape& x);

// The attention core (scores QK^T, softmax, dropout, context) as its own kernels.
//   FLOPs      forward A (block_flops' attention), backward 2A; run again in backward: A under full or
//              selective recompute, A/2 (the scores QK^T, rebuilt tile by tile) with flash
//              attention short of full recompute, 0 otherwise. A fused kernel on a causal model
//              (causal()) skips the score tiles wholly above the diagonal: of n = ceil(s/B) tile
//              rows and columns it computes n(n+1)/2, so every term above is multiplied by
//              rho = (n + 1) / (2n), with B = 128 the query and key block of FlashAttention-2/3
//              for head dimensions up to 128 (Dao 2023, arXiv:2307.08691, Sec. 3.1.1: blocks
//              with all column indices above the row indices are skipped; Shah et al. 2024,
//              arXiv:2407.08608). Unfused attention (Megatron's masked softmax) computes the whole
//              s x s score GEMMs.
//   HBM bytes  with flash attention (one fused kernel): Q, K, V read and the context written,
//              qkvo = e T (q_t + kv_t + v_t + ctx_t); backward 2 qkvo; recompute qkvo again under full
//              recompute (the fused forward runs again), else 0 (inside the fused backward).
//              Without it the score tensor, S = e b (a/t) s_l s bytes, goes through HBM once per
//              pass: forward qkvo + S (8 + 5 d_o)/2 (QK^T writes 1, softmax reads and writes 2,
//              dropout 2.5, the context GEMM reads 1), backward 2 qkvo + S (14 + 5 d_o)/2 (dP 1,
//              P for dV 1, dropout 2.5, softmax 3, dS for dQ and dK 2); a recompute repeats the
//              forward's bytes.
// rho above: the share of score tiles a fused causal kernel computes over a sequence of s.
inline constexpr std::int64_t kFlashBlock = 128;
double causal_tile_fraction(std::int64_t s);

struct AttentionCoreCost {
  Flops forward{0};
  Flops backward{0};
  Flops recompute{0};
  Bytes forward_traffic{0};
  Bytes backward_traffic{0};
  Bytes recompute_traffic{0};
  bool fused = false;  // flash attention: one compute-bound kernel
};
AttentionCoreCost attention_core_cost(const TransformerConfig& c, const BlockShape& x,
                                      Recompute recompute, bool flash_attention);

// HBM bytes of the memory-bound kernels outside GEMMs and attention: two norms, two fused bias +
// dropout + residual adds, the MLP's fused bias + activation over w = T f_t elements (MoE:
// w = (S T + N_e) fe_t), and with MLA the RMSNorms of the latents, n = T_r (r_q + r_kv). In
// elements of e bytes:
//   forward   norms 2 x 2 rep + residual adds 2 x (3 + d_o/2) rep + activation 2w (gated 3w) + 2n
//   backward  norms 2 x 3 rep + residual adds 2 x (3 + d_o/2) rep + activation 3w (gated 5w) + 3n
// A GPT block at t = 1: 19 T h elements forward (38 T h bytes), 25 T h backward (50 T h bytes).
struct ElementwiseTraffic {
  Bytes forward{0};
  Bytes backward{0};
};
ElementwiseTraffic elementwise_traffic(const TransformerConfig& c, const BlockShape& x);

// With fp8 GEMMs (x.g = 1), the casts Transformer Engine runs besides them: each GEMM input is
// quantized to fp8 with a transposed copy for the other GEMM that reads it (Hopper's fp8 GEMMs
// take only the TN layout), 2 bytes read and 1 + 1 written per element. TE fuses the casts of the
// QKV and MLP-in inputs into the norms (LayerNormLinear, LayerNormMLP), of the MLP-out input into
// the activation, and of the MLP-in output gradient into the activation's backward; the others
// are kernels of their own (transformer_engine/pytorch/module/*.py, cast_transpose):
//   forward   the output projection's input, T ctx_t elements:               4 T ctx_t bytes
//   backward  the output gradients of the output projection and the MLP out (T h each, whole
//             on every TP rank) and of QKV (T (q_t + kv_t + v_t)):       4 T (2h + q_t + kv_t + v_t)
// Zero without fp8. The weights' casts (4 bytes per GEMM weight, once per iteration: Megatron
// passes is_first_microbatch so TE caches them over the micro-batches) are the optimizer step's
// (training_graph.cpp). Amax reductions and scale updates (a few values per tensor) are left out.
ElementwiseTraffic fp8_cast_traffic(const BlockShape& x);
inline constexpr std::int64_t kFp8CastBytesPerElement = 4;

// The forward GEMMs (m tokens, n outputs, k inputs): QKV (T, q_t + kv_t + v_t, h), output
// projection (T, h, ctx_t), MLP in (T, f_t, h) (gated: 2 f_t wide) and out (T, h, f_t). MLA
// replaces QKV with the query down- and up-projections (T_r, r_q, h), (T, q_t, r_q) (r_q = 0:
// (T, q_t, h)) and the key/value ones (T_r, r_kv + rope, h), (T, a_t nope + v_t, r_kv). With MoE:
// the shared experts as one MLP S fe_t wide over T tokens, then one local expert's GEMMs fe_t
// wide over m_o = r ep sent_o tokens and, when it differs, the busiest expert's over m_max
// (block_shape.h; each rounded, at least 1). Each distinct shape once: a local expert's stand for
// all n_l of them in block_gemm_traffic and in the FLOPs.
std::vector<tg::GemmShape> block_gemm_shapes(const TransformerConfig& c, const BlockShape& x);

// HBM bytes of the block's GEMM ops: each GEMM reads its two operands and writes its result
// (gemm_traffic, layer_cost.h), operands g bytes per element, results e bytes.
//   forward   the shapes of block_gemm_shapes: QKV, output projection, MLP in and out; with MoE
//             the expert GEMMs once per local expert (n_l - 1 of m_o tokens and the busiest) and
//             the router (T/r, E, h), whose operands stay 2-byte
//   backward  their backward_gemms, the input and the weight gradient of each
// The attention core's bytes (Q, K, V, the scores, the context) and the memory-bound kernels'
// are not here (attention_core_cost, elementwise_traffic). A GPT block in bf16 moves forward
// 2 (4 T h + 12 T h/t + 12 h^2/t) bytes: 2 (16 T h + 12 h^2) at t = 1, the weights once and 16
// block-width activations (QKV: in 1, out 3; output projection: 1 + 1; MLP: 1 + 4, 4 + 1);
// backward twice that.
struct GemmTraffic {
  Bytes forward{0};
  Bytes backward{0};
};
GemmTraffic block_gemm_traffic(const TransformerConfig& c, const BlockShape& x);

// Parameters of one block held by one GPU:
//   2 norms (norm_parameters each) + attention h (q_t + kv_t + v_t) + ctx_t h (biases q_t + kv_t
//   + v_t + h: the output projection's is row-parallel, whole on every GPU) + the MLP
//   (mlp_parameters of width f_t), or with MoE the router h E, the shared experts
//   (mlp_parameters of width S fe_t) and n_l = E/ep routed experts (mlp_parameters of width fe_t
//   each: `experts`, data-parallel over dp c/ep). MLA's attention: h r_q + norm(r_q) + r_q q_t
//   (r_q = 0: h q_t), h (r_kv + rope) + norm(r_kv) + r_kv (a_t nope + v_t), ctx_t h; the down-
//   projections and the latents' norms are replicated over TP.
// A GPT block: 12 h^2 + 13 h at t = 1; 12 h^2/t + 7 h/t + 6 h on each of t GPUs.
struct BlockParameters {
  std::int64_t total = 0;
  std::int64_t experts = 0;  // the local experts among them
};
BlockParameters block_parameters_per_gpu(const TransformerConfig& c, const BlockShape& x);

// Saved activations of one block, in bytes, summed tensor by tensor (Korthikanti et al. 2022,
// Sec. 4.1), with m = rep bytes of each dropout mask when d_o = 1:
//   attention   norm input e rep + QKV input g rep + Q and K e T (q_t + kv_t) + V e T v_t
//               + projection input g T ctx_t + a mask; MLA adds the latents' norm and
//               up-projection inputs (e + g) T_r (r_q + r_kv)
//   scores      e b (a/t) s_l s softmax output, with dropout + (1 + e) b (a/t) s_l s for its mask
//               and output; flash attention: 4 b (a/t) s_l, the fp32 log-sum-exp of each row
//   mlp         norm input e rep + a mask + MLP: fc1 input g rep, activation input(s) e T f_t
//               (gated 2 e T f_t), fc2 input g T f_t; MoE: router input e rep, fp32 router
//               probabilities 4 T E / r, the shared experts as such an MLP of width S fe_t,
//               and the routed experts over their N_e tokens: inputs g N_e h (whole: after the
//               dispatch and the TP all-gather), activation inputs e N_e fe_t (gated 2 e N_e
//               fe_t), fc2 inputs g N_e fe_t
// Without recompute a block keeps all of it: a GPT block in bf16 with dropout at t = 1 keeps
// s b h (34 + 5 a s/h); with TP s b h (10 + 24/t + 5 a s/(h t)); with TP and SP all of it / t.
// Selective recompute drops the scores (not with flash attention: its statistics stay) and
// rebuilds them in backward; full recompute keeps the block input, e rep (2 s b h, /t with SP),
// and rebuilds the rest in backward (the rebuilt first norm reads the kept input, as
// Megatron-LM's checkpointed backward does: transient = without_recompute - saved).
struct SavedActivations {
  Bytes saved{0};              // kept from forward to backward under the recompute mode
  Bytes transient{0};          // rebuilt during the block's backward and freed after
  Bytes without_recompute{0};  // attention + scores + mlp
};
SavedActivations saved_activations(const TransformerConfig& c, const BlockShape& x,
                                   Recompute recompute, bool flash_attention);

// The tensor-parallel collectives of a layer that reduces its output `forward` times in forward
// and `backward` times in backward: each moves the T x h activation, e T h bytes; an all-reduce
// each, or with sequence parallelism an all-gather plus a reduce-scatter each. Nothing at t = 1.
struct TpCommunication {
  Bytes bytes{0};
  TpCollectives forward;
  TpCollectives backward;
};
TpCommunication tp_communication(const BlockShape& x, bool sequence_parallel, int forward,
                                 int backward);

// What one block sends per micro-batch:
//   tp          tp_communication with 2 reductions per direction (after attention and after the
//               MLP)
//   all-to-all  with MoE and ep > 1, one dispatch: the all-to-all buffer of one GPU, e h A bytes
//               (block_shape.h; (ep - 1)/ep of it leaves the GPU), balanced and dropless
//               e k T_r h = e k rep: every routed token copy; padded e h E C
//   ring        with c > 1, K and V passed to the neighbour per ring step: e T (kv_t + v_t) bytes
//   output      the block's output across a pipeline cut: e rep bytes
struct BlockCommunication {
  TpCommunication tp;
  Bytes moe_all_to_all{0};
  Bytes cp_kv{0};
  Bytes output{0};
};
BlockCommunication block_communication(const TransformerConfig& c, const BlockShape& x,
                                       const CostParams& p);

}  // namespace cs::wl
