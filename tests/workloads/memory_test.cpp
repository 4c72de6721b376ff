// The per-stage memory estimate: the ZeRO accounting (16 bytes per parameter before sharding),
// activations in flight per pipeline schedule, and the out-of-memory error.
#include <array>
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "hardware/catalog.h"
#include "workloads/memory.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

const hw::GpuSpec& a100() { return hw::Catalog::builtin().gpu("A100-SXM-80GB", "", ""); }

ParallelPlan gpt3_plan() {
  // Megatron's GPT-3 175B layout: TP 8 inside a DGX, PP 16, DP 8 (1024 GPUs), micro-batch 1,
  // global batch 1536, full recompute, distributed optimizer (ZeRO-1).
  ParallelPlan p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 8;
  p.micro_batch = 1;
  p.global_batch = 1536;
  p.sequence_length = 2048;
  p.recompute = Recompute::kFull;
  p.zero = ZeroStage::kOptimizer;
  return p;
}

TEST(Memory, Gpt3On1024A100sFits) {
  const Model m = load_model("gpt-175b");
  const auto stages = estimate_memory(m, gpt3_plan(), a100());
  ASSERT_EQ(stages.size(), 16u);
  const MemoryEstimate& s0 = stages[0];
  // Stage 0: 6 blocks of 12h^2/8 + 7h/8 + 6h = 226,576,896 parameters per GPU (h = 12288), plus
  // the token table's 6400 rows and 2048 positions: 103,809,024.
  EXPECT_EQ(s0.layers, 6);
  EXPECT_EQ(s0.parameters, 6 * 226576896LL + 103809024LL);
  EXPECT_EQ(s0.weights, Bytes{2 * s0.parameters});
  EXPECT_EQ(s0.gradients, Bytes{2 * s0.parameters});
  EXPECT_EQ(s0.optimizer_state, Bytes{12 * s0.parameters / 8});  // ZeRO-1 over DP 8
  // 1F1B: stage 0 holds p = 16 micro-batches, each 6 block inputs of 2sbh plus the embedding's
  // dropout mask sbh; plus one block rebuilt in backward: sbh (10 + 24/8 + 5as/(8h)) = 23 sbh.
  const std::int64_t sbh = 2048LL * 12288;
  EXPECT_DOUBLE_EQ(s0.micro_batches_in_flight, 16.0);
  EXPECT_EQ(s0.activations, Bytes{16 * (6 * 2 * sbh + sbh) + 23 * sbh});
  EXPECT_EQ(s0.workspace, kWorkspace);
  EXPECT_TRUE(s0.fits);
  EXPECT_EQ(s0.worst_stage, 0);
  const MemoryEstimate peak = peak_memory(stages);
  EXPECT_TRUE(peak.fits);
  EXPECT_LT(peak.total, gibibytes(20));  // about 14 GiB: far from the 74.5 GiB of an 80 GB A100
  EXPECT_NO_THROW(check_fits(peak, "GPU 0", false));
  // The last stage holds one micro-batch, the head's fp32 logits, and (tied embeddings) its
  // own copy of the token table.
  EXPECT_DOUBLE_EQ(stages[15].micro_batches_in_flight, 1.0);
  EXPECT_EQ(stages[15].parameters, 6 * 226576896LL + 2 * 12288 + 6400LL * 12288);
}

TEST(Memory, Llama3_70BOnOneGpuDoesNotFit) {
  const Model m = load_model("llama3-70b");
  ParallelPlan p;
  p.sequence_length = 8192;
  const auto stages = estimate_memory(m, p, a100());
  ASSERT_EQ(stages.size(), 1u);
  const MemoryEstimate& e = stages[0];
  // 16 bytes per parameter unsharded: 70.55e9 x 16 = 1.13 TB.
  EXPECT_EQ(e.weights, Bytes{2 * parameter_count(m)});
  EXPECT_EQ(e.optimizer_state, Bytes{12 * parameter_count(m)});
  EXPECT_FALSE(e.fits);
  try {
    check_fits(e, "GPU 0 (A100-SXM-80GB)", false);
    FAIL() << "no error";
  } catch (const InputError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("GPU 0 (A100-SXM-80GB) (stage 0) needs "), std::string::npos) << what;
    for (const char* part :
         {"weights 131.4 GiB", "gradients 131.4 GiB", "optimizer state 788.5 GiB", "activations ",
          "workspace 1.0 GiB", "but has 74.5 GiB", "use --allow-oom"}) {
      EXPECT_NE(what.find(part), std::string::npos) << part << " in " << what;
    }
  }
  EXPECT_NO_THROW(check_fits(e, "GPU 0", true));
}

