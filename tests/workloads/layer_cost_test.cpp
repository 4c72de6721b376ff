// Per-layer costs against their closed forms: Megatron's FLOP counts (Narayanan et al. SC21)
// and the activation memory of Korthikanti et al. 2022, "Reducing Activation Recomputation".
#include <cmath>

#include <gtest/gtest.h>

#include "workloads/layer_cost.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

double rel(double got, double want) { return std::abs(got - want) / want; }

CostParams shape(std::int64_t b, std::int64_t s, int t = 1, bool sp = false,
                 Recompute r = Recompute::kNone) {
  CostParams p;
  p.micro_batch = b;
  p.sequence = s;
  p.tp = t;
  p.sequence_parallel = sp;
  p.recompute = r;
  return p;
}

TEST(MegatronFlops, Eq3EqualsTheSumOfLayerCostsForEveryGptSize) {
  // With full recompute every block runs forward twice and backward (2x forward) once: 4 x
  // (24 B s h^2 + 4 B s^2 h) per block; the logits layer 3 x 2 B s h V; the embedding no FLOPs.
  // That is 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). Without recompute the blocks count 3x:
  // 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  for (const char* name : {"gpt-1.7b", "gpt-18.4b", "gpt-145.6b", "gpt-175b", "gpt-1t"}) {
    SCOPED_TRACE(name);
    const Model m = load_model(name);
    const std::int64_t B = 1536, s = 2048;
    EXPECT_LT(
        rel(training_flops(m, B, s, Recompute::kFull).value(), megatron_eq3_flops(m, B, s).value()),
        1e-12);
    EXPECT_LT(rel(model_flops(m, B, s).value(), megatron_model_flops(m, B, s).value()), 1e-12);
  }
}

TEST(MegatronFlops, Eq3For175BByHand) {
  // B = 1536, s = 2048, l = 96, h = 12288, V = 51200:
  //   1 + s/(6h) + V/(16 l h) = 1 + 0.0277778 + 0.0027127 = 1.0304905.
  const double base = 96.0 * 1536 * 2048 * 96 * 12288.0 * 12288.0;
  const double bracket = 1.0 + 2048.0 / (6 * 12288.0) + 51200.0 / (16 * 96 * 12288.0);
  EXPECT_NEAR(bracket, 1.0304905, 1e-7);
  EXPECT_DOUBLE_EQ(megatron_eq3_flops(1536, 2048, 96, 12288, 51200).value(), base * bracket);
  // Model FLOPs are 3/4 of Eq. 3 in the block terms; the logits term is the same 6 B s h V.
  const double logits = 6.0 * 1536 * 2048 * 12288 * 51200.0;
  EXPECT_NEAR(megatron_eq3_flops(1536, 2048, 96, 12288, 51200).value() - logits,
              (megatron_model_flops(1536, 2048, 96, 12288, 51200).value() - logits) * 4.0 / 3.0,
              1e6);
}

TEST(BlockCost, GptForwardIs24bsh2Plus4bs2h) {
  const Model m = load_model("gpt-175b");
  const double b = 2, s = 2048, h = 12288;
  const LayerCost c = transformer_block_cost(m, shape(2, 2048));
  EXPECT_DOUBLE_EQ(c.forward.value(), 24 * b * s * h * h + 4 * b * s * s * h);
  EXPECT_DOUBLE_EQ(c.backward.value(), 2 * c.forward.value());
  EXPECT_DOUBLE_EQ(c.recompute.value(), 0.0);
  // Tensor parallelism divides every GEMM by t.
  const LayerCost t8 = transformer_block_cost(m, shape(2, 2048, 8));
  EXPECT_DOUBLE_EQ(t8.forward.value(), c.forward.value() / 8);
  // 12h^2 + 13h parameters at t = 1; at t = 8 the column-parallel biases (QKV 3h, fc1 4h) are
  // split, the row-parallel biases (2h) and the norms (4h) stay whole on every rank.
  EXPECT_EQ(c.parameters, 12 * 12288LL * 12288 + 13 * 12288);
  EXPECT_EQ(t8.parameters, 12 * 12288LL * 12288 / 8 + 7 * 12288 / 8 + 2 * 12288 + 4 * 12288);
  EXPECT_EQ(c.weights, Bytes{2 * c.parameters});
}

