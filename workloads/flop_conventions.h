// The FLOPs of one training iteration as the conventions people publish them in, so that a
// prediction can be compared with a paper's TFLOP/s or MFU in that paper's own convention.
// B global batch (sequences), s sequence length, l layers, h hidden, V vocabulary, a heads,
// d = h / a the head dimension, q = a d, k = kv_heads d (GQA), f the MLP width (top_k experts of
// width f_e for a mixture of experts), e = 3 for a gated MLP (SwiGLU) else 2.
//
//   training       the simulated FLOPs: the per-layer costs (layer_cost.h) of forward, backward
//                  and the plan's recomputation, as executed (a fused causal attention kernel's
//                  skipped tiles are not counted). For a GPT under full recomputation without
//                  flash attention this is Megatron's Eq. 3.
//   model          the same without recomputation ("model FLOPs", Korthikanti et al. 2022,
//                  Sec. 6; the numerator of MFU).
//   megatron-eq3   Narayanan et al. SC21, Eq. 3, GPT closed form with full recomputation:
//                  96 B s l h^2 (1 + s/(6h) + V/(16 l h)). Exact for GPT blocks only (MHA,
//                  f = 4h, ungated); reported for any transformer as the formula gives it.
//   megatron-core  Megatron-Core's num_floating_point_operations (megatron/training/training.py,
//                  transformer_flops, MHA/GQA branch): 3 (forward, wgrad, dgrad) x 2 (FMA) per
//                  GEMM, no recomputation, the attention core halved for the causal mask:
//                  6 B s [l (h f e + h (q + 2k) + q h) + h V] + 6 B s^2 l q. A mixture counts
//                  h f_e e (top_k + S) for each block with experts (S shared experts) and h f e for
//                  its dense_layers; multi-head latent attention takes the MLA branch: per block
//                  r_q (h + a d_qk + 1) (r_q = 0: h a d_qk) + r_kv (h + a (nope + d_v) + 1)
//                  + h rope + a d_v h, and the core a (d_qk + d_v)/2 in place of q.
//   6n-attention   torchtitan's get_nparams_and_flops (models/llama3; get_moe_model_nparams_and_flops
//                  for mixtures): per token 6 (N - N_emb) + 6 l a (d_qk + d_v) s, i.e.
//                  12 l a d s for standard attention, N the parameters (active ones for a mixture
//                  of experts: top_k routed and the shared experts), N_emb those of the embedding
//                  tables, the attention not halved.
// The three closed forms apply to transformers with token inputs; nothing for other models.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

// The conventions' names, in the order above (and of iteration_flops).
inline constexpr std::string_view kFlopConventionNames[] = {"training", "model", "megatron-eq3", "megatron-core", "6n-attention"};

struct FlopCount {
  std::string convention;  // one of kFlopConventionNames
  Flops flops{0};          // one iteration, all GPUs
};

// Every convention that applies to the model, in the order above.
std::vector<FlopCount> iteration_flops(const Model& m, const ParallelPlan& plan);

}  // namespace cs::wl
