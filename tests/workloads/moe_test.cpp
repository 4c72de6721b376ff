// Mixture of experts as Megatron-Core runs it (block_shape.h: the routed tokens with and without a
// capacity factor, padding and load imbalance, and the FLOPs, GEMMs and all-to-all bytes they
// size), and DeepSeek-style models (multi-head latent attention, shared experts, dense first
// blocks), each against a closed form written out here.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "hardware/catalog.h"
#include "workloads/block_cost.h"
#include "workloads/block_shape.h"
#include "workloads/flop_conventions.h"
#include "workloads/hf_config.h"
#include "workloads/layer_cost.h"
#include "workloads/memory.h"
#include "workloads/model.h"
#include "workloads/plan_check.h"

namespace cs::wl {
namespace {

// The small mixture the ExpertTokens tests check by hand (`using namespace tiny` in each).
namespace tiny {

// b = 2 samples of s = 32 tokens: T = 64 tokens on a GPU at t = c = 1; h = 64.
constexpr std::int64_t b = 2, s = 32, h = 64, T = b * s;

// A GPT block (4 heads, LayerNorm, biases, GELU) whose MLP is E = 4 experts of width f_e = 32,
// top_k = 2.
TransformerConfig moe() {
  TransformerConfig c{.layers = 1,
                      .hidden = h,
                      .heads = 4,
                      .kv_heads = 4,
                      .ffn_hidden = 4 * h,
                      .vocab = 1000,
                      .max_sequence = 1024};
  c.experts = 4;
  c.top_k = 2;
  c.expert_ffn_hidden = 32;
  return c;
}

CostParams params(int ep, int t = 1, bool sp = false) {
  return {.micro_batch = b, .sequence = s, .tp = t, .ep = ep, .sequence_parallel = sp};
}

CostParams capped(int ep, double factor, bool pad = false, double imbalance = 1) {
  CostParams p = params(ep);
  p.moe_capacity_factor = factor;
  p.moe_pad_to_capacity = pad;
  p.moe_load_imbalance = imbalance;
  return p;
}

}  // namespace tiny

TEST(ExpertTokens, DroplessBalancedRoutingSendsEveryTokenCopy) {
  using namespace tiny;
  // ep = 2, t = 1: the router sees T_r = T = 64 tokens and sends u = k T_r / E = 32 to each
  // expert; each of the n_l = 2 local experts processes r ep u = 64, N_e = 128 = k T: every
  // routed copy. The dispatch buffer A = ep n_l u = 128 = k T_r tokens, (ep - 1)/ep of them (64)
  // leaving the GPU.
  const ExpertTokens x = expert_tokens(moe(), params(2));
  EXPECT_EQ(x.local, 2);
  EXPECT_DOUBLE_EQ(x.routed, 32);
  EXPECT_DOUBLE_EQ(x.capacity, 0);
  EXPECT_DOUBLE_EQ(x.other, 64);
  EXPECT_DOUBLE_EQ(x.busiest, 64);
  EXPECT_DOUBLE_EQ(x.processed(), 2.0 * T);
  EXPECT_DOUBLE_EQ(x.dispatched, 2.0 * T);
  EXPECT_DOUBLE_EQ(x.dropped, 0);
  // t = 2 with SP: T_r = 32, u = 16, and an expert's tokens come from r ep = 4 GPUs (all-to-all
  // over EP, all-gather over TP): m = 64, N_e = k T = 128 still; A = k T_r = 64.
  const ExpertTokens sp = expert_tokens(moe(), params(2, 2, true));
  EXPECT_DOUBLE_EQ(sp.routed, 16);
  EXPECT_DOUBLE_EQ(sp.busiest, 64);
  EXPECT_DOUBLE_EQ(sp.processed(), 2.0 * T);
  EXPECT_DOUBLE_EQ(sp.dispatched, 2.0 * T / 2);
  // A dense block routes nothing.
  TransformerConfig dense = moe();
  dense.experts = 0;
  EXPECT_DOUBLE_EQ(expert_tokens(dense, params(1)).processed(), 0);
}

TEST(ExpertTokens, CapacityDropsAndPaddingFills) {
  using namespace tiny;
  // ep = 2, u = 32 tokens per GPU and expert. Capacity C = ceil(f k T_r / E) = ceil(32 f)
  // (Megatron-Core's get_capacity).
  //   f = 0.5: C = 16: each expert keeps 16 of every GPU's 32; m = r ep C = 32, N_e = 64,
  //            A = E C = 64, and k T_r - E C = 64 token copies dropped per GPU.
  const ExpertTokens half = expert_tokens(moe(), capped(2, 0.5));
  EXPECT_DOUBLE_EQ(half.capacity, 16);
  EXPECT_DOUBLE_EQ(half.other, 32);
  EXPECT_DOUBLE_EQ(half.processed(), 64);
  EXPECT_DOUBLE_EQ(half.dispatched, 64);
  EXPECT_DOUBLE_EQ(half.dropped, 64);
  //   f = 0.3: C = ceil(9.6) = 10.
  EXPECT_DOUBLE_EQ(expert_tokens(moe(), capped(2, 0.3)).capacity, 10);
  //   f = 1.5: C = 48 > u: nothing dropped, as dropless.
  const ExpertTokens loose = expert_tokens(moe(), capped(2, 1.5));
  EXPECT_DOUBLE_EQ(loose.capacity, 48);
  EXPECT_DOUBLE_EQ(loose.processed(), 2.0 * T);
  EXPECT_DOUBLE_EQ(loose.dispatched, 2.0 * T);
  EXPECT_DOUBLE_EQ(loose.dropped, 0);
  //   padded to f = 1.5: every expert gets C = 48 from every GPU: m = 96, N_e = 192, A = E C =
  //   192 (Megatron-Core's num_out_tokens = capacity x num_experts).
  const ExpertTokens padded = expert_tokens(moe(), capped(2, 1.5, true));
  EXPECT_DOUBLE_EQ(padded.other, 96);
  EXPECT_DOUBLE_EQ(padded.busiest, 96);
  EXPECT_DOUBLE_EQ(padded.processed(), 192);
  EXPECT_DOUBLE_EQ(padded.dispatched, 192);
  EXPECT_DOUBLE_EQ(padded.dropped, 0);
  //   padded to f = 0.5: drops as unpadded, sends C = 16 to each expert.
  const ExpertTokens padded_half = expert_tokens(moe(), capped(2, 0.5, true));
  EXPECT_DOUBLE_EQ(padded_half.dispatched, 64);
  EXPECT_DOUBLE_EQ(padded_half.dropped, 64);
}

TEST(ExpertTokens, LoadImbalanceLoadsTheBusiestExpert) {
  using namespace tiny;
  // lambda = 2, ep = 2, dropless: the busiest expert gets 2u = 64 from each GPU, the other three
  // share the rest, u_o = (4 - 2) 32 / 3 = 64/3. The GPU holding the busiest expert: m_max =
  // r ep 64 = 128, m_o = 128/3, N_e = 128/3 + 128 = 512/3 (the balanced 128 x 4/3); its buffer
  // A = ep (u_o + 2u) = 512/3.
  const ExpertTokens x = expert_tokens(moe(), capped(2, 0, false, 2));
  EXPECT_DOUBLE_EQ(x.sent_busiest, 64);
  EXPECT_NEAR(x.sent_other, 64.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(x.busiest, 128);
  EXPECT_NEAR(x.processed(), 512.0 / 3, 1e-12);
  EXPECT_NEAR(x.dispatched, 512.0 / 3, 1e-12);
  // ep = 1: the one GPU holds every expert and processes k T whatever the imbalance.
  EXPECT_NEAR(expert_tokens(moe(), capped(1, 0, false, 2)).processed(), 2.0 * T, 1e-12);
  EXPECT_NEAR(expert_tokens(moe(), capped(1, 0, false, 4)).processed(), 2.0 * T, 1e-12);
  // A capacity of f = 1.25 (C = 40) cuts the busiest expert's 64 to 40: 24 copies dropped.
  const ExpertTokens cut = expert_tokens(moe(), capped(2, 1.25, false, 2));
  EXPECT_DOUBLE_EQ(cut.sent_busiest, 40);
  EXPECT_NEAR(cut.dropped, 24, 1e-12);
  EXPECT_NEAR(cut.processed(), 2 * (64.0 / 3 + 40), 1e-12);
}

TEST(ExpertTokens, FlopsGemmsAndAllToAllFollowTheRoutedTokens) {
  using namespace tiny;
  // For every case: MLP FLOPs = router 2 T_r h E + 4 h f_e N_e; the all-to-all buffer e h A
  // bytes; one local expert's GEMMs over m tokens. (ep = 2, t = 1, e = 2 bytes.)
  struct Case {
    CostParams p;
    double n_e, a, m;  // N_e, A, the GEMM's m
  };
  const Case cases[] = {
      {params(2), 128, 128, 64},               // dropless: k T copies
      {capped(2, 0.5), 64, 64, 32},            // capacity 16
      {capped(2, 1.5, true), 192, 192, 96},    // padded to 48
      {capped(2, 0.5, true), 64, 64, 32},      // padded to 16
  };
  const TransformerConfig c = moe();
  for (const Case& k : cases) {
    SCOPED_TRACE(k.n_e);
    const BlockShape x = block_shape(c, k.p);
    EXPECT_DOUBLE_EQ(block_flops(c, x).mlp, 2.0 * T * h * 4 + 4.0 * h * 32 * k.n_e);
    EXPECT_EQ(block_communication(c, x, k.p).moe_all_to_all, Bytes{std::llround(2 * h * k.a)});
    const std::vector<tg::GemmShape> g = block_gemm_shapes(c, x);
    ASSERT_EQ(g.size(), 4u);  // QKV, output, one expert's fc1 and fc2
    EXPECT_EQ(g[2], (tg::GemmShape{static_cast<std::int64_t>(k.m), 32, h}));
    EXPECT_EQ(g[3], (tg::GemmShape{static_cast<std::int64_t>(k.m), h, 32}));
    // The local experts' GEMM bytes: n_l = 2 of them over m tokens each (fc1: m h + h f_e +
    // m f_e, fc2: m f_e + f_e h + m h, 2 bytes each), besides projections and router.
    const std::int64_t m = static_cast<std::int64_t>(k.m);
    const std::int64_t experts = 2 * 2 * (2 * m * h + 2 * h * 32 + 2 * m * 32);
    const std::int64_t rest = 2 * ((6 * T * h + 4 * h * h) + (T * h + 4 * h + 4 * T));
    EXPECT_EQ(block_gemm_traffic(c, x).forward, Bytes{experts + rest});
  }
  // Imbalance: two shapes, an ordinary expert over m_o = 128/3 -> 43 tokens and the busiest over
  // m_max = 128.
  const BlockShape skew = block_shape(c, capped(2, 0, false, 2));
  const std::vector<tg::GemmShape> g = block_gemm_shapes(c, skew);
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[2].m, 43);
  EXPECT_EQ(g[4].m, 128);
  EXPECT_NEAR(block_flops(c, skew).mlp, 2.0 * T * h * 4 + 4.0 * h * 32 * 512 / 3, 1e-6);
  EXPECT_EQ(block_communication(c, skew, capped(2, 0, false, 2)).moe_all_to_all,
            Bytes{std::llround(2 * h * 512.0 / 3)});
}

TEST(ExpertTokens, SavedActivationsOfTheRoutedExperts) {
  using namespace tiny;
  // Without dropout, t = 1, no recompute: the block keeps attention (norm input 2 T h, QKV input
  // 2 T h, Q K V 6 T h, projection input 2 T h) + scores 2 b a s^2, then the MoE side: norm
  // input 2 T h, router input 2 T h, fp32 probabilities 4 T E, and the routed experts over N_e
  // tokens: inputs 2 N_e h, GELU inputs 2 N_e f_e, fc2 inputs 2 N_e f_e.
  TransformerConfig c = moe();
  const auto saved = [&](const CostParams& p) {
    return saved_activations(c, block_shape(c, p), Recompute::kNone, false).saved.value();
  };
  const std::int64_t fixed = 12 * T * h + 2 * b * 4 * s * s + 4 * T * h + 4 * T * 4;
  for (const auto& [p, n_e] : {std::pair{params(2), 128}, std::pair{capped(2, 0.5), 64},
                               std::pair{capped(2, 1.5, true), 192}}) {
    EXPECT_EQ(saved(p), fixed + 2 * n_e * h + 4 * n_e * 32) << n_e;
  }
}

TEST(ExpertTokens, PlanChecks) {
  using namespace tiny;
  Model m;
  m.name = "moe";
  m.transformer = moe();
  ParallelPlan plan;
  plan.dp = 2;
  plan.ep = 2;
  plan.global_batch = 2;
  plan.sequence_length = 32;
  const auto error_at = [&](const ParallelPlan& p) -> std::string {
    try {
      validate_plan(m, p, p.gpus(), "", "");
    } catch (const ConfigError& e) {
      return e.json_path();
    }
    return "";
  };
  EXPECT_EQ(error_at(plan), "");
  ParallelPlan pad = plan;
  pad.moe_pad_to_capacity = true;  // needs a capacity factor
  EXPECT_EQ(error_at(pad), "/moe_pad_to_capacity");
  pad.moe_capacity_factor = 1.0;
  EXPECT_EQ(error_at(pad), "");
  ParallelPlan policy = plan;
  policy.moe_token_drop_policy = MoeDropPolicy::kPosition;
  EXPECT_EQ(error_at(policy), "/moe_token_drop_policy");
  ParallelPlan skew = plan;
  skew.moe_load_imbalance = 0.5;
  EXPECT_EQ(error_at(skew), "/moe_load_imbalance");
  skew.moe_load_imbalance = 5;  // more than the 4 experts
  EXPECT_EQ(error_at(skew), "/moe_load_imbalance");
  skew.moe_load_imbalance = 4;
  EXPECT_EQ(error_at(skew), "");
  Model dense = m;
  dense.transformer.experts = 0;
  ParallelPlan cap;
  cap.global_batch = 1;
  cap.moe_capacity_factor = 1.0;
  try {
    validate_plan(dense, cap, 1, "", "");
    ADD_FAILURE() << "a capacity factor for a dense model";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/moe_capacity_factor");
  }
}

// ---- DeepSeek-V3 and V2-Lite ---------------------------------------------------------------

// The published hyper-parameters (DeepSeek-V3 Technical Report, arXiv:2412.19437, Sec. 4.2, and
// its config.json), written out once more here.
struct DeepSeek {
  double l, dense, h, a, rq, rkv, nope, rope, dv, f, fe, E, k, S, V;
  // Per block: the attention, 2 RMSNorms of h, and the MLP (3 h width: SwiGLU, no biases).
  double attention() const {
    const double q = rq > 0 ? h * rq + rq + rq * a * (nope + rope) : h * a * (nope + rope);
    return q + h * (rkv + rope) + rkv + rkv * a * (nope + dv) + a * dv * h;
  }
  double expert() const { return 3 * h * fe; }
  double dense_block() const { return 2 * h + attention() + 3 * h * f; }
  double moe_block(double experts) const { return 2 * h + attention() + h * E + experts * expert(); }
  double embedding() const { return V * h; }
  // Untied head V h and the final RMSNorm h.
  double total() const {
    return dense * dense_block() + (l - dense) * moe_block(E + S) + embedding() + V * h + h;
  }
  double active() const {
    return dense * dense_block() + (l - dense) * moe_block(k + S) + embedding() + V * h + h;
  }
};

constexpr DeepSeek kV3{.l = 61, .dense = 3, .h = 7168, .a = 128, .rq = 1536, .rkv = 512,
                       .nope = 128, .rope = 64, .dv = 128, .f = 18432, .fe = 2048, .E = 256,
                       .k = 8, .S = 1, .V = 129280};
constexpr DeepSeek kV2Lite{.l = 27, .dense = 1, .h = 2048, .a = 16, .rq = 0, .rkv = 512,
                           .nope = 128, .rope = 64, .dv = 128, .f = 10944, .fe = 1408, .E = 64,
                           .k = 6, .S = 2, .V = 102400};

TEST(DeepSeek, V3ParametersAre671BTotal37BActivated) {
  const Model m = load_model("deepseek-v3");
  EXPECT_EQ(static_cast<double>(parameter_count(m)), kV3.total());
  EXPECT_EQ(static_cast<double>(active_parameter_count(m)), kV3.active());
  EXPECT_EQ(parameter_count(m), 671'026'404'352);
  EXPECT_EQ(active_parameter_count(m), 37'552'282'624);
  // The paper: 671B total (within 0.5 %). 37B activated: our count holds the input table whole
  // (0.93B) though a token reads one row of it; without it 36.63B, within 0.5 % of the 36.7B of
  // the repository's README_WEIGHTS.md and 1 % of the paper's rounded 37B.
  EXPECT_NEAR(kV3.total() / 671e9, 1, 0.005);
  const double activated = kV3.active() - kV3.embedding();
  EXPECT_NEAR(activated / 36.7e9, 1, 0.005);
  EXPECT_NEAR(activated / 37e9, 1, 0.015);
  EXPECT_EQ(m.transformer.moe_layers(), 58);
}

TEST(DeepSeek, V2LiteParametersAre15Point7BTotal) {
  const Model m = load_model("deepseek-v2-lite");
  EXPECT_EQ(static_cast<double>(parameter_count(m)), kV2Lite.total());
  EXPECT_EQ(static_cast<double>(active_parameter_count(m)), kV2Lite.active());
  EXPECT_NEAR(kV2Lite.total() / 15.7e9, 1, 0.005);
  // 2.45B activated without the input table; the paper says 2.4B.
  EXPECT_NEAR((kV2Lite.active() - kV2Lite.embedding()) / 2.4e9, 1, 0.025);
}

TEST(DeepSeek, MlaFlopsPerToken) {
  // Forward FLOPs of a DeepSeek-V3 block per token at t = 1 (b = 1, s = 4096): the projections
  // 2 (h r_q + r_q a d_qk + h (r_kv + rope) + r_kv a (nope + d_v) + a d_v h), twice the
  // attention's parameters less its two latent norms, and the core 2 s a (d_qk + d_v): scores
  // over a d_qk = 128 x 192, the context over a d_v = 128 x 128.
  const Model m = load_model("deepseek-v3");
  const double S = 4096, h = kV3.h, a = kV3.a, dqk = kV3.nope + kV3.rope;
  const CostParams p{.micro_batch = 1, .sequence = 4096};
  const BlockShape x = block_shape(block_config(m.transformer, 60), p);
  const BlockFlops f = block_flops(block_config(m.transformer, 60), x);
  const double projections = 2 * (h * kV3.rq + kV3.rq * a * dqk + h * (kV3.rkv + kV3.rope) +
                                  kV3.rkv * a * (kV3.nope + kV3.dv) + a * kV3.dv * h);
  EXPECT_DOUBLE_EQ(f.projections / S, projections);
  EXPECT_DOUBLE_EQ(projections, 2 * (kV3.attention() - kV3.rq - kV3.rkv));
  EXPECT_DOUBLE_EQ(projections, 374'210'560);
  EXPECT_DOUBLE_EQ(f.attention / S, 2 * S * a * (dqk + kV3.dv));
  // The MoE block: router 2 h E, then 8 routed and 1 shared SwiGLU experts, 6 h f_e each; the
  // first three blocks a dense 6 h f (the same FLOPs: f = 9 f_e).
  EXPECT_DOUBLE_EQ(f.mlp / S, 2 * h * kV3.E + 6 * h * kV3.fe * (kV3.k + kV3.S));
  const CostParams one{.micro_batch = 1, .sequence = 4096};
  EXPECT_DOUBLE_EQ(transformer_block_cost(m, one, 0).forward.value() / S,
                   projections + 2 * S * a * (dqk + kV3.dv) + 6 * h * kV3.f);
  // TP 2 with SP: the down-projections (replicated) project this GPU's T/2 tokens whole; the
  // up- and output projections and the core halve.
  CostParams tp = p;
  tp.tp = 2;
  tp.sequence_parallel = true;
  const BlockFlops f2 = block_flops(block_config(m.transformer, 60), block_shape(m.transformer, tp));
  const double down = 2 * (h * kV3.rq + h * (kV3.rkv + kV3.rope));
  EXPECT_DOUBLE_EQ(f2.projections / S, down / 2 + (projections - down) / 2);
  EXPECT_DOUBLE_EQ(f2.attention, f.attention / 2);
  // V2-Lite has no query compression: one projection h -> a d_qk.
  const Model lite = load_model("deepseek-v2-lite");
  const BlockFlops fl = block_flops(lite.transformer, block_shape(lite.transformer, p));
  EXPECT_DOUBLE_EQ(fl.projections / S,
                   2 * (2048.0 * 16 * 192 + 2048.0 * 576 + 512.0 * 16 * 256 + 16.0 * 128 * 2048));
}

TEST(DeepSeek, ModelFlopsInEveryConvention) {
  // model FLOPs (no recompute) = 3 x forward, summed over 3 dense and 58 MoE blocks and the head;
  // Megatron-Core's MLA branch and torchtitan's 6 N + 6 l a (d_qk + d_v) s written out.
  const Model m = load_model("deepseek-v3");
  ParallelPlan p;
  p.global_batch = 2;
  p.sequence_length = 4096;
  const double B = 2, s = 4096, h = kV3.h, a = kV3.a, dqk = kV3.nope + kV3.rope, V = kV3.V;
  const double projections = 2 * (kV3.attention() - kV3.rq - kV3.rkv);
  const double core = 2 * s * a * (dqk + kV3.dv);
  const double dense = projections + core + 6 * h * kV3.f;
  const double moe = projections + core + 2 * h * kV3.E + 6 * h * kV3.fe * (kV3.k + kV3.S);
  const double per_token = 3 * (3 * dense + 58 * moe + 2 * h * V);
  EXPECT_NEAR(model_flops(m, 2, 4096).value() / (B * s * per_token), 1, 1e-12);
  const auto all = iteration_flops(m, p);
  const auto of = [&](const std::string& name) {
    for (const FlopCount& c : all) {
      if (c.convention == name) return c.flops.value();
    }
    return 0.0;
  };
  // Megatron-Core (training.py, transformer_flops, multi_latent_attention branch).
  const double mla = kV3.rq * (h + a * dqk + 1) + kV3.rkv * (h + a * (kV3.nope + kV3.dv) + 1) +
                     h * kV3.rope + a * kV3.dv * h;
  const double mlp = 3 * 3 * kV3.f + 58 * 3 * kV3.fe * (kV3.k + kV3.S);
  const double mcore = 6 * B * s * (h * mlp + 61 * mla + h * V) +
                       6 * B * s * s * 61 * a * (dqk + kV3.dv) / 2;
  EXPECT_NEAR(of("megatron-core") / mcore, 1, 1e-12);
  // torchtitan: 6 (N_active - N_emb) + 6 l a (d_qk + d_v) s per token.
  const double titan = B * s * (6 * (kV3.active() - kV3.embedding()) + 6 * 61 * a * (dqk + kV3.dv) * s);
  EXPECT_NEAR(of("6n-attention") / titan, 1, 1e-12);
}

TEST(DeepSeek, HfConfigImportsTheSameModel) {
  for (const char* name : {"deepseek-v3", "deepseek-v2-lite"}) {
    SCOPED_TRACE(name);
    const Model hf =
        load_model(std::string(CS_TEST_DATA_DIR) + "/hf/" + name + "/config.json");
    const Model zoo = load_model(name);
    EXPECT_EQ(hf.name, name);
    EXPECT_EQ(parameter_count(hf), parameter_count(zoo));
    EXPECT_EQ(active_parameter_count(hf), active_parameter_count(zoo));
    EXPECT_EQ(hf.transformer.dense_layers, zoo.transformer.dense_layers);
    EXPECT_EQ(hf.transformer.shared_experts, zoo.transformer.shared_experts);
    EXPECT_EQ(hf.transformer.mla.q_lora_rank, zoo.transformer.mla.q_lora_rank);
  }
  // Only moe_layer_freq 1 is modelled.
  const ConfigDocument doc = ConfigDocument::parse(
      R"({"model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64, "kv_lora_rank": 16,
          "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8, "n_routed_experts": 4,
          "num_experts_per_tok": 2, "moe_intermediate_size": 16, "moe_layer_freq": 2})",
      "config.json");
  try {
    model_from_hf_config(doc.root());
    ADD_FAILURE() << "imported moe_layer_freq 2";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/moe_layer_freq");
  }
}

TEST(DeepSeek, MemoryOfTheirPlanOnH800) {
  // DeepSeek-V3's published layout (arXiv:2412.19437, Sec. 3.2): PP 16, EP 64, ZeRO-1 DP (DP 128
  // on 2,048 H800s), no TP; sequence 4096, micro-batch 1, 16 micro-batches (a reduced batch of
  // 2048 sequences), full recomputation, the 61 blocks split 4 + 14 x 4 + 1.
  const Model m = load_model("deepseek-v3");
  ParallelPlan plan;
  plan.dp = 128;
  plan.pp = 16;
  plan.ep = 64;
  plan.zero = ZeroStage::kOptimizer;
  plan.micro_batch = 1;
  plan.global_batch = 2048;
  plan.sequence_length = 4096;
  plan.recompute = Recompute::kFull;
  plan.flash_attention = true;
  plan.layers_per_stage = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1};
  const hw::GpuSpec& h800 = hw::Catalog::builtin().gpu("H800-SXM", "", "");
  const std::vector<MemoryEstimate> stages = estimate_memory(m, plan, h800);
  // A middle stage holds 4 MoE blocks: dense part (norms, attention, router, shared expert)
  // D = 4 (2h + attention + h E + 3 h f_e), and n_l = 256/64 = 4 routed experts per block,
  // X = 4 x 4 x 3 h f_e. ZeRO-1 over N_d = 128 for the dense part and dp/ep = 2 for the experts:
  // weights 2 (D + X), gradients 2 (D + X), optimizer 12 D/128 + 12 X/2.
  const MemoryEstimate& mid = stages.at(5);
  const double D = 4 * (2 * kV3.h + kV3.attention() + kV3.h * kV3.E + kV3.expert());
  const double X = 4 * 4 * kV3.expert();
  EXPECT_EQ(static_cast<double>(mid.parameters), D + X);
  EXPECT_EQ(static_cast<double>(mid.weights.value()), 2 * (D + X));
  EXPECT_EQ(static_cast<double>(mid.gradients.value()), 2 * (D + X));
  EXPECT_NEAR(static_cast<double>(mid.optimizer_state.value()), 12 * D / 128 + 12 * X / 2, 2);
  // About 10.9 GB of model states on a middle stage; with the activations of 16 - 5 = 11
  // micro-batches in flight (each block's input only, 2 T h) and one block rebuilt, the run fits
  // in 80 GB on every stage.
  EXPECT_NEAR(static_cast<double>((mid.weights + mid.gradients + mid.optimizer_state).value()) / 1e9,
              10.9, 0.1);
  for (const MemoryEstimate& e : stages) {
    SCOPED_TRACE(e.stage);
    EXPECT_TRUE(e.fits) << static_cast<double>(e.total.value()) / 1e9 << " GB";
  }
}

}  // namespace
}  // namespace cs::wl
