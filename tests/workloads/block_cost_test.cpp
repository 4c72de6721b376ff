// The pieces of a transformer block's cost (block_cost.h), each against its closed form on a
// small block that can be checked by hand: a GPT block of width h = 64 with a = 4 heads (MHA,
// f = 4h, biases, LayerNorm, dropout), b = 2 samples of s = 32 tokens, so T = b s = 64 and
// s b h = 4096 at t = c = 1.
#include "workloads/block_cost.h"

#include <gtest/gtest.h>

#include "workloads/block_shape.h"
#include "workloads/layer_cost.h"

namespace cs::wl {
namespace {

constexpr std::int64_t b = 2, s = 32, h = 64, T = b * s, sbh = s * b * h;
constexpr int a = 4;

TransformerConfig gpt() {
  return {.layers = 1,
          .hidden = h,
          .heads = a,
          .kv_heads = a,
          .ffn_hidden = 4 * h,
          .vocab = 1000,
          .max_sequence = 1024,
          .dropout = true};
}

// Llama-like: 8 heads of d = 8, 2 key/value heads (K and V 16 wide), SwiGLU f = 96, no biases,
// RMSNorm, rotary positions, no dropout.
TransformerConfig llama() {
  return {.layers = 1,
          .hidden = h,
          .heads = 8,
          .kv_heads = 2,
          .ffn_hidden = 96,
          .vocab = 1000,
          .max_sequence = 1024,
          .gated_mlp = true,
          .bias = false,
          .dropout = false,
          .norm = NormKind::kRmsNorm,
          .position = PositionEmbedding::kRotary};
}

// The GPT block with its MLP replaced by E = 4 experts of width f_e = 32, top_k = 2.
TransformerConfig moe() {
  TransformerConfig c = gpt();
  c.experts = 4;
  c.top_k = 2;
  c.expert_ffn_hidden = 32;
  return c;
}

CostParams params(int t = 1, bool sp = false, int cp = 1, int ep = 1) {
  return {.micro_batch = b, .sequence = s, .tp = t, .cp = cp, .ep = ep, .sequence_parallel = sp};
}

TEST(BlockShape, WidthsOnOneGpu) {
  // Llama-like, t = 4 with SP, c = 2, fp8, V = 1001: s_l = 16, T = 32; heads 8/4 = 2 of d = 8,
  // q_t = 16; 2 key/value heads over 4 GPUs: one (replicated) each, kv_t = 8; f_t = 96/4 = 24;
  // V/t = 250.25 -> 251 rows; r = 4, rep = T h / r = 32 x 64 / 4 = 512; GEMM inputs 1 byte.
  TransformerConfig c = llama();
  c.vocab = 1001;
  CostParams p = params(4, true, 2);
  p.precision = Precision::kFp8;
  const BlockShape x = block_shape(c, p);
  EXPECT_EQ(x.sl, 16);
  EXPECT_EQ(x.tokens, 32);
  EXPECT_EQ(x.r, 4);
  EXPECT_EQ(x.heads_t, 2);
  EXPECT_EQ(x.q_t, 16);
  EXPECT_EQ(x.kv_t, 8);
  EXPECT_EQ(x.f_t, 24);
  EXPECT_EQ(x.fe_t, 0);
  EXPECT_EQ(x.vocab_t, 251);
  EXPECT_EQ(x.e, 2);
  EXPECT_EQ(x.g, 1);
  EXPECT_EQ(x.rep(), 512);
}

TEST(BlockFlops, GptIs24bsh2Plus4bs2h) {
  // QKV 2 T h 3h + output 2 T h^2 = 8 b s h^2; scores and context 4 b s^2 h; MLP 2 x 2 T h 4h =
  // 16 b s h^2. In all 24 b s h^2 + 4 b s^2 h = 6,291,456 + 524,288 (Narayanan et al., Sec. 5.1).
  const BlockFlops f = block_flops(gpt(), block_shape(gpt(), params()));
  EXPECT_DOUBLE_EQ(f.projections, 8.0 * b * s * h * h);
  EXPECT_DOUBLE_EQ(f.attention, 4.0 * b * s * s * h);
  EXPECT_DOUBLE_EQ(f.mlp, 16.0 * b * s * h * h);
  EXPECT_DOUBLE_EQ(f.forward().value(), 24.0 * b * s * h * h + 4.0 * b * s * s * h);
  EXPECT_DOUBLE_EQ(f.forward().value(), 6815744.0);
  // t = 2 halves every GEMM; c = 2 halves the tokens, and the scores of s/2 queries still see all
  // s keys: attention 4 b (s/2) s h.
  EXPECT_DOUBLE_EQ(block_flops(gpt(), block_shape(gpt(), params(2))).forward().value(),
                   f.forward().value() / 2);
  EXPECT_DOUBLE_EQ(block_flops(gpt(), block_shape(gpt(), params(1, false, 2))).attention,
                   2.0 * b * s * s * h);
}

TEST(BlockFlops, GqaGatedAndExperts) {
  // Llama-like, t = 1: QKV 2 T h (h + 2 x 16), output 2 T h^2, SwiGLU 3 x 2 T h f = 6 T h f.
  const BlockFlops l = block_flops(llama(), block_shape(llama(), params()));
  EXPECT_DOUBLE_EQ(l.projections, 2.0 * T * h * (h + 32) + 2.0 * T * h * h);
  EXPECT_DOUBLE_EQ(l.mlp, 6.0 * T * h * 96);
  // MoE at t = 2 with SP: the router 2 (T/2) h E (replicated, on this GPU's T/2 tokens), then
  // top_k = 2 experts of 4 T h f_e/2 each.
  const BlockFlops m = block_flops(moe(), block_shape(moe(), params(2, true)));
  EXPECT_DOUBLE_EQ(m.mlp, 2.0 * (T / 2) * h * 4 + 2 * 4.0 * T * h * 16);
}

TEST(AttentionCore, FlopsPerRecomputeMode) {
  // A = 4 b s^2 h forward, 2A backward; run again: 0, A (selective), A (full); with flash
  // attention A/2 (the scores QK^T) short of full recompute.
  const TransformerConfig c = gpt();
  const BlockShape x = block_shape(c, params());
  const double A = 4.0 * b * s * s * h;
  const AttentionCoreCost none = attention_core_cost(c, x, Recompute::kNone, false);
  EXPECT_DOUBLE_EQ(none.forward.value(), A);
  EXPECT_DOUBLE_EQ(none.backward.value(), 2 * A);
  EXPECT_DOUBLE_EQ(none.recompute.value(), 0.0);
  EXPECT_DOUBLE_EQ(attention_core_cost(c, x, Recompute::kSelective, false).recompute.value(), A);
  EXPECT_DOUBLE_EQ(attention_core_cost(c, x, Recompute::kFull, false).recompute.value(), A);
  EXPECT_DOUBLE_EQ(attention_core_cost(c, x, Recompute::kNone, true).recompute.value(), A / 2);
  EXPECT_DOUBLE_EQ(attention_core_cost(c, x, Recompute::kSelective, true).recompute.value(), A / 2);
  EXPECT_DOUBLE_EQ(attention_core_cost(c, x, Recompute::kFull, true).recompute.value(), A);
}

TEST(AttentionCore, HbmBytes) {
  // Q, K, V read and the context written: qkvo = 2 B x T (h + h + h + h) = 8 T h = 32,768.
  // Score tensor S = 2 B x b a s^2 = 16,384, through HBM 6.5 times forward and 9.5 backward
  // with dropout, 4 and 7 without.
  const std::int64_t qkvo = 8 * T * h, S = 2 * b * a * s * s;
  const TransformerConfig c = gpt();
  const BlockShape x = block_shape(c, params());
  const AttentionCoreCost sel = attention_core_cost(c, x, Recompute::kSelective, false);
  EXPECT_EQ(sel.forward_traffic, Bytes{qkvo + 13 * S / 2});
  EXPECT_EQ(sel.backward_traffic, Bytes{2 * qkvo + 19 * S / 2});
  EXPECT_EQ(sel.recompute_traffic, sel.forward_traffic);
  EXPECT_FALSE(sel.fused);
  EXPECT_EQ(attention_core_cost(c, x, Recompute::kNone, false).recompute_traffic, Bytes{0});
  TransformerConfig no_dropout = c;
  no_dropout.dropout = false;
  const AttentionCoreCost nd = attention_core_cost(no_dropout, x, Recompute::kNone, false);
  EXPECT_EQ(nd.forward_traffic, Bytes{qkvo + 4 * S});
  EXPECT_EQ(nd.backward_traffic, Bytes{2 * qkvo + 7 * S});
  // Flash attention: one fused kernel, the scores stay on chip; its recompute is inside backward,
  // except under full recompute, which runs the fused forward again.
  const AttentionCoreCost flash = attention_core_cost(c, x, Recompute::kNone, true);
  EXPECT_TRUE(flash.fused);
  EXPECT_EQ(flash.forward_traffic, Bytes{qkvo});
  EXPECT_EQ(flash.backward_traffic, Bytes{2 * qkvo});
  EXPECT_EQ(flash.recompute_traffic, Bytes{0});
  EXPECT_EQ(attention_core_cost(c, x, Recompute::kFull, true).recompute_traffic, Bytes{qkvo});
}

TEST(AttentionCore, AFusedCausalKernelSkipsTheTilesAboveTheDiagonal) {
  // n = ceil(s / 128) tile rows; n (n + 1) / 2 of the n^2 tiles are computed.
  EXPECT_DOUBLE_EQ(causal_tile_fraction(1), 1.0);
  EXPECT_DOUBLE_EQ(causal_tile_fraction(128), 1.0);
  EXPECT_DOUBLE_EQ(causal_tile_fraction(129), 0.75);
  EXPECT_DOUBLE_EQ(causal_tile_fraction(256), 0.75);
  EXPECT_DOUBLE_EQ(causal_tile_fraction(4096), 33.0 / 64.0);
  // A decoder at s = 4096 with flash attention: every FLOP term of the core x 33/64; unfused, or
  // an encoder (BERT's mlm head attends both ways), the whole s x s scores.
  const TransformerConfig c = gpt();
  CostParams p = params();
  p.sequence = 4096;
  const BlockShape x = block_shape(c, p);
  const double A = 4.0 * b * 4096 * 4096 * h;
  const AttentionCoreCost flash = attention_core_cost(c, x, Recompute::kNone, true);
  EXPECT_DOUBLE_EQ(flash.forward.value(), A * 33 / 64);
  EXPECT_DOUBLE_EQ(flash.backward.value(), 2 * A * 33 / 64);
  EXPECT_DOUBLE_EQ(flash.recompute.value(), A / 2 * 33 / 64);
  EXPECT_DOUBLE_EQ(attention_core_cost(c, x, Recompute::kNone, false).forward.value(), A);
  TransformerConfig encoder = c;
  encoder.head = HeadKind::kMlm;
  EXPECT_DOUBLE_EQ(attention_core_cost(encoder, x, Recompute::kNone, true).forward.value(), A);
  // The block's forward FLOPs carry the attention core as executed.
  Model m;
  m.transformer = c;
  CostParams q = p;
  q.flash_attention = true;
  const LayerCost l = transformer_block_cost(m, q);
  EXPECT_DOUBLE_EQ(l.forward.value(), 24.0 * b * 4096 * h * h + A * 33 / 64);
}

TEST(ElementwiseTraffic, Fp8CastsBesideTheGemms) {
  // bf16: none. fp8, Llama-like at t = 4 with SP, c = 2 (T = 32, q_t = 16, kv_t = 8): forward
  // 4 T q_t = 2048 bytes; backward 4 T (2h + q_t + 2 kv_t) = 4 x 32 x 160 = 20480.
  EXPECT_EQ(fp8_cast_traffic(block_shape(llama(), params(4, true, 2))).forward, Bytes{0});
  CostParams p = params(4, true, 2);
  p.precision = Precision::kFp8;
  const ElementwiseTraffic t = fp8_cast_traffic(block_shape(llama(), p));
  EXPECT_EQ(t.forward, Bytes{2048});
  EXPECT_EQ(t.backward, Bytes{20480});
}

TEST(ElementwiseTraffic, NormsResidualsAndActivation) {
  // GPT, t = 1, in 2-byte elements: forward norms 2 x 2 Th + residual adds 2 x 3.5 Th + bias-GELU
  // 2 x 4Th = 19 Th (38 Th bytes); backward 2 x 3 Th + 2 x 3.5 Th + 3 x 4Th = 25 Th (50 Th bytes).
  const TransformerConfig c = gpt();
  const ElementwiseTraffic t1 = elementwise_traffic(c, block_shape(c, params()));
  EXPECT_EQ(t1.forward, Bytes{38 * T * h});
  EXPECT_EQ(t1.backward, Bytes{50 * T * h});
  // t = 2 without SP: the Th-wide terms stay whole, the MLP's 4Th halves: forward 11 Th + 2 x 2Th
  // = 15 Th (30 Th bytes), backward 13 Th + 3 x 2Th = 19 Th (38 Th bytes). With SP all halve.
  const ElementwiseTraffic t2 = elementwise_traffic(c, block_shape(c, params(2)));
  EXPECT_EQ(t2.forward, Bytes{30 * T * h});
  EXPECT_EQ(t2.backward, Bytes{38 * T * h});
  const ElementwiseTraffic sp = elementwise_traffic(c, block_shape(c, params(2, true)));
  EXPECT_EQ(sp.forward, Bytes{19 * T * h});
  EXPECT_EQ(sp.backward, Bytes{25 * T * h});
  // Llama-like: no masks (3 Th per residual add), SwiGLU reads two f-wide inputs and writes one
  // (3 T f forward, 5 T f backward): forward 2 (10 Th + 3 T f), backward 2 (12 Th + 5 T f).
  const ElementwiseTraffic l = elementwise_traffic(llama(), block_shape(llama(), params()));
  EXPECT_EQ(l.forward, Bytes{2 * (10 * T * h + 3 * T * 96)});
  EXPECT_EQ(l.backward, Bytes{2 * (12 * T * h + 5 * T * 96)});
}

TEST(BlockGemmShapes, ProjectionsAndMlp) {
  // (m, n, k): QKV (T, 3h, h), output (T, h, h), fc1 (T, 4h, h), fc2 (T, h, 4h).
  const std::vector<tg::GemmShape> g = block_gemm_shapes(gpt(), block_shape(gpt(), params()));
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0], (tg::GemmShape{T, 3 * h, h}));
  EXPECT_EQ(g[1], (tg::GemmShape{T, h, h}));
  EXPECT_EQ(g[2], (tg::GemmShape{T, 4 * h, h}));
  EXPECT_EQ(g[3], (tg::GemmShape{T, h, 4 * h}));
  // Llama-like: QKV h + 2 x 16 wide; gate and up in one (T, 2f, h).
  const std::vector<tg::GemmShape> l =
      block_gemm_shapes(llama(), block_shape(llama(), params()));
  EXPECT_EQ(l[0], (tg::GemmShape{T, h + 32, h}));
  EXPECT_EQ(l[2], (tg::GemmShape{T, 2 * 96, h}));
  // MoE over ep = 2: a local expert sees k T ep / E = 2 x 64 x 2 / 4 = 64 tokens on average.
  const std::vector<tg::GemmShape> m = block_gemm_shapes(moe(), block_shape(moe(), params(1, false, 1, 2)));
  EXPECT_EQ(m[2], (tg::GemmShape{64, 32, h}));
  EXPECT_EQ(m[3], (tg::GemmShape{64, h, 32}));
  // ... and at least one: one token, E = 4, k = 2, ep = 1 gives 2/4 -> 1.
  CostParams one = params();
  one.micro_batch = 1;
  one.sequence = 1;
  EXPECT_EQ(block_gemm_shapes(moe(), block_shape(moe(), one))[2].m, 1);
}

