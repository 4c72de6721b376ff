// Per-GPU costs of one serving iteration (a forward pass over a batch of sequences), the inputs
// of the serving time model (drivers/serving_step_time.h). Decoders with token inputs only.
//
// A batch is a set of sequences; sequence i brings q_i new tokens (a prompt chunk, or 1 when it
// decodes) after c_i tokens already in its KV cache. T = sum q_i tokens go through every block.
// The replica's weights and KV heads are split over t tensor-parallel GPUs (Megatron's column /
// row split, as vLLM shards them); costs below are per GPU.
//
// GEMMs (per block, 2 FLOPs per multiply-add):   F = 2 T P_active / t   (+ the router's 2 T h E,
//   replicated). P_active: attention projections + the MLP a token uses (top_k routed experts and
//   the shared ones in a mixture). HBM traffic: the weights the batch touches, read once per
//   iteration -- for a dense block P / t; for a mixture the expected number of distinct experts
//   T tokens route to, E (1 - (1 - k/E)^T) for uniform, independent routing (the balls-into-bins
//   expectation), times one expert's weights / t -- plus activations in and out (2 bytes each).
//   This is why decoding is memory-bound: at T = 8 a 70B model reads 140 GB of weights for
//   2.2 TFLOP.
// Attention (causal): token j of sequence i attends to c_i + j keys, so the score and context
//   FLOPs are 2 a/t (d_qk + d_v) sum_i q_i (c_i + (q_i + 1) / 2). HBM traffic: the KV cache read
//   once per sequence, sum_i (c_i + q_i) x kv bytes per token, plus Q and the output (FlashAttention
//   and paged-attention kernels keep scores on chip, Dao et al. 2022; Kwon et al. 2023).
// KV cache per token and block: 2 k_v bytes_kv per layer (K and V), k_v = kv heads x head dim;
//   with t > kv heads each GPU keeps one head (vLLM replicates KV heads then). MLA keeps the
//   compressed latent and the rotary key, kv_lora_rank + qk_rope_head_dim per layer, on every TP
//   GPU (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1.2).
// Elementwise kernels (two norms, two residual adds, the MLP's activation): read and written once,
//   10 T h + 3 T f'/t elements (f' the MLP width the token uses) of 2 bytes.
// Tensor-parallel communication: two all-reduces of T h x 2 bytes per block (attention output and
//   MLP output, Megatron-LM's f and g operators) when t > 1.
// Expert parallelism (ep = t, a mixture's blocks): each GPU holds E/ep whole routed experts. With
//   balanced routing it runs T k / ep token-expert pairs (2 T k P_expert / ep FLOPs) and reads the
//   experts of its own that the batch touches, (E/ep)(1 - (1 - k/E)^T) in expectation. The MLP's
//   all-reduce becomes a dispatch and a combine all-to-all (DeepEP's and pplx's kernels; the
//   attention output is reduce-scattered so each GPU routes T/ep tokens, and gathered again
//   after the combine: the bytes of the one all-reduce kept): each rank's buffer is
//   T/ep x k x h x 2 bytes, spread evenly over the ep ranks. Shared experts stay TP-sliced.
// The LM head computes logits only for sequences that sample a token this iteration:
//   F = 2 n_sample V h / t, weights V h / t read once.
// Weight precision: bf16/fp16 2 bytes, fp8 1 byte per parameter; activations in 16 bits; the KV
// cache in 16 bits (vLLM's default kv_cache_dtype "auto") or 8 (kv_cache_dtype "fp8", which
// TensorRT-LLM's FP8 benchmarks also use).
#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "taskgraph/task_graph.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::wl {

// How one replica holds the model.
struct InferenceShard {
  int tp = 1;
  Precision precision = Precision::kBf16;     // of the weights
  Precision kv_precision = Precision::kBf16;  // of the KV cache (vLLM kv_cache_dtype: auto = 16 bits, fp8)
  // Expert parallelism (vLLM --enable-expert-parallel, data-parallel size 1): 1, or tp: each of the
  // replica's tp GPUs holds experts / tp whole routed experts instead of a 1/tp slice of each.
  int ep = 1;
  // Pipeline stages (vLLM --pipeline-parallel-size): each GPU holds the layers of one stage,
  // ceil(layers / pp) at most.
  int pp = 1;
};

// The batch of one iteration, reduced to what the costs depend on.
struct InferenceBatch {
  std::int64_t tokens = 0;         // T = sum q_i
  std::int64_t sequences = 0;      // sequences in the batch
  std::int64_t sampled = 0;        // sequences that produce a token (decodes, finished prompts)
  double attention_pairs = 0;      // sum q_i (c_i + (q_i + 1) / 2)
  std::int64_t kv_tokens_read = 0; // sum (c_i + q_i)
  // Adds sequence i: q new tokens after c cached ones; `samples`: it yields a token.
  void add(std::int64_t q, std::int64_t c, bool samples);
};

struct InferenceOpCost {
  Flops flops{0};
  Bytes memory{0};
  std::vector<tg::GemmShape> gemms;  // the GEMMs the FLOPs come from (for the shape model)
};

// One block's per-GPU costs for a batch.
struct InferenceBlockCost {
  InferenceOpCost gemm;
  InferenceOpCost attention;
  InferenceOpCost elementwise;
  Bytes tp_all_reduce{0};  // size of each of the block's all-reduces (0 when t = 1)
  int all_reduces = 0;
  Bytes ep_all_to_all{0};  // each rank's buffer of the expert dispatch and of the combine
  int all_to_alls = 0;
};

InferenceBlockCost inference_block_cost(const TransformerConfig& c, int layer, const InferenceBatch& b,
                                        const InferenceShard& s);
// The final norm and the LM head over the sampled tokens.
InferenceOpCost inference_head_cost(const TransformerConfig& c, const InferenceBatch& b, const InferenceShard& s);

// KV-cache bytes one token takes on one GPU of the replica, the layers of its (largest) stage
// together.
Bytes kv_bytes_per_token(const TransformerConfig& c, const InferenceShard& s);
// Weight bytes on one GPU of the replica (every parameter / (t pp), at the weight precision).
Bytes inference_weight_bytes(const Model& m, const InferenceShard& s);
// Expected distinct experts that `tokens` tokens route to with top_k of `experts` (uniform,
// independent): E (1 - (1 - k/E)^T).
double expected_experts_touched(int experts, int top_k, std::int64_t tokens);
// Bytes per weight parameter at a precision.
std::int64_t weight_bytes_per_parameter(Precision p);

}  // namespace cs::wl