TEST(BlockCost, RecomputeFlops) {
  const Model m = load_model("gpt-175b");
  const double s = 2048, h = 12288;
  const LayerCost sel = transformer_block_cost(m, shape(1, 2048, 1, false, Recompute::kSelective));
  const LayerCost full = transformer_block_cost(m, shape(1, 2048, 1, false, Recompute::kFull));
  EXPECT_DOUBLE_EQ(sel.recompute.value(), 4 * s * s * h);  // scores and context only
  EXPECT_DOUBLE_EQ(full.recompute.value(), full.forward.value());
}

// Korthikanti et al. 2022, Sec. 4: per block, bf16, with dropout, s b h (34 + 5 a s / h) bytes.
// GPT-3 175B, b = 1, s = 2048: sbh = 25,165,824 and 5 a s / h = 5 * 96 * 2048 / 12288 = 80.
TEST(BlockActivations, Korthikanti) {
  const Model m = load_model("gpt-175b");
  const std::int64_t sbh = 2048LL * 12288;
  auto act = [&](int t, bool sp, Recompute r) {
    return transformer_block_cost(m, shape(1, 2048, t, sp, r)).activations_saved.value();
  };
  EXPECT_EQ(act(1, false, Recompute::kNone), sbh * (34 + 80));
  // TP without SP: sbh (10 + 24/t + 5as/(ht)) = sbh (10 + 3 + 10) at t = 8.
  EXPECT_EQ(act(8, false, Recompute::kNone), sbh * 23);
  // TP + SP: sbh (34/t + 5as/(ht)) = sbh (4.25 + 10).
  EXPECT_EQ(act(8, true, Recompute::kNone), sbh * 34 / 8 + sbh * 10);
  // Selective recompute drops the 5as/h term: sbh 34/t.
  EXPECT_EQ(act(8, true, Recompute::kSelective), sbh * 34 / 8);
  // Full recompute keeps the block input: 2sbh, /t with SP.
  EXPECT_EQ(act(1, false, Recompute::kFull), 2 * sbh);
  EXPECT_EQ(act(8, true, Recompute::kFull), 2 * sbh / 8);
  // ... and rebuilds the rest of the block's activations during its backward (the input the
  // rebuilt block reads is the kept one, not a copy).
  EXPECT_EQ(transformer_block_cost(m, shape(1, 2048, 8, true, Recompute::kFull))
                .recompute_transient.value(),
            act(8, true, Recompute::kNone) - act(8, true, Recompute::kFull));
}

TEST(BlockActivations, FlashAttentionStoresNoScores) {
  // The 5as/h term becomes the fp32 log-sum-exp of every score row, 4 b a s bytes; backward
  // rebuilds the scores QK^T: 2 b s^2 h FLOPs, of which the causal kernel computes the tiles on
  // and below the diagonal: 16 tile rows at s = 2048, 17/32 of them.
  const Model m = load_model("gpt-175b");
  CostParams p = shape(1, 2048);
  p.flash_attention = true;
  const LayerCost c = transformer_block_cost(m, p);
  EXPECT_EQ(c.activations_saved.value(), 2048LL * 12288 * 34 + 4 * 96 * 2048);
  EXPECT_DOUBLE_EQ(c.recompute.value(), 2.0 * 2048 * 2048 * 12288 * 17 / 32);
  p.recompute = Recompute::kSelective;
  EXPECT_EQ(transformer_block_cost(m, p).activations_saved, c.activations_saved);
  EXPECT_EQ(transformer_block_cost(m, p).recompute_transient, Bytes{0});
}

