// `clustersim cost`, the energy and goal of `run`, and `clustersim size` end to end
// (docs/cost-model.md, docs/sizing.md).
#include <cmath>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = CS_CLUSTERSIM_BIN;
const fs::path kSource = CS_SOURCE_DIR;

json run_json(const std::vector<std::string>& args) {
  const auto r = cs::test::run_binary(kBinary, args);
  EXPECT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

TEST(CostCommand, RailOptimized1024H100MatchesTheSheetsTotals) {
  const json j = run_json({"cost", "h100-rail-512", "--set", "/servers/0/count=128", "--json"});
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["bom"]["switches"], 48);
  EXPECT_EQ(j["bom"]["cables"], 2048);
  EXPECT_EQ(j["bom"]["transceivers"], 4096);
  EXPECT_DOUBLE_EQ(j["capital_usd"]["total"].get<double>(), 50'429'440);
  EXPECT_EQ(j["cooling"]["method"], "air");
  EXPECT_GT(j["assumptions"].size(), 0U);  // the assumed switch power, at least
  const double per_gpu_hour = j["cost_per_gpu_hour_usd"].get<double>();
  EXPECT_GT(per_gpu_hour, 1.0);
  EXPECT_LT(per_gpu_hour, 3.0);
}

TEST(CostCommand, SetPriceChangesTheTotalAndTheTableNamesTheAssumptions) {
  const json j = run_json({"cost", "h100-rail-512", "--set", "/servers/0/count=128", "--set-price",
                           "/servers/H100-SXM/price_usd=300000", "--json"});
  EXPECT_DOUBLE_EQ(j["capital_usd"]["servers"].get<double>(), 128 * 300000.0);
  const auto t = cs::test::run_binary(kBinary, {"cost", "h100-rail-512", "--set", "/servers/0/count=64"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("capital"), std::string::npos);
  EXPECT_NE(t.out.find("rests on"), std::string::npos);
}

TEST(CostCommand, CoolingIsLiquidAboveTheCatalogsTdpThreshold) {
  // DGX B200 (1,000 W GPUs) is air-cooled, at the threshold; a lower threshold makes it liquid.
  const json air = run_json({"cost", "dgx-h100", "--set", "/servers/0/gpu=B200", "--json"});
  EXPECT_EQ(air["cooling"]["method"], "air");
  EXPECT_EQ(air["cooling"]["max_gpu_tdp_w"], 1000.0);
  const json liquid = run_json({"cost", "dgx-h100", "--set", "/servers/0/gpu=B200", "--set-price",
                                "/facility/liquid_cooling_above_w_per_gpu=900", "--json"});
  EXPECT_EQ(liquid["cooling"]["method"], "liquid");
}

TEST(RunEnergy, GoalGivesTimeEnergyAndCostConsistentWithThroughput) {
  const json j = run_json({"run", (kSource / "configs/examples/gpt-1.7b-32.json").string(), "--train-tokens", "1e10", "--json"});
  ASSERT_FALSE(j["energy"].is_null());
  ASSERT_FALSE(j["goal"].is_null());
  const double tokens_per_s = j["tokens_per_s"].get<double>();
  const double t = j["goal"]["time_to_train_s"].get<double>();
  EXPECT_NEAR(t, 1e10 / tokens_per_s, 1e-9 * t);
  const double iterations = j["goal"]["iterations"].get<double>();
  EXPECT_NEAR(j["goal"]["energy_j"].get<double>(), j["energy"]["per_iteration_j"].get<double>() * iterations,
              1e-9 * j["goal"]["energy_j"].get<double>());
  EXPECT_NEAR(j["energy"]["per_iteration_j"].get<double>(),
              (j["energy"]["gpus_j"].get<double>() + j["energy"]["hosts_j"].get<double>() + j["energy"]["network_j"].get<double>()) *
                  j["energy"]["pue"].get<double>(),
              1e-6);
  EXPECT_NEAR(j["goal"]["cost_usd"].get<double>(),
              j["goal"]["energy_cost_usd"].get<double>() + j["goal"]["capital_cost_usd"].get<double>(), 1e-6);
  // The average power lies between every GPU idle and every GPU at TDP (plus hosts and network).
  EXPECT_GT(j["energy"]["average_power_w"].get<double>(), 0);
}

TEST(RunEnergy, UnpricedGpuSaysWhyInsteadOfGuessing) {
  const json j = run_json({"run", (kSource / "configs/examples/gpt-1.7b-32.json").string(), "--set", "/cluster=mi300x-8",
                           "--set", "/cluster_overrides/0=/servers/0/count=1", "--set", "/plan/dp=8", "--json"});
  ASSERT_FALSE(j.is_null());
  EXPECT_TRUE(j["energy"].is_null());
  EXPECT_NE(j["energy_unavailable"].get<std::string>().find("MI300X"), std::string::npos);
}

TEST(SizeCommand, SevenBFineTuneNeedsNoCluster) {
  const json j = run_json({"size", (kSource / "configs/examples/size-7b-finetune.json").string(), "--json"});
  ASSERT_FALSE(j.is_null());
  EXPECT_TRUE(j["no_cluster_needed"].get<bool>()) << j["answer"];
  ASSERT_FALSE(j["smallest"].is_null());
  const json& s = j["finalists"][j["smallest"].get<std::size_t>()];
  EXPECT_LE(s["gpus"].get<int>(), 8);
  EXPECT_TRUE(s["meets_deadline"].get<bool>());
  // One server needs no fabric: its share of the server and of its facility and operations
  // ($310,000 + $50,000 for 8 GPUs), and the same share of the server's 10.2 kW.
  const double share = s["gpus"].get<double>() / 8;
  EXPECT_NEAR(s["capital_usd"].get<double>(), share * 360'000, 1e-6);
  EXPECT_NEAR(s["power_full_load_w"].get<double>(), share * 10'200, 1e-6);
  // Time to train from the simulated throughput.
  EXPECT_NEAR(s["time_to_train_s"].get<double>(), 1e9 / s["tokens_per_s"].get<double>(), 1e-6 * s["time_to_train_s"].get<double>());
  // The paper estimates against hand formulas: Llama 2 7B, 1B tokens, H100 (80 GB, 989 TFLOP/s bf16).
  const json& e = j["estimates"];
  const double params = e["parameters"].get<double>();
  EXPECT_NEAR(params, 6.74e9, 0.01e9);
  EXPECT_EQ(e["model_state_bytes"].get<double>(), std::floor(16 * params));
  EXPECT_EQ(e["gpu_memory_bytes"].get<double>(), 80e9);  // H100 SXM: 80 GB
  EXPECT_EQ(e["gpus_for_memory"].get<int>(), static_cast<int>(std::ceil(16 * params / 80e9)));  // 108 GB: 2
  EXPECT_NEAR(e["flops_6nd"].get<double>(), 6 * params * 1e9, 1e-6 * 6 * params * 1e9);
  EXPECT_EQ(e["gpus_for_deadline"].get<int>(),
            static_cast<int>(std::ceil(e["flops_to_train"].get<double>() / (86400 * e["gpu_peak_flops"].get<double>()))));
  EXPECT_EQ(e["data_volume_bytes"].get<double>(), 2e9);  // 32,000-entry vocabulary: 2 bytes per token
  EXPECT_NEAR(e["storage_read_rate_bytes_per_s"].get<double>(), 2e9 / 86400, 1e-6);
}

TEST(SizeCommand, ImpossibleDeadlineIsAnAnswerNotAnError) {
  // 70B on 2T tokens in one day: even 16,384 H100s at their peak would not do it.
  const fs::path goal = fs::temp_directory_path() / "cs_size_impossible.json";
  {
    std::ofstream f(goal);
    f << R"({"model": "llama3-70b", "goal": {"tokens": 2e12}, "deadline": {"days": 1},
             "plan": {"micro_batch": 1, "global_batch": 512, "sequence_length": 8192, "flash_attention": true},
             "candidates": {"clusters": ["h100-rail-512"], "gpus": [64, 128]}})";
  }
  const json j = run_json({"size", goal.string(), "--json"});
  fs::remove(goal);
  ASSERT_FALSE(j.is_null());
  EXPECT_TRUE(j["smallest"].is_null());
  const std::string answer = j["answer"];
  EXPECT_NE(answer.find("No candidate meets"), std::string::npos) << answer;
  EXPECT_NE(answer.find("at least"), std::string::npos) << answer;  // the deadline bound, with its GPU count
}

TEST(SlowSize, SeventyBOnTwoTrillionTokensInThirtyDaysTakesLowThousandsOfH100s) {
  const json j = run_json({"size", (kSource / "configs/examples/size-70b-pretrain.json").string(), "--json"});
  ASSERT_FALSE(j.is_null());
  ASSERT_FALSE(j["smallest"].is_null()) << j["answer"];
  EXPECT_FALSE(j["no_cluster_needed"].get<bool>());
  const json& s = j["finalists"][j["smallest"].get<std::size_t>()];
  EXPECT_GE(s["gpus"].get<int>(), 1024) << j["answer"];
  EXPECT_LE(s["gpus"].get<int>(), 4096) << j["answer"];
  EXPECT_LE(s["time_to_train_s"].get<double>(), 30 * 86400.0);
  // A whole cluster of that size: the capital and full-load power `clustersim cost` gives it.
  const json cost = run_json({"cost", s["cluster"].get<std::string>(), "--set",
                              "/servers/0/count=" + std::to_string(s["gpus"].get<int>() / 8), "--json"});
  EXPECT_DOUBLE_EQ(s["capital_usd"].get<double>(), cost["capital_usd"]["total"].get<double>());
  EXPECT_DOUBLE_EQ(s["power_full_load_w"].get<double>(), cost["power_w"]["full_load"].get<double>());
  // Hand formulas: FLOPs at least 6ND, the deadline bound at peak below the answer.
  const json& e = j["estimates"];
  EXPECT_GE(e["flops_to_train"].get<double>(), e["flops_6nd"].get<double>());
  const double bound = std::ceil(e["flops_to_train"].get<double>() / (30 * 86400 * e["gpu_peak_flops"].get<double>()));
  EXPECT_EQ(e["gpus_for_deadline"].get<int>(), static_cast<int>(bound));
  EXPECT_LT(bound, s["gpus"].get<int>());
}

}  // namespace