TEST(Memory, ZeroStagesShardOverDataParallel) {
  // Psi parameters, N = 64 data-parallel ranks (ZeRO paper, Fig. 1): baseline 16 Psi;
  // ZeRO-1 (2 + 2 + 12/N) Psi; ZeRO-2 (2 + 14/N) Psi; ZeRO-3 16 Psi / N.
  const Model m = load_model("llama2-7b");
  const std::int64_t psi = parameter_count(m);
  ParallelPlan p;
  p.dp = 64;
  p.global_batch = 64;
  p.sequence_length = 4096;
  auto states = [&](ZeroStage z) {
    p.zero = z;
    const MemoryEstimate e = estimate_memory(m, p, a100())[0];
    return std::array<std::int64_t, 3>{e.weights.value(), e.gradients.value(),
                                       e.optimizer_state.value()};
  };
  const auto ceil64 = [](std::int64_t x) { return (x + 63) / 64; };
  EXPECT_EQ(states(ZeroStage::kNone), (std::array<std::int64_t, 3>{2 * psi, 2 * psi, 12 * psi}));
  EXPECT_EQ(states(ZeroStage::kOptimizer),
            (std::array<std::int64_t, 3>{2 * psi, 2 * psi, ceil64(12 * psi)}));
  EXPECT_EQ(states(ZeroStage::kGradients),
            (std::array<std::int64_t, 3>{2 * psi, ceil64(2 * psi), ceil64(12 * psi)}));
  EXPECT_EQ(states(ZeroStage::kParameters),
            (std::array<std::int64_t, 3>{ceil64(2 * psi), ceil64(2 * psi), ceil64(12 * psi)}));
  // ZeRO-3 also gathers two blocks' weights at a time.
  p.zero = ZeroStage::kParameters;
  EXPECT_GT(estimate_memory(m, p, a100())[0].workspace, kWorkspace);
}

TEST(Memory, MicroBatchesInFlight) {
  ParallelPlan p;
  p.pp = 4;
  p.global_batch = 16;  // m = 16 micro-batches
  p.schedule = PipelineSchedule::kOneFOneB;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 4.0);  // p - i
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 3), 1.0);
  p.schedule = PipelineSchedule::kGpipe;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 3), 16.0);  // all m
  // Interleaved, v = 2: stage 0 holds 2(p-1) + (v-1)p + 1 = 11 chunks of half a stage:
  // 5.5 = p (1 + (p-1)/(p v)) (Korthikanti et al. 2022).
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 4.0 * (1.0 + 3.0 / 8.0));
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 3), 2.5);  // (v - 1) p + 1 = 5 chunks
  // Fewer micro-batches than stages: only m exist.
  p.schedule = PipelineSchedule::kOneFOneB;
  p.global_batch = 2;
  EXPECT_DOUBLE_EQ(micro_batches_in_flight(p, 0), 2.0);
}

TEST(Memory, StageLayers) {
  const Model m = load_model("llama2-7b");  // 32 blocks
  ParallelPlan p;
  p.pp = 5;
  EXPECT_EQ(stage_layers(m, p), (std::vector<int>{6, 7, 7, 6, 6}));  // remainder 2 to stages 1, 2
  p.layers_per_stage = {4, 8, 8, 8, 4};
  EXPECT_EQ(stage_layers(m, p), p.layers_per_stage);
  // Splits that do not add up are rejected by validate_plan (plan_check_test.cpp).
}

TEST(Memory, CnnStagesFollowTheLayerList) {
  // ResNet-50 in two stages of 9 entries: parameters split exactly, the whole model is there.
  const Model m = load_model("resnet50");
  ParallelPlan p;
  p.pp = 2;
  p.global_batch = 256;
  p.micro_batch = 32;
  const auto stages = estimate_memory(m, p, a100());
  EXPECT_EQ(stages[0].parameters + stages[1].parameters, parameter_count(m));
  EXPECT_TRUE(peak_memory(stages).fits);
}

}  // namespace
}  // namespace cs::wl