TEST(BlockTraffic, MemoryBoundKernelsOfAGptBlock) {
  // GPT-3 175B block (dropout, GELU MLP f = 4h), b = 1, s = 2048, t = 1: T = s tokens.
  // Norms, residual branches and the activation, in 2-byte elements: forward 2 x 2 Th (norms)
  // + 2 x 3.5 Th (bias-dropout-add) + 2 x 4Th (bias-GELU) = 19 Th elements = 38 Th bytes;
  // backward 2 x 3 Th + 2 x 3.5 Th + 3 x 4Th = 25 Th elements = 50 Th bytes.
  const Model m = load_model("gpt-175b");
  const std::int64_t T = 2048, h = 12288, a = 96;
  const LayerCost c = transformer_block_cost(m, shape(1, 2048));
  EXPECT_EQ(c.elementwise_forward, Bytes{38 * T * h});
  EXPECT_EQ(c.elementwise_backward, Bytes{50 * T * h});
  // Attention core: Q, K, V read and the context written (4 Th x 2 B), plus the a s^2 score
  // tensor (2 B) 6.5 times forward and 9.5 times backward; its FLOPs are the 4 b s^2 h of the
  // scores and the context, a part of the block's.
  const std::int64_t score = 2 * a * T * T, qkvo = 2 * 4 * T * h;
  EXPECT_EQ(c.attention_forward_traffic, Bytes{qkvo + score * 13 / 2});
  EXPECT_EQ(c.attention_backward_traffic, Bytes{2 * qkvo + score * 19 / 2});
  EXPECT_DOUBLE_EQ(c.attention_forward.value(), 4.0 * T * T * h);
  EXPECT_DOUBLE_EQ(c.attention_backward.value(), 8.0 * T * T * h);
  EXPECT_FALSE(c.attention_fused);
  // Tensor parallelism splits the heads and the MLP but not the norms and residual branches
  // (without sequence parallelism): forward 22 Th / 2 + 4 x 4Th/8 / 2 elements ... in bytes
  // 2 x (11 Th + 2 x 4Th/8) = 24 Th at t = 8; with SP everything is / t.
  const LayerCost t8 = transformer_block_cost(m, shape(1, 2048, 8));
  EXPECT_EQ(t8.elementwise_forward, Bytes{2 * (11 * T * h + 2 * 4 * T * h / 8)});
  const LayerCost sp8 = transformer_block_cost(m, shape(1, 2048, 8, true));
  EXPECT_EQ(sp8.elementwise_forward, Bytes{38 * T * h / 8});
  // Full recompute repeats the attention core's forward bytes; flash attention keeps the scores
  // on chip (no score passes) and runs as one fused kernel.
  const LayerCost full = transformer_block_cost(m, shape(1, 2048, 1, false, Recompute::kFull));
  EXPECT_EQ(full.attention_recompute_traffic, full.attention_forward_traffic);
  CostParams flash = shape(1, 2048);
  flash.flash_attention = true;
  const LayerCost f = transformer_block_cost(m, flash);
  EXPECT_TRUE(f.attention_fused);
  EXPECT_EQ(f.attention_forward_traffic, Bytes{qkvo});
  EXPECT_DOUBLE_EQ(f.attention_recompute.value(), 2.0 * T * T * h * 17 / 32);  // causal: 17/32 of the tiles
}

TEST(BlockTraffic, LlamaWithoutDropoutAndAGatedMlp) {
  // No dropout: no masks; SwiGLU reads two f-wide inputs and writes one (3 w forward, 5 w
  // backward). Forward elements 2 x 2 Th + 2 x 3 Th + 3 T f; backward 2 x 3 Th + 2 x 3 Th + 5 T f.
  const Model m = load_model("llama2-7b");
  const std::int64_t T = 4096, h = m.transformer.hidden, f = m.transformer.ffn_hidden;
  const LayerCost c = transformer_block_cost(m, shape(1, 4096));
  EXPECT_EQ(c.elementwise_forward, Bytes{2 * (10 * T * h + 3 * T * f)});
  EXPECT_EQ(c.elementwise_backward, Bytes{2 * (12 * T * h + 5 * T * f)});
}

