// The plan checks (plan_check.h): each rule fails at its key with its message, and a value that
// breaks rules once checked in two places (the graph's and the layer formulas') fails once, with
// the message the graph's check gave.
#include "workloads/plan_check.h"

#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "hardware/catalog.h"
#include "workloads/memory.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

// "<path>: <message>" of the first failing check, or "ok".
std::string check(const Model& m, const ParallelPlan& p, const std::string& plan_path = "") {
  try {
    validate_plan(m, p, p.gpus(), "exp.json", plan_path);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "exp.json");
    return e.json_path() + ": " + e.message();
  }
  return "ok";
}

ParallelPlan plan(int tp, std::int64_t sequence) {
  ParallelPlan p;
  p.tp = tp;
  p.sequence_length = static_cast<int>(sequence);
  return p;
}

TEST(PlanCheck, HeadsAndKeyValueHeadsOverTensorParallelism) {
  // Llama 3 70B: 64 heads, 8 key/value heads. t = 3 divides neither: the heads rule runs first.
  const Model m = load_model("llama3-70b");
  EXPECT_EQ(check(m, plan(3, 8192), "/plan"),
            "/plan/tp: the model's 64 attention heads are not divisible by tp = 3");
  // t = 16 > 8 key/value heads is a multiple of them (each GPU keeps one); SP changes nothing.
  ParallelPlan p = plan(16, 8192);
  p.sequence_parallel = true;
  EXPECT_EQ(check(m, p), "ok");
  // 48 heads, 12 key/value heads, t = 8: 8 divides 48 but neither divides nor is a multiple of 12.
  Model g = m;
  g.name = "gqa-48";
  g.transformer.heads = 48;
  g.transformer.kv_heads = 12;
  g.transformer.hidden = 48 * 128;
  EXPECT_EQ(check(g, plan(8, 8192)),
            "/tp: tensor parallelism 8 must divide, or be a multiple of, the 12 key/value heads of "
            "gqa-48");
}

TEST(PlanCheck, SequenceRules) {
  // GPT-3's learned position table has 2048 rows; cp must divide s.
  EXPECT_EQ(
      check(load_model("gpt-175b"), plan(1, 4096)),
      "/sequence_length: sequence length 4096 exceeds the 2048 learned positions of gpt-175b");
  ParallelPlan cp = plan(1, 8192);
  cp.cp = 3;
  EXPECT_EQ(check(load_model("llama3-70b"), cp),
            "/cp: context parallelism 3 must divide the sequence length 8192");
  EXPECT_EQ(check(load_model("llama3-70b"), plan(1, 0)), "/sequence_length: must be at least 1");
  // A ViT's sequence is its patch tokens, (224/16)^2 + 1 = 197, whatever the plan says.
  ParallelPlan vit = plan(1, 0);
  EXPECT_EQ(check(load_model("vit-l16"), vit), "ok");
  vit.cp = 2;
  EXPECT_EQ(check(load_model("vit-l16"), vit),
            "/cp: context parallelism 2 must divide the sequence length 197");
}

TEST(PlanCheck, RulesOnceCheckedTwiceFailOnceWithTheGraphsMessage) {
  const Model cnn = load_model("resnet50");
  EXPECT_EQ(check(cnn, plan(2, 0)),
            "/tp: tensor and context parallelism apply to transformers only");
  ParallelPlan ep = plan(1, 2048);
  ep.dp = 2;
  ep.ep = 2;
  ep.global_batch = 2;
  EXPECT_EQ(check(cnn, ep), "/ep: expert parallelism needs a mixture-of-experts model");
  EXPECT_EQ(check(load_model("llama2-7b"), ep),
            "/ep: expert parallelism needs a mixture-of-experts model");
  ep.dp = 3;
  ep.ep = 3;
  ep.global_batch = 3;
  EXPECT_EQ(check(load_model("mixtral-8x7b"), ep),
            "/ep: the model's 8 experts are not divisible by ep = 3");
  // Hybrid sharding keeps whole expert-parallel groups in a shard group (the experts' states
  // are sharded over its ranks holding the same experts).
  ep.dp = 8;
  ep.ep = 4;
  ep.global_batch = 8;
  ep.zero = ZeroStage::kOptimizer;
  ep.zero_shard = 2;
  EXPECT_EQ(check(load_model("mixtral-8x7b"), ep),
            "/zero_shard: the shard group of 2 ranks must hold whole expert-parallel groups (ep = 4)");
  ep.zero_shard = 4;
  EXPECT_EQ(check(load_model("mixtral-8x7b"), ep), "ok");
  ParallelPlan mb = plan(1, 2048);
  mb.micro_batch = 0;
  EXPECT_EQ(check(load_model("llama2-7b"), mb),
            "/micro_batch: expected at least 1 sample per micro-batch");
  ParallelPlan zero = plan(1, 2048);
  zero.cp = 0;
  EXPECT_EQ(check(load_model("llama2-7b"), zero), "/dp: parallel degrees must be at least 1");
}

TEST(PlanCheck, StageSplits) {
  const Model m = load_model("llama2-7b");  // 32 blocks
  ParallelPlan p;
  p.pp = 5;
  p.global_batch = 5;
  p.layers_per_stage = {4, 8, 8, 8, 5};
  EXPECT_EQ(check(m, p), "/layers_per_stage: sums to 33 layers; llama2-7b has 32");
  p.layers_per_stage = {4, 8, 8, 8, 4};
  EXPECT_EQ(check(m, p), "ok");
  p.layers_per_stage = {};
  p.pp = 33;
  p.global_batch = 33;
  EXPECT_EQ(check(m, p),
            "/pp: the model's 32 layers are not divisible by pp = 33 (give layers_per_stage for an "
            "uneven split)");
}

TEST(PlanCheck, MemoryFragmentationIsAFraction) {
  const Model m = load_model("llama2-7b");
  ParallelPlan p = plan(1, 4096);
  for (double f : {-0.1, 1.0, 2.0}) {
    p.memory_fragmentation = f;
    EXPECT_EQ(check(m, p, "/plan"),
              "/plan/memory_fragmentation: expected a fraction of reserved memory, at least 0 and below 1")
        << f;
  }
  p.memory_fragmentation = 0.3;
  EXPECT_EQ(check(m, p), "ok");
}

TEST(PlanCheck, TheMemoryEstimateChecksThePlanFirst) {
  // No file: the caller places the error in its plan's file.
  const hw::GpuSpec& a100 = hw::Catalog::builtin().gpu("A100-SXM-80GB", "", "");
  try {
    estimate_memory(load_model("llama3-70b"), plan(3, 8192), a100);
    FAIL() << "accepted tp 3";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "");
    EXPECT_EQ(e.json_path(), "/tp");
  }
}

}  // namespace
}  // namespace cs::wl
