// Per-layer costs of one micro-batch on one GPU: FLOPs, weights, saved activations, memory
// traffic and the tensor-parallel / expert / context-parallel communication sizes. A block's
// terms, one function per concern, are in block_cost.h.
//
// Notation: b micro-batch (samples), s sequence (tokens per sample; ViT: patches + 1),
// c context-parallel degree, T = b s / c tokens on this GPU, h hidden, a heads, d = h/a,
// k_v = kv_heads d, f MLP width, V vocabulary, t tensor-parallel degree, E experts, k top_k.
//
// FLOPs count matrix multiplications only, 2 per multiply-add (as Megatron does; norms, softmax
// and activation functions appear only as memory traffic). Forward of a dense block:
//   QKV 2Th(h + 2k_v)  +  scores and context 4T s h (c = 1: 4bs^2h)  +  output 2Th^2
//   +  MLP 4Thf (gated: 6Thf)
// GPT (k_v = h, f = 4h): 24bsh^2 + 4bs^2h, Narayanan et al. SC21 (arXiv:2104.04473) Sec. 5.1.
// MoE blocks: router 2ThE + the shared experts' MLP FLOPs + the routed experts' over the tokens
// they process (block_shape.h: k per token when balanced and dropless). Backward = 2 x forward
// (the input and the weight gradient). Tensor parallelism divides every GEMM by t (heads, MLP width
// and the vocabulary are split; norms, biases of row-parallel layers and the router are
// replicated). Unfused attention computes the full s x s scores (as in Eq. 3); a fused (flash)
// kernel on a causal model skips the masked tiles, so its scores-and-context term is x rho
// (block_cost.h, attention_core_cost).
//
// Activations kept for backward, in bytes (Korthikanti et al. 2022, arXiv:2205.05198, Sec. 4):
// a GPT block in bf16 with dropout keeps  s b h (34 + 5 a s / h)  without recompute;
//   with TP: s b h (10 + 24/t + 5 a s/(h t));  with TP + sequence parallelism: all of it / t;
//   selective recompute drops the 5 a s/h term (softmax and dropout of the attention scores);
//   full recompute keeps only the block input, 2 s b h (/t with SP).
// Here the same terms are summed tensor by tensor, which generalises to GQA (K and V are k_v
// wide), f != 4h, gated MLPs (both gate and up outputs kept), no dropout (no masks, softmax
// output only: the score term becomes 2as/h) and fp8 (GEMM inputs kept as 1 byte; everything
// else, and all communication, stays bf16).
//
// Flash attention (Dao et al. 2022, arXiv:2205.14135) never stores the a s^2 score tensors: a
// block keeps what selective recompute keeps plus the softmax statistics (4 bytes per row,
// b a s/t), and its backward recomputes the scores QK^T (2 T s h/t FLOPs, in `recompute`).
//
// HBM traffic, for the roofline of each op the training graph emits: every byte belongs to
// exactly one op. A GEMM reads its two operands and writes its result (gemm_traffic below); the
// attention core and the memory-bound kernels (norms, activations, dropout, residual adds, the
// cross-entropy) count their own bytes (block_cost.h, head_cost) and never a GEMM's. CNN layers
// are one op each and keep an estimate: weights read once plus every saved activation written
// and read once, backward twice the forward's.
#pragma once

#include <cstdint>

#include "core/units.h"
#include "workloads/model.h"
#include "taskgraph/task_graph.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

// The shape of one micro-batch on one GPU.
struct CostParams {
  std::int64_t micro_batch = 1;    // b, samples
  std::int64_t sequence = 2048;    // s, tokens per sample before the context-parallel split
  int tp = 1;                      // t
  int cp = 1;                      // c: each GPU holds s/c tokens of every sample
  int ep = 1;                      // experts are spread over ep GPUs (E/ep each)
  bool sequence_parallel = false;  // with t > 1: norms, dropout and block inputs sharded over t
  Recompute recompute = Recompute::kNone;
  Precision precision = Precision::kBf16;
  bool flash_attention = false;  // fused attention: scores never stored (see top of file)
  // MoE routing (parallel_plan.h, block_shape.h): capacity factor (0: dropless), padding to the
  // capacity, max/mean tokens per expert.
  double moe_capacity_factor = 0;
  bool moe_pad_to_capacity = false;
  double moe_load_imbalance = 1;
};

