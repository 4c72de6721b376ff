// Continuous batching and the paged KV cache (issue 15, must-show 2): decode time grows with the
// batch and the context as the memory-bound model says; a batch that overflows the KV cache
// preempts, and the preemptions are counted; the KV capacity follows from the GPU's memory.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "drivers/serving_sim.h"
#include "drivers/serving_step_time.h"
#include "results/serving_report.h"
#include "sim/collectives/machine.h"
#include "tests/serving/scenario.h"
#include "workloads/inference_cost.h"
#include "workloads/model.h"

namespace cs::drv {
namespace {

struct Fixture {
  coll::Machine machine = coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  wl::Model model = wl::load_model("llama3-8b");
  ServingStepTime step{machine, model, {1, wl::Precision::kBf16}, {{machine.cluster.gpus()[0]}}, nullptr};
  const hw::GpuSpec& gpu = machine.cluster.gpu_spec(machine.cluster.gpus()[0]);

  wl::InferenceBatch decodes(int batch, std::int64_t context) {
    wl::InferenceBatch b;
    for (int i = 0; i < batch; ++i) b.add(1, context, true);
    return b;
  }
};

TEST(ServingBatch, DecodeAttentionIsTheKvCacheRead) {
  Fixture f;
  const Bandwidth hbm = scale(f.gpu.hbm_bandwidth, f.gpu.roofline.memory);
  for (int batch : {1, 16, 128}) {
    for (std::int64_t ctx : {512, 4096}) {
      const wl::InferenceBatch b = f.decodes(batch, ctx);
      const StepBreakdown t = f.step.step(0, b);
      // Per block: the cache of batch x (ctx + 1) tokens, 2 KV heads... read once at the
      // memory roofline, plus the launch.
      const std::int64_t kv_per_layer = f.model.transformer.kv_heads * 128 * 2 * 2;
      const std::int64_t bytes = batch * (ctx + 1) * kv_per_layer + batch * kv_per_layer + batch * 32 * 256 * 2;
      const Duration expected = (transfer_time(Bytes{bytes}, hbm) + f.gpu.roofline.kernel_launch) * f.model.transformer.layers;
      EXPECT_NEAR(to_seconds(t.attention) / to_seconds(expected), 1.0, 1e-6) << batch << " x " << ctx;
    }
  }
}

TEST(ServingBatch, DecodeTimeGrowsWithBatchAndContext) {
  Fixture f;
  Duration previous{0};
  for (int batch : {1, 8, 64, 256}) {
    const Duration t = f.step.step(0, f.decodes(batch, 2048)).total();
    EXPECT_GT(t, previous) << batch;
    previous = t;
  }
  previous = Duration{0};
  for (std::int64_t ctx : {128, 1024, 8192, 32768}) {
    const Duration t = f.step.step(0, f.decodes(32, ctx)).total();
    EXPECT_GT(t, previous) << ctx;
    previous = t;
  }
  // A small decode batch is memory-bound: the weights are read once whatever the batch, so one
  // and eight sequences at a short context take nearly the same GEMM time.
  const double one = to_seconds(f.step.step(0, f.decodes(1, 16)).gemm);
  const double eight = to_seconds(f.step.step(0, f.decodes(8, 16)).gemm);
  EXPECT_NEAR(eight / one, 1.0, 0.01);
  // The blocks' weights (the embedding table is looked up, not read whole; the head is apart).
  const auto& c = f.model.transformer;
  const double block_weights =
      2.0 * static_cast<double>(wl::parameter_count(f.model) - wl::embedding_parameters(c) - wl::head_parameters(c));
  const double read = block_weights / (f.gpu.hbm_bandwidth.value() * f.gpu.roofline.memory) +
                      to_seconds(f.gpu.roofline.kernel_launch) * c.layers;
  EXPECT_NEAR(one / read, 1.0, 0.01);
}

TEST(ServingBatch, KvCapacityFromMemory) {
  // Llama 3 8B on an H100 (80 GiB... as the catalog lists it): HBM x 0.9 - weights - activations
  // of 8,192 tokens, in blocks of 16 tokens x 131,072 bytes.
  Fixture f;
  nlohmann::json j = test::small_scenario(1, 1, 16, 2);
  const results::ServingRun run = simulate_serving(test::scenario(j));
  const auto& c = f.model.transformer;
  const double activations = 8192.0 * 2 * (2.0 * static_cast<double>(c.ffn_hidden) + 2.0 * static_cast<double>(c.hidden));
  const double left = static_cast<double>(f.gpu.hbm_capacity.value()) * 0.9 -
                      static_cast<double>(wl::parameter_count(f.model)) * 2 - activations;
  EXPECT_EQ(run.kv_bytes_per_token.value(), 2 * 8 * 128 * 2 * 32);
  EXPECT_EQ(run.replica_stats[0].kv_blocks, static_cast<std::int64_t>(left / (16.0 * 131072)));
}

nlohmann::json crowded(const char* preemption) {
  // Long requests arriving together on a replica whose KV cache holds about 40,000 tokens.
  nlohmann::json j = test::small_scenario(1000, 64, 1000, 1000);
  j["scheduler"] = {{"memory_fraction", 0.31}, {"preemption", preemption}};
  return j;
}

TEST(ServingBatch, OverflowPreempts) {
  for (const char* mode : {"recompute", "swap"}) {
    const results::ServingRun run = simulate_serving(test::scenario(crowded(mode)));
    const results::ServingMetrics m = results::serving_metrics(run);
    const std::int64_t capacity = run.replica_stats[0].kv_blocks * 16;
    ASSERT_LT(capacity, 64 * 2000) << "the cache must be too small for the batch";
    EXPECT_GT(m.preemptions, 0) << mode;
    EXPECT_EQ(m.preemptions, run.replica_stats[0].preemptions);
    EXPECT_EQ(m.completed, 64) << mode;
    EXPECT_EQ(run.replica_stats[0].kv_peak, run.replica_stats[0].kv_blocks) << mode;
    // Every token generated exactly once per request.
    EXPECT_EQ(run.replica_stats[0].output_tokens, 64 * 1000) << mode;
  }
  // Swapping keeps the cache, so it recomputes nothing: fewer prompt tokens run than with recompute.
  const auto rec = simulate_serving(test::scenario(crowded("recompute")));
  const auto swp = simulate_serving(test::scenario(crowded("swap")));
  EXPECT_EQ(swp.replica_stats[0].prefill_tokens, 64 * 1000);
  EXPECT_GT(rec.replica_stats[0].prefill_tokens, 64 * 1000);
}

TEST(ServingBatch, ReservedAdmissionNeverPreempts) {
  // TensorRT-LLM's GUARANTEED_NO_EVICT: admitted with every block it will need, a request is never
  // paused, so at most capacity / 2,000 tokens run at once.
  nlohmann::json j = crowded("recompute");
  j["scheduler"]["kv_admission"] = "reserve";
  const results::ServingRun run = simulate_serving(test::scenario(j));
  const results::ServingMetrics m = results::serving_metrics(run);
  EXPECT_EQ(m.preemptions, 0);
  EXPECT_EQ(m.completed, 64);
  std::int32_t widest = 0;
  for (const auto& it : run.iterations) widest = std::max(widest, it.sequences);
  EXPECT_EQ(widest, run.replica_stats[0].kv_blocks / 125);  // 2,000 tokens = 125 blocks each
}

TEST(ServingBatch, NoPreemptionWhenTheCacheSuffices) {
  const results::ServingRun run = simulate_serving(test::scenario(test::small_scenario(1000, 64, 1000, 1000)));
  EXPECT_EQ(results::serving_metrics(run).preemptions, 0);
}

TEST(ServingBatch, ChunkedPrefillSharesIterationsWithDecodes) {
  // Without chunked prefill a prompt runs whole in one iteration; with it, in budget-sized chunks.
  nlohmann::json j = test::small_scenario(1, 1, 5000, 2);
  j["scheduler"] = {{"max_batch_tokens", 2048}};
  const auto chunked = simulate_serving(test::scenario(j));
  EXPECT_EQ(chunked.iterations.size(), 3u + 1u);  // 2048 + 2048 + 904, then one decode
  EXPECT_EQ(chunked.iterations[0].tokens, 2048);
  EXPECT_EQ(chunked.iterations[2].tokens, 904);
  j["scheduler"]["chunked_prefill"] = false;
  const auto whole = simulate_serving(test::scenario(j));
  EXPECT_EQ(results::serving_metrics(whole).rejected, 1);  // longer than the budget: never schedulable
  j["scheduler"]["max_batch_tokens"] = 8192;
  const auto fits = simulate_serving(test::scenario(j));
  ASSERT_EQ(fits.iterations.size(), 2u);
  EXPECT_EQ(fits.iterations[0].tokens, 5000);
}

TEST(ServingBatch, ExpertParallelAllToAllsAreSimulated) {
  // DeepSeek-V2-Lite on one DGX H100, TP 8 with and without expert parallelism: with it, every
  // mixture block's communication is one all-reduce and two all-to-alls of the replica's GPUs,
  // each timed by the collective model (the step's communication equals their sum, exactly).
  const coll::Machine machine = coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  const wl::Model model = wl::load_model("deepseek-v2-lite");
  const auto g = machine.cluster.gpus();
  std::vector<topo::NodeId> eight(g.begin(), g.begin() + 8);
  ServingStepTime tp(machine, model, {8}, {eight}, nullptr);
  ServingStepTime ep(machine, model, {8, wl::Precision::kBf16, wl::Precision::kBf16, 8}, {eight}, nullptr);
  wl::InferenceBatch b;
  for (int i = 0; i < 64; ++i) b.add(1, 1000, true);
  const Bytes ar{64 * 2048 * 2}, a2a{64 / 8 * 6 * 2048 * 2};
  const Duration dense = tp.collective(CollectiveOp::kAllReduce, 0, ar) * 2;
  EXPECT_EQ(tp.step(0, b).communication, dense * 27);
  EXPECT_EQ(ep.step(0, b).communication,
            dense + (ep.collective(CollectiveOp::kAllReduce, 0, ar) + ep.collective(CollectiveOp::kAllToAll, 0, a2a) * 2) * 26);
  EXPECT_GT(ep.collective(CollectiveOp::kAllToAll, 0, a2a), Duration{0});
}

TEST(ServingBatch, ExpertParallelNeedsAMixture) {
  nlohmann::json j = test::small_scenario(1, 1, 16, 2);
  j["replicas"] = {{"count", 1}, {"tp", 2}, {"expert_parallel", true}};
  try {
    simulate_serving(test::scenario(j));
    ADD_FAILURE() << "a dense model accepted expert parallelism";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/replicas/expert_parallel");
  }
}

nlohmann::json pipelined(int replicas, int pp, double rate, std::int64_t count) {
  nlohmann::json j = test::small_scenario(rate, count, 512, 128);
  j["replicas"] = {{"count", replicas}, {"tp", 1}, {"pp", pp}};
  return j;
}

TEST(ServingPipeline, ALoneRequestCrossesTheStagesInTurn) {
  // Llama 3 8B over two stages (GPUs 0 and 1): blocks 0-15, then the activations (each TP rank's
  // slice, here all of them; an all-gather of one GPU costs nothing), then blocks 16-31 and the
  // head.
  const results::ServingRun run = simulate_serving(test::scenario(pipelined(1, 2, 1, 1)));
  Fixture f;
  const auto g = f.machine.cluster.gpus();
  ServingStepTime step(f.machine, f.model, {1, wl::Precision::kBf16, wl::Precision::kBf16, 1, 2}, {{g[0]}, {g[1]}}, nullptr);
  wl::InferenceBatch b;
  b.add(512, 0, true);
  const Duration expected = step.step(0, b, 0, 16, false).total() + step.send_recv(g[0], g[1], Bytes{512 * 4096 * 2}) +
                            step.step(1, b, 16, 16, true).total();
  EXPECT_EQ(run.requests[0].first_token - run.requests[0].arrival, expected);
  EXPECT_EQ(run.kv_bytes_per_token.value(), 2 * 8 * 128 * 2 * 16);  // each GPU caches its 16 layers
}

TEST(ServingPipeline, StagesWorkOnDifferentBatchesAtOnce) {
  // Saturated: one replica over two pipeline stages keeps both busy with two batches in flight
  // (vLLM's virtual engines), so it serves nearly twice what one GPU holding the whole model does;
  // without the overlap it would serve about the same.
  const auto one = results::serving_metrics(simulate_serving(test::scenario(pipelined(1, 1, 200, 3000))));
  const results::ServingRun run = simulate_serving(test::scenario(pipelined(1, 2, 200, 3000)));
  const auto two = results::serving_metrics(run);
  EXPECT_EQ(two.completed, 3000);
  EXPECT_GT(two.output_tokens_per_s / one.output_tokens_per_s, 1.6);
  // Never more batches under way than stages: at each batch's start, at most one earlier batch
  // is still in the pipeline.
  std::size_t overlapping = 0;
  for (std::size_t i = 1; i < run.iterations.size(); ++i) {
    std::size_t open = 0;
    for (std::size_t k = (i >= 4 ? i - 4 : 0); k < i; ++k) {
      if (run.iterations[k].start + run.iterations[k].length > run.iterations[i].start) ++open;
    }
    EXPECT_LE(open, 1u) << i;
    overlapping += open;
  }
  EXPECT_GT(overlapping, run.iterations.size() / 2);  // mostly two at once
  for (const auto& st : run.replica_stats) EXPECT_EQ(st.kv_in_use_at_end, 0);
}

}  // namespace
}  // namespace cs::drv