TEST(GemmTraffic, BlocksHeadAndEmbeddingCountOnlyTheirOwnBytes) {
  // GPT-3 175B, b = 1, s = 2048 (T = s), t = 1, bf16. Every GEMM reads its operands and writes
  // its result once, 2 (mk + kn + mn) bytes; the block's four give 2 (16 T h + 12 h^2) forward
  // (block_cost_test has the derivation) and twice that backward, whatever the score tensors
  // (those are the attention core's bytes).
  const Model m = load_model("gpt-175b");
  const std::int64_t T = 2048, h = 12288, V = 51200;
  const LayerCost c = transformer_block_cost(m, shape(1, 2048));
  EXPECT_EQ(c.gemm_forward_traffic, Bytes{2 * (16 * T * h + 12 * h * h)});
  EXPECT_EQ(c.gemm_backward_traffic, c.gemm_forward_traffic * 2);
  EXPECT_EQ(c.gemm_recompute_traffic, Bytes{0});
  const LayerCost full = transformer_block_cost(m, shape(1, 2048, 1, false, Recompute::kFull));
  EXPECT_EQ(full.gemm_recompute_traffic, full.gemm_forward_traffic);
  // The lm head (T, V, h): the input and the (tied) table read, 2 (T h + h V), and the fp32
  // logits written, 4 T V; backward dX (T, h, V) reads the logit gradient and the table and
  // writes dX, 2 (T V + V h + T h), and dW (h, V, T) reads the input and the logit gradient and
  // writes dW, 2 (h T + T V + h V). The cross-entropy's passes over the logits are its
  // elementwise op's.
  const LayerCost head = head_cost(m, shape(1, 2048));
  EXPECT_EQ(head.gemm_forward_traffic, Bytes{2 * (T * h + h * V) + 4 * T * V});
  EXPECT_EQ(head.gemm_backward_traffic, Bytes{4 * (T * V + V * h + T * h)});
  // The embedding, two tables (tokens, learned positions) and dropout: forward a row of each
  // read per token, their sum written and the 1-byte mask, 2 x 2 T h + 2 T h + T h; backward
  // the gradient and the mask read, a row per token accumulated into each table's gradient,
  // 2 T h + T h + 2 x 2 x 2 T h.
  const LayerCost emb = embedding_cost(m, shape(1, 2048));
  EXPECT_EQ(emb.gemm_forward_traffic, Bytes{7 * T * h});
  EXPECT_EQ(emb.gemm_backward_traffic, Bytes{11 * T * h});
  // Llama 2 (rotary, no dropout): the token table alone, 2 T h + 2 T h and 2 T h + 2 x 2 T h.
  const Model llama = load_model("llama2-7b");
  const std::int64_t lh = llama.transformer.hidden;
  const LayerCost lemb = embedding_cost(llama, shape(1, 2048));
  EXPECT_EQ(lemb.gemm_forward_traffic, Bytes{4 * T * lh});
  EXPECT_EQ(lemb.gemm_backward_traffic, Bytes{6 * T * lh});
}

TEST(BlockActivations, Fp8KeepsGemmInputsInOneByte) {
  // The saved GEMM inputs are QKV (2sbh), output projection (2sbh), fc1 (2sbh) and fc2 (8sbh):
  // halved, 34 - 7 = 27.
  const Model m = load_model("gpt-175b");
  CostParams p = shape(1, 2048);
  p.precision = Precision::kFp8;
  EXPECT_EQ(transformer_block_cost(m, p).activations_saved.value(), 2048LL * 12288 * (27 + 80));
}

TEST(BlockActivations, LlamaWithoutDropoutGatedMlp) {
  // Llama 2 7B (MHA, no dropout, SwiGLU f = 11008), b = 1, s = 4096, bf16, t = 1:
  //   attention: norm in 2, QKV in 2, Q and K 4, V 2, projection in 2 -> 12 sbh; scores: the
  //   softmax output only, 2 a s^2 b;
  //   MLP: norm in 2 sbh, fc1 in 2 sbh, gate and up outputs 4 sbf, down input 2 sbf.
  const Model m = load_model("llama2-7b");
  const std::int64_t s = 4096, h = 4096, f = 11008, a = 32;
  const std::int64_t want = 12 * s * h + 2 * a * s * s + 4 * s * h + 6 * s * f;
  EXPECT_EQ(transformer_block_cost(m, shape(1, s)).activations_saved.value(), want);
}

TEST(BlockCost, GqaAndMoe) {
  // Llama 3 70B: K and V are 8 heads x 128 = 1024 wide. QKV GEMM 2 T h (h + 2048).
  const Model l3 = load_model("llama3-70b");
  const double T = 8192, h = 8192, f = 28672;
  const double fwd = 2 * T * h * (h + 2048) + 4 * T * T * h + 2 * T * h * h + 6 * T * h * f;
  EXPECT_DOUBLE_EQ(transformer_block_cost(l3, shape(1, 8192)).forward.value(), fwd);
  // Tensor parallelism 16 > 8 KV heads: every rank keeps one KV head (128 wide).
  const LayerCost t16 = transformer_block_cost(l3, shape(1, 8192, 16));
  EXPECT_EQ(t16.parameters, 2 * 8192LL * 512 + 2 * 8192LL * 128 + 3 * 8192LL * 1792 + 2 * 8192);

  // Mixtral: router 2 T h E, then top_k = 2 experts of 6 h f_e per token.
  const Model mx = load_model("mixtral-8x7b");
  const double Tm = 4096, hm = 4096, fe = 14336;
  const double attn = 2 * Tm * hm * (hm + 2048) + 4 * Tm * Tm * hm + 2 * Tm * hm * hm;
  EXPECT_DOUBLE_EQ(transformer_block_cost(mx, shape(1, 4096)).forward.value(),
                   attn + 2 * Tm * hm * 8 + 2 * 6 * Tm * hm * fe);
  // Expert parallelism 8: one expert per GPU, and a dispatch of k T h x 2 bytes.
  CostParams ep = shape(1, 4096);
  ep.ep = 8;
  const LayerCost e8 = transformer_block_cost(mx, ep);
  EXPECT_EQ(e8.expert_parameters, 3 * 4096LL * 14336);
  EXPECT_EQ(e8.moe_all_to_all_bytes, Bytes{2 * 2 * 4096LL * 4096});
}

