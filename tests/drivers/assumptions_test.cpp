// The assumed and fitted values a training run lists (drivers/assumptions.h): what the catalog
// says of its values reaches the run; a value the user sets, or a profile measures, is no longer
// an assumption.
#include "drivers/assumptions.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "drivers/config_paths.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"

namespace cs::drv {
namespace {

const std::string kExamples = std::string(CS_SOURCE_DIR) + "/configs/examples/";

const SourcedFact* find(const std::vector<SourcedFact>& facts, const std::string& path) {
  auto it = std::find_if(facts.begin(), facts.end(), [&](const SourcedFact& f) { return f.path == path; });
  return it == facts.end() ? nullptr : &*it;
}

TEST(Assumptions, AnA100RunListsTheFittedGemmEfficiencyAndTheAssumedValues) {
  const results::TrainingRun run = simulate_training(load_experiment(kExamples + "gpt-1.7b-32.json"));
  const SourcedFact* gemm = find(run.assumptions, "/gpus/A100-SXM-80GB/efficiency/gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kind, "fitted");
  EXPECT_EQ(gemm->value, "0.81");
  EXPECT_EQ(gemm->file, "configs/hardware/gpus.json");
  ASSERT_NE(find(run.assumptions, "/collective_model/launch_latency"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/link_classes/nvlink/step_latency")->kind, "fitted");
  // Datasheet values and derivations are not assumptions: the A100's peak, the LL wire factor.
  EXPECT_EQ(find(run.assumptions, "/gpus/A100-SXM-80GB/peak/bf16"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/collective_model/ll_wire_factor"), nullptr);
  for (const SourcedFact& f : run.assumptions) EXPECT_TRUE(f.is_judgement()) << f.path << " " << f.kind;
}

TEST(Assumptions, AnFp8RunOnH100ListsTheAssumedFp8MamfAndTheSustainedShare) {
  // No FP8 MAMF is published for H100: the catalog assumes the BF16 MAMF's share of peak, and a
  // run in fp8 says so; its SM count and tile are sourced, not assumed, so they are not listed.
  Experiment e = load_experiment(std::string(CS_TEST_DATA_DIR) + "/experiments/llama3-70b-h100-64.json");
  e.plan.precision = wl::Precision::kFp8;
  const results::TrainingRun run = simulate_training(e);
  const SourcedFact* mamf = find(run.assumptions, "/gpus/H100-SXM/gemm/mamf/fp8");
  ASSERT_NE(mamf, nullptr);
  EXPECT_EQ(mamf->kind, "assumed");
  EXPECT_NE(find(run.assumptions, "/gpus/H100-SXM/efficiency/gemm"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/gpus/H100-SXM/gemm/mamf/bf16"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/gpus/H100-SXM/gemm/sms"), nullptr);
}

TEST(Assumptions, ValuesTheUserSetsAreNotAssumptions) {
  Experiment e = load_experiment(kExamples + "gpt-1.7b-32.json",
                                 {"/cluster_overrides/-=/link_classes={\"nvlink\": {\"step_latency\": \"10us\"}}"});
  e.hardware_overrides = {"/gpus/A100-SXM-80GB/efficiency/gemm/value=0.7"};
  const results::TrainingRun run = simulate_training(e);
  EXPECT_EQ(find(run.assumptions, "/gpus/A100-SXM-80GB/efficiency/gemm"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/link_classes/nvlink/step_latency"), nullptr);
  EXPECT_NE(find(run.assumptions, "/gpus/A100-SXM-80GB/efficiency/attention"), nullptr);
}

TEST(Assumptions, ValuesAProfileMeasuresAreNotAssumptions) {
  Experiment e = load_experiment(kExamples + "gpt-1.7b-32.json");
  e.profile = resolve_profile("example-synthetic", "", "", "--profile");
  const results::TrainingRun run = simulate_training(e);
  for (const char* measured : {"gemm", "memory", "kernel_launch", "overlap_slowdown"}) {
    EXPECT_EQ(find(run.assumptions, std::string("/gpus/A100-SXM-80GB/efficiency/") + measured), nullptr) << measured;
  }
  // The profile measured the NVLink class's efficiency and its Simple and LL step latencies.
  EXPECT_EQ(find(run.assumptions, "/link_classes/nvlink/efficiency"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/link_classes/nvlink/step_latency"), nullptr);
  EXPECT_EQ(find(run.assumptions, "/link_classes/nvlink/ll_step_latency"), nullptr);
  // Fused attention has no profile model: still the catalog's assumption.
  EXPECT_NE(find(run.assumptions, "/gpus/A100-SXM-80GB/efficiency/attention"), nullptr);
}

}  // namespace
}  // namespace cs::drv

namespace cs::drv {
namespace {

TEST(Assumptions, AnNvlsServerListsNvlsLatenciesAndItsFittedReductionRate) {
  // A DGX H100 reduces in-switch: its collectives rest on the fitted per-port reduction rate and
  // on NCCL's NVLS latencies (assumed); a DGX A100 cannot, and lists none of them.
  const coll::Machine h100 = coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  const auto facts = training_assumptions(h100, hw::Catalog::builtin(), h100.cluster.gpus(), "bf16", nullptr);
  ASSERT_NE(find(facts, "/collective_model/nvls_step_latency"), nullptr);
  EXPECT_EQ(find(facts, "/collective_model/nvls_step_latency")->kind, "assumed");
  EXPECT_EQ(find(facts, "/collective_model/nvls_step_latency")->value, "25us");
  ASSERT_NE(find(facts, "/nvlink/NVLink4/switch_reduction_per_gpu"), nullptr);
  EXPECT_EQ(find(facts, "/nvlink/NVLink4/switch_reduction_per_gpu")->kind, "fitted");
  // Channels and chunk are NCCL's documented values, not judgements.
  EXPECT_EQ(find(facts, "/collective_model/nvls_channels"), nullptr);
  const coll::Machine a100 = coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-a100.json");
  const auto a100_facts = training_assumptions(a100, hw::Catalog::builtin(), a100.cluster.gpus(), "bf16", nullptr);
  EXPECT_EQ(find(a100_facts, "/collective_model/nvls_step_latency"), nullptr);
}

}  // namespace
}  // namespace cs::drv