TEST(BlockGemmTraffic, OperandsReadAndResultWrittenOnce) {
  // Each GEMM (m, n, k) reads A (m x k) and B (k x n) and writes C (m x n): in bf16
  // 2 (mk + kn + mn) bytes. GPT at t = 1, in elements: QKV T h + 3 h^2 + 3 T h, output
  // T h + h^2 + T h, fc1 T h + 4 h^2 + 4 T h, fc2 4 T h + 4 h^2 + T h: 16 T h + 12 h^2, so
  // 2 (16 T h + 12 h^2) bytes forward. Backward, per GEMM dX (m, k, n) and dW (k, n, m):
  // 2 (mn + nk + mk) + 2 (km + mn + kn) = twice the forward's.
  const TransformerConfig c = gpt();
  const GemmTraffic t1 = block_gemm_traffic(c, block_shape(c, params()));
  EXPECT_EQ(t1.forward, Bytes{2 * (16 * T * h + 12 * h * h)});
  EXPECT_EQ(t1.backward, t1.forward * 2);
  // t = 4: the weights and the n- or k-wide sides split, the h-wide inputs and outputs of the
  // column- and row-parallel GEMMs stay whole: 4 T h + 12 T h/4 + 12 h^2/4 elements.
  const GemmTraffic t4 = block_gemm_traffic(c, block_shape(c, params(4)));
  EXPECT_EQ(t4.forward, Bytes{2 * (4 * T * h + 3 * T * h + 3 * h * h)});
  // fp8: 1-byte operands, 2-byte results. Forward: the operands, inputs A (m x k) T h + T h +
  // T h + 4 T h and weights B (k x n) 3 + 1 + 4 + 4 h^2, read as 7 T h + 12 h^2 bytes; the
  // results (m x n) 3 + 1 + 4 + 1 = 9 T h, written as 2 x 9 T h. Backward: operands
  // 2 mn + mk + kn = 2 x 9 T h + 7 T h + 12 h^2 read, results mk + kn = 7 T h + 12 h^2 written.
  CostParams fp8 = params();
  fp8.precision = Precision::kFp8;
  const GemmTraffic f = block_gemm_traffic(c, block_shape(c, fp8));
  EXPECT_EQ(f.forward, Bytes{(7 * T * h + 12 * h * h) + 2 * 9 * T * h});
  EXPECT_EQ(f.backward, Bytes{(25 * T * h + 12 * h * h) + 2 * (7 * T * h + 12 * h * h)});
  // MoE, E = 4 experts of f_e = 32, k = 2, ep = 2: the projections (in elements: QKV T h + 3 h^2
  // + 3 T h, output T h + h^2 + T h: 6 T h + 4 h^2), 2 local experts each
  // over m_e = 64 tokens (fc1 64 h + 32 h + 64 x 32, fc2 64 x 32 + 32 h + 64 h), the router
  // (T, 4, h): T h + 4 h + 4 T. All 2 bytes.
  const GemmTraffic m = block_gemm_traffic(moe(), block_shape(moe(), params(1, false, 1, 2)));
  const std::int64_t expert = 2 * (64 * h + 32 * h + 64 * 32);
  EXPECT_EQ(m.forward, Bytes{2 * ((6 * T * h + 4 * h * h) + 2 * expert + (T * h + 4 * h + 4 * T))});
  EXPECT_EQ(m.backward, m.forward * 2);
}

