// The per-stage memory estimate (memory.h), term by term: the ZeRO paper's model states, ZeRO's
// buffers, activations per recompute mode and schedule, fragmentation, each against its closed
// form on a GPT small enough to check by hand; then published runs that must fit (and one
// that must not), and the out-of-memory error.
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

// A GPT to check by hand: h = 64, a = 4 heads, f = 4h, 4 blocks, V = 256, a learned position
// table of 32 rows, dropout, LayerNorm, biases, tied embeddings. Plans run b = 2 samples of
// s = 32 tokens: T = 64 tokens, s b h = 4096, 5 a s / h = 10.
//   block      12 h^2 + 13 h = 49,984 parameters
//   embedding  V h + 32 h = 18,432;  head: the final LayerNorm, 2h = 128
//   Psi        4 x 49,984 + 18,432 + 128 = 218,496
constexpr std::int64_t kSbh = 32 * 2 * 64;
constexpr std::int64_t kBlock = 49'984, kPsi = 218'496;

Model tiny_gpt() {
  Model m;
  m.name = "tiny-gpt";
  m.family = ModelFamily::kTransformer;
  m.transformer = {.layers = 4,
                   .hidden = 64,
                   .heads = 4,
                   .kv_heads = 4,
                   .ffn_hidden = 256,
                   .vocab = 256,
                   .max_sequence = 32,
                   .dropout = true};
  return m;
}

ParallelPlan tiny_plan(int dp = 1, ZeroStage zero = ZeroStage::kNone) {
  ParallelPlan p;
  p.dp = dp;
  p.micro_batch = 2;
  p.global_batch = 2 * dp;
  p.sequence_length = 32;
  p.zero = zero;
  return p;
}

MemoryEstimate tiny(const ParallelPlan& p) {
  const auto stages = estimate_memory(tiny_gpt(), p, a100());
  return stages.at(0);
}

TEST(Memory, TinyGptHasTheParametersCountedByHand) {
  EXPECT_EQ(parameter_count(tiny_gpt()), kPsi);
  EXPECT_EQ(tiny(tiny_plan()).parameters, kPsi);
}

TEST(Memory, ZeroPaperModelStates) {
  // Rajbhandari et al., ZeRO (arXiv:1910.02054), Fig. 1, K = 12, N_d = 4:
  //   stage 0  2 Psi + 2 Psi + 12 Psi            = 16 Psi
  //   stage 1  2 Psi + 2 Psi + 12 Psi / N_d      =  7 Psi
  //   stage 2  2 Psi + (2 + 12) Psi / N_d        =  5.5 Psi
  //   stage 3  (2 + 2 + 12) Psi / N_d            =  4 Psi
  auto states = [](ZeroStage z) {
    const MemoryEstimate e = tiny(tiny_plan(4, z));
    return std::array<std::int64_t, 3>{e.weights.value(), e.gradients.value(),
                                       e.optimizer_state.value()};
  };
  using S = std::array<std::int64_t, 3>;
  EXPECT_EQ(states(ZeroStage::kNone), (S{2 * kPsi, 2 * kPsi, 12 * kPsi}));
  EXPECT_EQ(states(ZeroStage::kOptimizer), (S{2 * kPsi, 2 * kPsi, 12 * kPsi / 4}));
  EXPECT_EQ(states(ZeroStage::kGradients), (S{2 * kPsi, 2 * kPsi / 4, 12 * kPsi / 4}));
  EXPECT_EQ(states(ZeroStage::kParameters), (S{2 * kPsi / 4, 2 * kPsi / 4, 12 * kPsi / 4}));
  // fp32 gradients (Megatron's main gradients): 4 bytes each, 18 bytes per parameter unsharded.
  ParallelPlan fp32 = tiny_plan(4, ZeroStage::kNone);
  fp32.grad_reduce_bytes = 4;
  EXPECT_EQ(tiny(fp32).gradients, Bytes{4 * kPsi});
  fp32.zero = ZeroStage::kGradients;
  EXPECT_EQ(tiny(fp32).gradients, Bytes{4 * kPsi / 4});
}

TEST(Memory, ZeroPaperModelStatesOfLlama2_7B) {
  // The same formulas on a real size, N_d = 64, with rounding up to whole bytes.
  const Model m = load_model("llama2-7b");
  const std::int64_t psi = parameter_count(m);
  ParallelPlan p;
  p.dp = 64;
  p.global_batch = 64;
  p.sequence_length = 4096;
  p.zero = ZeroStage::kParameters;
  const MemoryEstimate e = estimate_memory(m, p, a100())[0];
  const auto ceil64 = [](std::int64_t x) { return (x + 63) / 64; };
  EXPECT_EQ(e.weights, Bytes{ceil64(2 * psi)});
  EXPECT_EQ(e.gradients, Bytes{ceil64(2 * psi)});
  EXPECT_EQ(e.optimizer_state, Bytes{ceil64(12 * psi)});
}

