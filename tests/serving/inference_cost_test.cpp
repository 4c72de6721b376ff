// Per-GPU costs of a serving iteration against hand formulas: the KV cache per token, the
// 2 N FLOPs per token of a forward pass, causal attention pairs, expected experts touched.
#include <gtest/gtest.h>

#include "workloads/inference_cost.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

TEST(InferenceCost, KvBytesPerTokenLlama3_70b) {
  const Model m = load_model("llama3-70b");  // 80 layers, 8 KV heads of 128
  EXPECT_EQ(kv_bytes_per_token(m.transformer, {1, Precision::kBf16}).value(), 2 * 8 * 128 * 2 * 80);
  EXPECT_EQ(kv_bytes_per_token(m.transformer, {4, Precision::kBf16}).value(), 2 * 2 * 128 * 2 * 80);
  // An FP8 cache halves it.
  EXPECT_EQ(kv_bytes_per_token(m.transformer, {4, Precision::kBf16, Precision::kFp8}).value(), 2 * 2 * 128 * 80);
  // More TP GPUs than KV heads: each keeps one head (replicated).
  EXPECT_EQ(kv_bytes_per_token(m.transformer, {16, Precision::kBf16}).value(), 2 * 1 * 128 * 2 * 80);
}

TEST(InferenceCost, WeightsPerGpu) {
  const Model m = load_model("llama3-70b");
  EXPECT_EQ(inference_weight_bytes(m, {4, Precision::kBf16}).value(), parameter_count(m) * 2 / 4);
  EXPECT_EQ(inference_weight_bytes(m, {8, Precision::kFp8}).value(), parameter_count(m) / 8);
}

TEST(InferenceCost, ForwardFlopsAreTwicePerParameterPerToken) {
  // Kaplan et al. 2020: a forward pass costs 2 N FLOPs per token (N without the embedding), plus
  // attention. Summed over blocks and the head for T tokens that all sample.
  const Model m = load_model("llama3-8b");
  const TransformerConfig& c = m.transformer;
  for (int tp : {1, 2, 8}) {
    InferenceBatch b;
    for (int i = 0; i < 16; ++i) b.add(1, 0, true);  // 16 decodes of an empty context
    double flops = 0;
    for (int l = 0; l < c.layers; ++l) flops += inference_block_cost(c, l, b, {tp, Precision::kBf16}).gemm.flops.value();
    flops += inference_head_cost(c, b, {tp, Precision::kBf16}).flops.value();
    const double n = static_cast<double>(parameter_count(m) - embedding_parameters(c));
    EXPECT_NEAR(flops * tp / (2.0 * 16 * n), 1.0, 1e-3) << "tp " << tp;
  }
}

TEST(InferenceCost, CausalAttentionPairs) {
  const Model m = load_model("llama3-8b");  // 32 heads of 128
  InferenceBatch prefill;
  prefill.add(100, 0, true);
  EXPECT_DOUBLE_EQ(prefill.attention_pairs, 100.0 * 101 / 2);
  const InferenceBlockCost p = inference_block_cost(m.transformer, 0, prefill, {1, Precision::kBf16});
  EXPECT_DOUBLE_EQ(p.attention.flops.value(), 2.0 * 32 * 256 * 5050);
  // A decode after 999 cached tokens attends to 1,000 keys.
  InferenceBatch decode;
  decode.add(1, 999, true);
  EXPECT_DOUBLE_EQ(decode.attention_pairs, 1000.0);
  EXPECT_EQ(decode.kv_tokens_read, 1000);
}