TEST(BlockParameters, PerGpu) {
  // GPT: QKV 3h^2 + 3h, output h^2 + h, MLP 8h^2 + 5h, two LayerNorms 4h: 12h^2 + 13h. Over t = 2
  // the QKV and fc1 weights and biases split (12h^2/2 + 7h/2); the row-parallel biases (2h) and
  // the norms (4h) stay whole.
  const BlockParameters t1 = block_parameters_per_gpu(gpt(), block_shape(gpt(), params()));
  EXPECT_EQ(t1.total, 12 * h * h + 13 * h);
  EXPECT_EQ(t1.experts, 0);
  EXPECT_EQ(block_parameters_per_gpu(gpt(), block_shape(gpt(), params(2))).total,
            12 * h * h / 2 + 7 * h / 2 + 6 * h);
  // Llama-like: two RMSNorms 2h, Q and output 2h^2, K and V 2 x 16h, SwiGLU 3hf.
  EXPECT_EQ(block_parameters_per_gpu(llama(), block_shape(llama(), params())).total,
            2 * h + 2 * h * h + 2 * 16 * h + 3 * h * 96);
  // MoE over ep = 2: the router h E, and E/ep = 2 experts of 2 h f_e + f_e + h each.
  const std::int64_t expert = 2 * h * 32 + 32 + h;
  const BlockParameters m = block_parameters_per_gpu(moe(), block_shape(moe(), params(1, false, 1, 2)));
  EXPECT_EQ(m.experts, 2 * expert);
  EXPECT_EQ(m.total, 4 * h + 4 * h * h + 4 * h + h * 4 + 2 * expert);
}