TEST(BlockCost, TensorParallelCollectives) {
  const Model m = load_model("gpt-175b");
  const LayerCost t1 = transformer_block_cost(m, shape(1, 2048));
  EXPECT_EQ(t1.tp_forward.count(), 0);
  EXPECT_EQ(t1.tp_collective_bytes, Bytes{0});
  // One all-reduce moves the b s h block output in bf16; two per direction (attention, MLP).
  const LayerCost t8 = transformer_block_cost(m, shape(1, 2048, 8));
  EXPECT_EQ(t8.tp_collective_bytes, Bytes{2 * 2048LL * 12288});
  EXPECT_EQ(t8.tp_forward.all_reduce, 2);
  EXPECT_EQ(t8.tp_backward.all_reduce, 2);
  // With sequence parallelism each becomes an all-gather plus a reduce-scatter.
  const LayerCost sp = transformer_block_cost(m, shape(1, 2048, 8, true));
  EXPECT_EQ(sp.tp_forward.all_reduce, 0);
  EXPECT_EQ(sp.tp_forward.all_gather, 2);
  EXPECT_EQ(sp.tp_forward.reduce_scatter, 2);
  EXPECT_EQ(sp.output_bytes, Bytes{2 * 2048LL * 12288 / 8});
  // The vocabulary-parallel embedding all-reduces once in forward; the head once in backward.
  EXPECT_EQ(embedding_cost(m, shape(1, 2048, 8)).tp_forward.all_reduce, 1);
  EXPECT_EQ(head_cost(m, shape(1, 2048, 8)).tp_backward.all_reduce, 1);
}

TEST(LayerCosts, LayerParametersAddUpToTheModel) {
  for (const auto& name : bundled_model_names()) {
    SCOPED_TRACE(name);
    const Model m = load_model(name);
    CostParams p = shape(1, 128);
    std::int64_t sum = 0;
    for (int i = 0; i < pipeline_layers(m); ++i) sum += pipeline_layer_cost(m, i, p).parameters;
    if (m.family == ModelFamily::kTransformer) {
      sum += embedding_cost(m, p).parameters + head_cost(m, p).parameters;
    }
    EXPECT_EQ(sum, parameter_count(m));
  }
}

TEST(LayerCosts, DenseModelFlopsAreSixNDPlusAttention) {
  // Llama 2 7B: per token and block, forward 2 x (4h^2 + 3hf) GEMM weights plus 4 s h for the
  // scores and context; the head 2 h V. Training without recompute: 3 x forward.
  const Model m = load_model("llama2-7b");
  const double s = 4096, h = 4096, f = 11008, V = 32000, l = 32, B = 8;
  const double per_token = l * (2 * (4 * h * h + 3 * h * f) + 4 * s * h) + 2 * h * V;
  EXPECT_LT(rel(model_flops(m, 8, 4096).value(), 3 * per_token * B * s), 1e-12);
}

TEST(LayerCosts, VisionModels) {
  // ViT-L/16 forward: 61.6 G multiply-adds per 224^2 image (as fvcore counts it), 2 FLOPs each.
  const Model vit = load_model("vit-l16");
  EXPECT_LT(rel(model_flops(vit, 1, 0).value() / 3, 2 * 61.6e9), 0.01);
  // ResNet-50: 3 x 8.18 GFLOP per image in training.
  const Model rn = load_model("resnet50");
  EXPECT_NEAR(model_flops(rn, 32, 0).value(), 32 * 3 * 2 * 4.089184256e9, 1e3);
  const LayerCost conv1 = cnn_layer_cost(rn, 0, shape(4, 0));
  EXPECT_EQ(conv1.activations_saved, Bytes{2 * 4 * 1756160LL});
  EXPECT_EQ(conv1.output_bytes, Bytes{2 * 4 * 64LL * 56 * 56});
}

}  // namespace
}  // namespace cs::wl