// Parameters from a plan: b, t, c, ep, SP, recompute, precision and flash attention as planned; s
// is the plan's sequence_length, or the model's patch tokens for vision transformers. The
// formulas cover the shapes of plans that pass validate_plan (plan_check.h).
CostParams cost_params(const Model& m, const ParallelPlan& plan);

// Tensor-parallel collectives of one layer in one direction. Without sequence parallelism a
// Megatron block all-reduces twice in forward and twice in backward; with it, each all-reduce
// becomes an all-gather plus a reduce-scatter moving the same bytes.
struct TpCollectives {
  int all_reduce = 0;
  int all_gather = 0;
  int reduce_scatter = 0;
  int count() const { return all_reduce + all_gather + reduce_scatter; }
};

struct LayerCost {
  Flops forward{0};   // this GPU, one micro-batch
  Flops backward{0};  // 2 x forward
  // Forward FLOPs run again during backward: 0 (none), the attention scores and context
  // (selective), the whole forward (full); with flash attention and no full recompute, the
  // scores QK^T. Full recompute also repeats tp_forward.
  Flops recompute{0};
  std::int64_t parameters = 0;         // held by this GPU
  std::int64_t expert_parameters = 0;  // the MoE experts among them (data-parallel over dp c / ep)
  // Parameters of the largest weight matrix it uses on this GPU, one module as DeepSpeed's
  // ZeRO-3 gathers it (memory.h): a block's largest GEMM weight (Megatron's fused QKV or fc1,
  // one expert's with MoE) or its router; a token, position or patch table; the head's
  // projection (a tied head: the token table it shares); a CNN layer's parameters.
  std::int64_t largest_weight = 0;
  Bytes weights{0};                    // parameters x 2 B (bf16; fp8 training keeps bf16 weights)
  Bytes gradients{0};                  // parameters x 2 B
  Bytes activations_saved{0};          // kept from forward to backward, per the recompute mode
  // Rebuilt while this layer runs its backward and freed after: under full recompute the
  // no-recompute activations but the kept block input (the rebuilt block reads that one), under
  // selective the attention-score tensors, 0 without recompute.
  Bytes recompute_transient{0};
  // HBM bytes of the layer's op of class gemm alone: for blocks and heads the operand traffic of
  // their GEMMs (gemm_traffic); for the embedding the lookup or the patch projection; for a CNN
  // layer the whole layer (see top of file). `gemm_recompute_traffic`: what the recomputed GEMMs
  // move again, the forward's under full recompute, else 0.
  Bytes gemm_forward_traffic{0};
  Bytes gemm_backward_traffic{0};
  Bytes gemm_recompute_traffic{0};
  // The attention core (scores QK^T, softmax, dropout, context) as its own kernels, a part of
  // forward / backward / recompute above, with the HBM bytes its kernels move
  // (attention_core_cost in block_cost.h). Zero for CNNs, embeddings and heads.
  Flops attention_forward{0};
  Flops attention_backward{0};
  Flops attention_recompute{0};
  Bytes attention_forward_traffic{0};
  Bytes attention_backward_traffic{0};
  Bytes attention_recompute_traffic{0};
  bool attention_fused = false;  // flash attention: one compute-bound kernel
  // Memory-bound kernels outside GEMMs and attention (norms, bias + activation, dropout +
  // residual add; the head's cross-entropy over the logits): HBM bytes read + written.
  // A full recomputation repeats the forward's.
  Bytes elementwise_forward{0};
  Bytes elementwise_backward{0};
  // The forward GEMMs behind `forward - attention_forward` (m = tokens, n = outputs, k = inputs),
  // for compute models that look shapes up (a calibration profile); empty for CNN layers and
  // the embedding. backward_gemms() gives the backward's.
  std::vector<tg::GemmShape> gemms;
  // One tensor-parallel collective moves a T x h bf16 tensor: this is its full size (the
  // all-gather's output, the reduce-scatter's input, the all-reduce's buffer); 0 when t = 1.
  Bytes tp_collective_bytes{0};
  TpCollectives tp_forward;
  TpCollectives tp_backward;
  // MoE: the all-to-all buffer of one dispatch on this GPU (block_shape.h; balanced and
  // dropless k T h x 2 B, /t with SP); the combine sends the same. Forward: dispatch + combine;
  // backward: the same two again.
  Bytes moe_all_to_all_bytes{0};
  // Context parallelism (c > 1): X = 2 e T kv_t, this GPU's K and V (what a ring step passes to
  // the neighbour; the all-gather collects c of them), and Q = e T q_t, this GPU's queries (the
  // same size as its attention output), which the all-to-all variant exchanges with X. The
  // exchanges per variant are in training_graph.h; 0 when c = 1 and for every other layer.
  Bytes cp_kv_bytes{0};
  Bytes cp_q_bytes{0};
  // The layer's output activation on this GPU (what crosses a pipeline cut after it):
  // T h x 2 B, /t with SP; CNN: b x output_elements x 2 B.
  Bytes output_bytes{0};
};