TEST(SavedActivations, Korthikanti) {
  // Korthikanti et al. 2022, Sec. 4, with 5 a s / h = 5 x 4 x 32 / 64 = 10:
  //   none             s b h (34 + 5as/h)           = 44 sbh
  //   TP t = 2         s b h (10 + 24/t + 5as/(ht)) = 27 sbh
  //   TP + SP          s b h (34/t + 5as/(ht))      = 22 sbh
  //   selective + SP   s b h 34/t                   = 17 sbh, the 5 sbh of scores rebuilt
  //   full             2 s b h, / t with SP; the rest of the block's rebuilt (its input is the
  //                    kept one): 44 - 2 = 42 s b h, 22 - 1 = 21 with TP + SP
  const TransformerConfig c = gpt();
  auto act = [&](int t, bool sp, Recompute r) {
    return saved_activations(c, block_shape(c, params(t, sp)), r, false);
  };
  EXPECT_EQ(act(1, false, Recompute::kNone).saved, Bytes{44 * sbh});
  EXPECT_EQ(act(1, false, Recompute::kNone).transient, Bytes{0});
  EXPECT_EQ(act(2, false, Recompute::kNone).saved, Bytes{27 * sbh});
  EXPECT_EQ(act(2, true, Recompute::kNone).saved, Bytes{22 * sbh});
  EXPECT_EQ(act(2, true, Recompute::kSelective).saved, Bytes{17 * sbh});
  EXPECT_EQ(act(2, true, Recompute::kSelective).transient, Bytes{5 * sbh});
  EXPECT_EQ(act(1, false, Recompute::kFull).saved, Bytes{2 * sbh});
  EXPECT_EQ(act(1, false, Recompute::kFull).transient, Bytes{42 * sbh});
  EXPECT_EQ(act(2, true, Recompute::kFull).saved, Bytes{sbh});
  EXPECT_EQ(act(2, true, Recompute::kFull).transient, Bytes{21 * sbh});
  EXPECT_EQ(act(2, true, Recompute::kFull).without_recompute, Bytes{22 * sbh});
}

