// The iteration's FLOPs in the published conventions (workloads/flop_conventions.h), against the
// conventions' own formulas written out by hand.
#include "workloads/flop_conventions.h"

#include <gtest/gtest.h>

#include "workloads/layer_cost.h"

namespace cs::wl {
namespace {

double flops_of(const std::vector<FlopCount>& all, const std::string& name) {
  for (const FlopCount& c : all) {
    if (c.convention == name) return c.flops.value();
  }
  ADD_FAILURE() << "no convention " << name;
  return 0;
}

TEST(FlopConventions, Gpt3OfTheSc21TableInEveryConvention) {
  // GPT-3 175B shape (l 96, h 12288, a 96, f 4h, V 51200), B 1536, s 2048, full recomputation.
  const Model m = load_model("gpt-175b");
  ParallelPlan p;
  p.global_batch = 1536;
  p.sequence_length = 2048;
  p.recompute = Recompute::kFull;
  const auto all = iteration_flops(m, p);
  ASSERT_EQ(all.size(), 5u);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200, f = 4 * h;
  // Eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
  EXPECT_NEAR(flops_of(all, "megatron-eq3"), 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)), 1e6);
  // Megatron-Core: 6 B s [l (2 h f + 4 h^2) + h V] + 6 B s^2 l h (MHA: q = k = h).
  EXPECT_NEAR(flops_of(all, "megatron-core") / (6 * B * s * (l * (2 * h * f + 4 * h * h) + h * V) + 6 * B * s * s * l * h), 1, 1e-12);
  // torchtitan: per token 6 (N - N_emb) + 12 l a d s with a d = h.
  const double n = static_cast<double>(parameter_count(m) - embedding_parameters(m.transformer));
  EXPECT_NEAR(flops_of(all, "6n-attention") / (B * s * (6 * n + 12 * l * h * s)), 1, 1e-12);
  // The simulated FLOPs under full recomputation are Eq. 3's for a GPT, up to the small terms the
  // closed form leaves out (biases, norms, softmax).
  EXPECT_NEAR(flops_of(all, "training") / flops_of(all, "megatron-eq3"), 1, 0.01);
  EXPECT_EQ(flops_of(all, "model"), model_flops(m, 1536, 2048).value());
}

TEST(FlopConventions, GroupedQueryAttentionAndSwiGluInMegatronCore) {
  // Llama 3 70B shape: l 80, h 8192, 64 heads, 8 kv heads (d 128), f 28672 gated, V 128256.
  const Model m = load_model("llama3-70b");
  ParallelPlan p;
  p.global_batch = 16;
  p.sequence_length = 8192;
  const double B = 16, s = 8192, l = 80, h = 8192, k = 8 * 128, f = 28672, V = 128256;
  const double expected = 6 * B * s * (l * (3 * h * f + h * (h + 2 * k) + h * h) + h * V) + 6 * B * s * s * l * h;
  EXPECT_NEAR(flops_of(iteration_flops(m, p), "megatron-core") / expected, 1, 1e-12);
}

TEST(FlopConventions, OnlyTrainingAndModelForCnns) {
  const Model m = load_model("resnet50");
  ParallelPlan p;
  p.global_batch = 256;
  const auto all = iteration_flops(m, p);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].convention, "training");
  EXPECT_EQ(all[1].convention, "model");
}

}  // namespace
}  // namespace cs::wl