TEST(InferenceCost, ExpectedExpertsTouched) {
  EXPECT_DOUBLE_EQ(expected_experts_touched(8, 2, 1), 2.0);
  EXPECT_DOUBLE_EQ(expected_experts_touched(8, 2, 4), 8.0 * (1.0 - 0.75 * 0.75 * 0.75 * 0.75));
  EXPECT_NEAR(expected_experts_touched(256, 8, 100000), 256.0, 1e-9);
  // A mixture's decode reads only the experts its tokens route to.
  const Model mx = load_model("mixtral-8x7b");
  InferenceBatch one, many;
  one.add(1, 0, true);
  for (int i = 0; i < 64; ++i) many.add(1, 0, true);
  const auto a = inference_block_cost(mx.transformer, 0, one, {1, Precision::kBf16});
  const auto b = inference_block_cost(mx.transformer, 0, many, {1, Precision::kBf16});
  const double expert = static_cast<double>(mlp_parameters(mx.transformer, mx.transformer.expert_ffn_hidden)) * 2;
  // 64 tokens touch all but (3/4)^64 of the 8 experts: 6 more experts' weights than one token.
  EXPECT_NEAR(static_cast<double>(b.gemm.memory.value() - a.gemm.memory.value()),
              (expected_experts_touched(8, 2, 64) - 2.0) * expert + 63.0 * 2 * (4.0 * 4096 + 2.0 * 2 * 2 * 14336), 1e3);
}

TEST(InferenceCost, ExpertParallelSpreadsWholeExperts) {
  // The same mixture block on 8 GPUs, experts sliced (TP) or spread whole (EP): the FLOPs of the
  // replica are the same, the routed experts' weights read are the same in expectation, and EP
  // swaps the MLP's all-reduce for a dispatch and a combine of T/8 x k x h x 2 bytes per rank.
  const Model m = load_model("mixtral-8x7b");  // 8 experts, top 2, h 4096
  const auto& c = m.transformer;
  for (std::int64_t tokens : {1, 16, 4096}) {
    InferenceBatch b;
    b.add(tokens, 0, true);
    const auto tp = inference_block_cost(c, 0, b, {8, Precision::kBf16});
    const auto ep = inference_block_cost(c, 0, b, {8, Precision::kBf16, Precision::kBf16, 8});
    EXPECT_NEAR(ep.gemm.flops.value() / tp.gemm.flops.value(), 1.0, 1e-12) << tokens;
    EXPECT_EQ(tp.all_reduces, 2);
    EXPECT_EQ(ep.all_reduces, 1);
    EXPECT_EQ(ep.all_to_alls, 2);
    EXPECT_EQ(ep.ep_all_to_all.value(), std::llround(static_cast<double>(tokens) / 8 * 2 * 4096 * 2));
    // Weights: each GPU reads 1/8 of the touched experts either way; the bytes differ only in the
    // activations. TP: T x 2 B x (4h + 2 x 2 x k f / 8) = 61,440 T; EP: T x 2 B x 4h + 2 x 2 B x
    // (T k / 8)(h + 2 f) = 65,536 T (h 4,096, f 14,336, k 2): 4,096 T more.
    EXPECT_NEAR(static_cast<double>(ep.gemm.memory.value() - tp.gemm.memory.value()), 4096.0 * static_cast<double>(tokens), 1.0);
  }
  // A dense model ignores ep.
  const Model d = load_model("llama3-8b");
  InferenceBatch b;
  b.add(64, 0, true);
  EXPECT_EQ(inference_block_cost(d.transformer, 0, b, {8, Precision::kBf16, Precision::kBf16, 8}).all_to_alls, 0);
}

TEST(InferenceCost, TensorParallelAllReduces) {
  const Model m = load_model("llama3-70b");
  InferenceBatch b;
  b.add(512, 0, true);
  EXPECT_EQ(inference_block_cost(m.transformer, 0, b, {1, Precision::kBf16}).all_reduces, 0);
  const auto c = inference_block_cost(m.transformer, 0, b, {8, Precision::kBf16});
  EXPECT_EQ(c.all_reduces, 2);
  EXPECT_EQ(c.tp_all_reduce.value(), 512 * 8192 * 2);
}

}  // namespace
}  // namespace cs::wl