TEST(SavedActivations, FlashAttentionAndFp8) {
  // Flash attention keeps the fp32 log-sum-exp of every score row, 4 b a s bytes, instead of the
  // 5as/h term; selective recompute then has nothing to drop.
  const TransformerConfig c = gpt();
  const BlockShape x = block_shape(c, params());
  EXPECT_EQ(saved_activations(c, x, Recompute::kNone, true).saved, Bytes{34 * sbh + 4 * b * a * s});
  EXPECT_EQ(saved_activations(c, x, Recompute::kSelective, true).saved,
            Bytes{34 * sbh + 4 * b * a * s});
  EXPECT_EQ(saved_activations(c, x, Recompute::kSelective, true).transient, Bytes{0});
  // fp8 keeps the GEMM inputs in one byte: QKV (2sbh), projection (2sbh), fc1 (2sbh) and fc2
  // (8sbh) halve, 34 - 7 = 27.
  CostParams fp8 = params();
  fp8.precision = Precision::kFp8;
  EXPECT_EQ(saved_activations(c, block_shape(c, fp8), Recompute::kNone, false).saved,
            Bytes{(27 + 10) * sbh});
}

TEST(SavedActivations, GqaGatedWithoutDropout) {
  // Llama-like, t = 1: norm input 2 sbh, QKV input 2 sbh, Q and K 2 T (h + 16), V 2 T 16,
  // projection input 2 sbh; the softmax output only, 2 b a s^2 (a = 8); MLP: norm input 2 sbh,
  // fc1 input 2 sbh, gate and up outputs 4 T f, down input 2 T f.
  const std::int64_t want = 2 * sbh + 2 * sbh + 2 * T * (h + 16) + 2 * T * 16 + 2 * sbh +
                            2 * b * 8 * s * s + 4 * sbh + 6 * T * 96;
  EXPECT_EQ(
      saved_activations(llama(), block_shape(llama(), params()), Recompute::kNone, false).saved,
      Bytes{want});
}