// The backward GEMMs of forward GEMMs: for Y = X W of shape (m, n, k), the input gradient
// dX = dY W^T (m, k, n) and the weight gradient dW = X^T dY (k, n, m).
std::vector<tg::GemmShape> backward_gemms(const std::vector<tg::GemmShape>& forward);

// HBM bytes of GEMMs, each C[m x n] = A[m x k] B[k x n] reading its two operands once (`in`
// bytes per element) and writing its result once (`out` bytes per element), summed over `shapes`:
//   in (m k + k n) + out m n
// bf16: 2 (m k + k n + m n); fp8: 1-byte operands, a 2-byte result. The backward of a forward
// GEMM (its backward_gemms, operands and results as in forward) moves in (2 m n + m k + k n) +
// out (m k + k n): in bf16 exactly twice the forward's bytes.
Bytes gemm_traffic(const std::vector<tg::GemmShape>& shapes, std::int64_t in, std::int64_t out);

// Transformer block `layer` (0-based; negative: the last, a block with experts for a mixture)
// as block_config (model.h) gives it: attention + MLP, or + MoE past a mixture's first
// dense_layers. Assembled from the pieces of block_cost.h: block_flops, attention_core_cost,
// elementwise_traffic, block_gemm_shapes, block_parameters_per_gpu, saved_activations and
// block_communication. The blocks of a model cost the same, but for a mixture's dense ones.
LayerCost transformer_block_cost(const Model& m, const CostParams& p, int layer = -1);
// The input side: token (vocab-parallel), position and type tables, or ViT's patch projection.
LayerCost embedding_cost(const Model& m, const CostParams& p);
// The output side: final norm and head (lm logits over V/t with fp32 logits kept for the loss,
// BERT's mlm head, or a classifier on the class token). A tied lm head holds no weights here
// (see memory.h for the copy a last pipeline stage keeps).
LayerCost head_cost(const Model& m, const CostParams& p);
// CNN layer `index` of m.cnn.layers (not tensor-parallel; recompute is not modelled for CNNs).
LayerCost cnn_layer_cost(const Model& m, std::size_t index, const CostParams& p);
// Pipeline unit `index` (0 .. pipeline_layers(m) - 1): a transformer block or a CNN layer.
LayerCost pipeline_layer_cost(const Model& m, int index, const CostParams& p);

// ---- whole-model FLOPs per iteration --------------------------------------------------------
// Megatron's Eq. 3 (Narayanan et al. SC21): training FLOPs of a GPT with full recompute, i.e.
// forward, backward and the recomputed forward of every block; the logits layer 3 x.
//   F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
Flops megatron_eq3_flops(std::int64_t global_batch, std::int64_t sequence, std::int64_t layers,
                         std::int64_t hidden, std::int64_t vocab);
// "Model FLOPs" (Korthikanti et al. 2022, Sec. 6; the numerator of MFU): no recomputation.
//   F = 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
Flops megatron_model_flops(std::int64_t global_batch, std::int64_t sequence, std::int64_t layers,
                           std::int64_t hidden, std::int64_t vocab);
// The same two closed forms with l, h, V taken from a transformer model (exact for GPT blocks
// only: MHA, f = 4h, ungated).
Flops megatron_eq3_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence);
Flops megatron_model_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence);
// Any model, from the layer costs (t = 1): global_batch x sum over all layers of forward +
// backward + recompute. For a GPT: Recompute::kFull gives Eq. 3, kNone the model FLOPs.
// `sequence` is ignored for CNNs and vision transformers.
Flops training_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence,
                     Recompute recompute);
// training_flops(..., Recompute::kNone): what MFU divides by time x GPUs x peak.
Flops model_flops(const Model& m, std::int64_t global_batch, std::int64_t sequence);

}  // namespace cs::wl