TEST(Memory, ZeroBuffersPerUnit) {
  // Layer units (FSDP): the largest unit is a block, U = 49,984 (the embedding has 18,432).
  //   ZeRO-2  gradient buckets g U (the unit's gradient until its reduce-scatter)
  //   ZeRO-3  + gathered weights 2 x 2 U (the running unit and the prefetched one)
  const MemoryEstimate z2 = tiny(tiny_plan(4, ZeroStage::kGradients));
  EXPECT_EQ(z2.gradient_buckets, Bytes{2 * kBlock});
  EXPECT_EQ(z2.gathered_weights, Bytes{0});
  const MemoryEstimate z3 = tiny(tiny_plan(4, ZeroStage::kParameters));
  EXPECT_EQ(z3.gradient_buckets, Bytes{2 * kBlock});
  EXPECT_EQ(z3.gathered_weights, Bytes{4 * kBlock});
  // Module units (DeepSpeed): the largest weight matrix is fc1 (4h x h) or the token table
  // (V x h), M = 16,384 either way. The whole stage (218,496) is below
  // stage3_max_live_parameters, so all of it stays gathered: 2 Psi. Buckets: the module's
  // gradient 2M and the reduce bucket, min(25 MiB, 2 Psi) = 2 Psi.
  ParallelPlan module = tiny_plan(4, ZeroStage::kParameters);
  module.zero_unit = ZeroUnit::kModule;
  EXPECT_EQ(tiny(module).gathered_weights, Bytes{2 * kPsi});
  EXPECT_EQ(tiny(module).gradient_buckets, Bytes{2 * 16'384 + 2 * kPsi});
  // A 1 kB bucket is all the bucket there is.
  module.dp_bucket_mib = 1.0 / 1024;
  EXPECT_EQ(tiny(module).gradient_buckets, Bytes{2 * 16'384 + 1024});
  // Nothing without ZeRO-2/3, nor with nothing to shard over.
  EXPECT_EQ(tiny(tiny_plan(4, ZeroStage::kOptimizer)).gradient_buckets, Bytes{0});
  EXPECT_EQ(tiny(tiny_plan(1, ZeroStage::kParameters)).gathered_weights, Bytes{0});
  EXPECT_EQ(tiny(tiny_plan(1, ZeroStage::kParameters)).gradient_buckets, Bytes{0});
}

TEST(Memory, ActivationsPerRecomputeMode) {
  // One micro-batch (p = 1). Per block (Korthikanti et al. 2022): 34 s b h + 5 a s^2 b
  // = (34 + 10) s b h without recompute; the embedding keeps its dropout mask, s b h; the head
  // its final-norm input and projection input, 2 + 2 s b h, and the fp32 logits 4 T V = 16 sbh:
  // 20 s b h. The head's backward runs first and frees them before any block's.
  auto activations = [](Recompute r) {
    ParallelPlan p = tiny_plan();
    p.recompute = r;
    return tiny(p).activations.value();
  };
  // None: everything is kept, nothing rebuilt: 4 x 44 + 1 + 20 = 197 s b h.
  EXPECT_EQ(activations(Recompute::kNone), 197 * kSbh);
  // Selective: blocks keep 34 s b h and rebuild the 10 s b h of scores during their backward,
  // after the head's 20 s b h are freed: the peak is the head's backward, 4 x 34 + 1 + 20.
  EXPECT_EQ(activations(Recompute::kSelective), 157 * kSbh);
  // Full: blocks keep their input, 2 s b h; the last block's backward rebuilds the rest of its
  // activations, 44 - 2 = 42 s b h, once the head's 20 are freed: 4 x 2 + 1 + 20 + 42 - 20.
  EXPECT_EQ(activations(Recompute::kFull), 51 * kSbh);
}

TEST(Memory, ActivationsInFlightOnPipelineStages) {
  // p = 2, 1F1B, m = 4 micro-batches, full recompute. Stage 0 (embedding, 2 blocks) holds
  // min(p, m) = 2 micro-batches of 1 + 2 x 2 s b h and rebuilds a block, 42 s b h, with nothing
  // after it: 2 x 5 + 42. Stage 1 (2 blocks, head) holds one, 2 x 2 + 20, and its last block
  // rebuilds once the head's 20 are freed: 24 + 42 - 20.
  ParallelPlan p = tiny_plan();
  p.pp = 2;
  p.global_batch = 8;
  p.recompute = Recompute::kFull;
  const auto stages = estimate_memory(tiny_gpt(), p, a100());
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].activations, Bytes{52 * kSbh});
  EXPECT_EQ(stages[1].activations, Bytes{46 * kSbh});
  // The tied head keeps its own copy of the token table on the last stage: V h = 16,384.
  EXPECT_EQ(stages[1].parameters, 2 * kBlock + 128 + 16'384);
}

TEST(Memory, FragmentationIsAFractionOfReservedMemory) {
  // f = 1 - allocated / reserved, so reserved = allocated / (1 - f): f = 1/4 adds a third of
  // what the tensors hold, and nothing of the workspace.
  ParallelPlan p = tiny_plan();
  p.recompute = Recompute::kFull;
  const MemoryEstimate none = tiny(p);
  EXPECT_EQ(none.fragmentation, Bytes{0});
  const Bytes allocated{16 * kPsi + 51 * kSbh};
  EXPECT_EQ(none.total, allocated + kWorkspace);
  p.memory_fragmentation = 0.25;
  const MemoryEstimate quarter = tiny(p);
  EXPECT_EQ(quarter.fragmentation, Bytes{allocated.value() / 3});
  EXPECT_EQ(quarter.total, allocated + kWorkspace + Bytes{allocated.value() / 3});
}

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
  EXPECT_EQ(s0.gradient_buckets, Bytes{0});
  EXPECT_EQ(s0.gathered_weights, Bytes{0});
  // 1F1B: stage 0 holds p = 16 micro-batches, each 6 block inputs of 2sbh plus the embedding's
  // dropout mask sbh; plus one block rebuilt in backward, all but its kept input:
  // sbh (10 + 24/8 + 5as/(8h)) - 2 sbh = 21 sbh.
  const std::int64_t sbh = 2048LL * 12288;
  EXPECT_DOUBLE_EQ(s0.micro_batches_in_flight, 16.0);
  EXPECT_EQ(s0.activations, Bytes{16 * (6 * 2 * sbh + sbh) + 21 * sbh});
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

// Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC21 (arXiv:2104.04473), Sec. 5.2 and Table 2: GPT models trained with
// DeepSpeed's ZeRO-3 and no model parallelism on A100 80GB GPUs, sequence 2048, with
// activation recomputation. DeepSpeed gathers one module at a time and reduces gradients in a
// bucket of reduce_bucket_size = 5e8 values (its default), 1 GB in 16 bits.
struct Zero3Run {
  const char* model;
  int gpus, micro_batch, global_batch;
};

ParallelPlan zero3_plan(const Zero3Run& r) {
  ParallelPlan p;
  p.dp = r.gpus;
  p.micro_batch = r.micro_batch;
  p.global_batch = r.global_batch;
  p.sequence_length = 2048;
  p.recompute = Recompute::kFull;
  p.zero = ZeroStage::kParameters;
  p.zero_unit = ZeroUnit::kModule;
  p.dp_bucket_mib = 1e9 / (1024.0 * 1024.0);
  return p;
}

TEST(Memory, PublishedZero3RunsFit) {
  for (const Zero3Run& r :
       {Zero3Run{"gpt-175b", 384, 4, 1536}, Zero3Run{"gpt-175b", 768, 2, 1536},
        Zero3Run{"gpt-175b", 1536, 1, 1536}, Zero3Run{"gpt-529.6b", 640, 4, 2560},
        Zero3Run{"gpt-529.6b", 1120, 2, 2240}, Zero3Run{"gpt-529.6b", 2240, 1, 2240}}) {
    const MemoryEstimate e =
        peak_memory(estimate_memory(load_model(r.model), zero3_plan(r), a100()));
    EXPECT_TRUE(e.fits) << r.model << " on " << r.gpus << " GPUs: " << e.total.value() << " B";
  }
}

TEST(Memory, Gpt530BOn640GpusWithZero3TermByTerm) {
  // Table 2's starred row: 529.6B parameters (105 blocks, h = 20480, 128 heads), 640 GPUs,
  // micro-batch 4, global batch 2560.
  const Model m = load_model("gpt-529.6b");
  const MemoryEstimate e = estimate_memory(m, zero3_plan({"gpt-529.6b", 640, 4, 2560}), a100())[0];
  const std::int64_t psi = parameter_count(m), h = 20480, s = 2048, b = 4, V = 51200;
  const std::int64_t sbh = s * b * h;
  // 16 Psi / 640 of model states, about 13.2 GB.
  EXPECT_EQ(e.weights, Bytes{(2 * psi + 639) / 640});
  EXPECT_EQ(e.optimizer_state, Bytes{(12 * psi + 639) / 640});
  // The largest module is fc1, 4h x h = 1.68e9 parameters, above stage3_max_live_parameters:
  // it is gathered alone (3.4 GB); its gradient and the 1 GB bucket await the reduce-scatter.
  EXPECT_EQ(e.gathered_weights, Bytes{2 * 4 * h * h});
  EXPECT_EQ(e.gradient_buckets, Bytes{2 * 4 * h * h + 1'000'000'000});
  // 105 block inputs, the embedding's mask, the head's 4 s b h and fp32 logits 4 s b V; the
  // last block rebuilds sbh (34 + 5as/h) - 2 sbh = 96 sbh (5as/h = 64) after the head's are
  // freed: about 35 + 16 GB.
  const std::int64_t head = 4 * sbh + 4 * s * b * V;
  EXPECT_EQ(e.activations, Bytes{105 * 2 * sbh + sbh + head + 96 * sbh - head});
  // About 73.9 GB of the 80 GB: it fits.
  EXPECT_TRUE(e.fits);
  EXPECT_LT(e.total, Bytes{74'000'000'000});
  EXPECT_GT(e.total, Bytes{73'000'000'000});
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
    // Terms that are zero are left out.
    EXPECT_EQ(what.find("gathered"), std::string::npos) << what;
    EXPECT_EQ(what.find("fragmentation"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(check_fits(e, "GPU 0", true));
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