TEST(BlockCommunication, TensorExpertAndContextParallel) {
  // t = 1: no TP collectives. t = 2: each moves the T x h activation, 2 T h bytes; an all-reduce
  // after attention and one after the MLP, each way; with SP an all-gather and a reduce-scatter.
  const TransformerConfig c = gpt();
  const BlockCommunication t1 = block_communication(c, block_shape(c, params()), params());
  EXPECT_EQ(t1.tp.bytes, Bytes{0});
  EXPECT_EQ(t1.tp.forward.count() + t1.tp.backward.count(), 0);
  EXPECT_EQ(t1.output, Bytes{2 * T * h});
  const BlockCommunication t2 = block_communication(c, block_shape(c, params(2)), params(2));
  EXPECT_EQ(t2.tp.bytes, Bytes{2 * T * h});
  EXPECT_EQ(t2.tp.forward.all_reduce, 2);
  EXPECT_EQ(t2.tp.backward.all_reduce, 2);
  const CostParams sp = params(2, true);
  const BlockCommunication s2 = block_communication(c, block_shape(c, sp), sp);
  EXPECT_EQ(s2.tp.forward.all_reduce, 0);
  EXPECT_EQ(s2.tp.forward.all_gather, 2);
  EXPECT_EQ(s2.tp.forward.reduce_scatter, 2);
  EXPECT_EQ(s2.output, Bytes{2 * T * h / 2});
  // A layer that reduces once in backward only (the lm head): one all-reduce backward.
  const TpCommunication head = tp_communication(block_shape(c, params(2)), false, 0, 1);
  EXPECT_EQ(head.forward.count(), 0);
  EXPECT_EQ(head.backward.all_reduce, 1);
  // MoE, ep = 2 with SP at t = 2: a dispatch sends k T h / t x 2 B = 2 x 64 x 64 / 2 x 2.
  const CostParams ep = params(2, true, 1, 2);
  EXPECT_EQ(block_communication(moe(), block_shape(moe(), ep), ep).moe_all_to_all,
            Bytes{2 * 2 * T * h / 2});
  EXPECT_EQ(block_communication(moe(), block_shape(moe(), params()), params()).moe_all_to_all,
            Bytes{0});
  // Ring attention, c = 2: K and V of this GPU's T = b s/2 tokens, 2 x 2 B x (b s/2) h per step.
  const CostParams cp = params(1, false, 2);
  EXPECT_EQ(block_communication(c, block_shape(c, cp), cp).cp_kv, Bytes{2 * 2 * (T / 2) * h});
}

}  // namespace
}  // namespace cs::wl
