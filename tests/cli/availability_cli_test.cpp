// `clustersim run` with an experiment's "availability" (docs/availability.md): summary.json's
// "availability" object, the run table's lines, the warnings on odd values.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace {

using nlohmann::json;
const std::string kBinary = CS_CLUSTERSIM_BIN;

// GPT 1.7B on four DGX A100 (HDR InfiniBand) with one storage server behind a 100 Gb/s link into
// leaf0, data-parallel over 32 GPUs.
json experiment(const json& availability) {
  return {{"cluster", "a100-4node-ib"},
          {"cluster_overrides", {"/devices=[{\"name\": \"storage0\", \"kind\": \"storage\"}]",
                                 "/links=[{\"from\": \"storage0\", \"to\": \"leaf0\", \"bandwidth\": \"100Gbps\"}]"}},
          {"model", "gpt-1.7b"},
          {"plan", {{"dp", 32}, {"micro_batch", 16}, {"global_batch", 512}, {"sequence_length", 2048}, {"recompute", "full"}}},
          {"availability", availability}};
}

cs::test::RunResult run(const cs::test::TempDir& dir, const json& exp, std::vector<std::string> extra) {
  cs::test::write_text(dir.file("exp.json"), exp.dump());
  std::vector<std::string> args{"run", dir.file("exp.json")};
  args.insert(args.end(), extra.begin(), extra.end());
  return cs::test::run_binary(kBinary, args);
}

TEST(RunAvailability, SummaryCarriesTheObjectDerivedFromTheStorage) {
  cs::test::TempDir dir("availability");
  // The Llama 3 rate scaled to 32 GPUs: T_f = 54 d / 466 x 16,384 / 32 = 5,126,153 s.
  const auto r = run(dir, experiment({{"interruptions", 466}, {"window", "54d"}, {"gpus", 16384}, {"restart_time", "5min"}}),
                     {"--train-tokens", "1e10", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& a = j["availability"];
  ASSERT_TRUE(a.is_object()) << j.dump(1);
  EXPECT_EQ(a["gpus"], 32);
  EXPECT_NEAR(a["job_mtbf_s"].get<double>(), 54 * 86400.0 / 466 * 16384 / 32, 1e-3);
  // 14 bytes x 1,652,230,656 parameters over the 12.5 GB/s storage link (one writer: no ZeRO).
  EXPECT_EQ(a["checkpoint_bytes"], 23'131'229'184);
  EXPECT_EQ(a["checkpoint_writers"], 1);
  EXPECT_DOUBLE_EQ(a["write_bandwidth_bytes_per_s"].get<double>(), 12.5e9);
  EXPECT_NEAR(a["save_time_s"].get<double>(), 1.85049833472, 1e-9);
  EXPECT_EQ(a["save_time_from"], "storage");
  EXPECT_DOUBLE_EQ(a["restart_time_s"].get<double>(), 300.0);
  EXPECT_EQ(a["interval_from"], "simulated_optimum");
  // Young: sqrt(2 x 1.8505 x 5,126,153) = 4,355.7 s; the simulated optimum within 10% on 200,000
  // interruptions.
  const double young = a["optimal_interval_s"]["young"].get<double>();
  EXPECT_NEAR(young, 4355.7, 0.1);
  EXPECT_NEAR(a["interval_s"].get<double>(), young, 0.1 * young);
  EXPECT_EQ(a["interval_s"], a["optimal_interval_s"]["simulated"]);
  // ETTR 1 - 1.85/4,356 - (2,178 + 300)/5,126,153 = 0.99909 to first order.
  EXPECT_NEAR(a["ettr_first_order"].get<double>(), 0.99909, 1e-5);
  EXPECT_NEAR(a["ettr"].get<double>(), a["ettr_first_order"].get<double>(), 0.001);
  EXPECT_EQ(a["simulated"]["interruptions"], 200000);
  // The goal takes longer by 1 / ETTR, and costs more alike.
  EXPECT_NEAR(a["effective_time_to_train_s"].get<double>(), j["goal"]["time_to_train_s"].get<double>() / a["ettr"].get<double>(),
              1e-6 * a["effective_time_to_train_s"].get<double>());
  EXPECT_NEAR(a["effective_cost_usd"].get<double>(), j["goal"]["cost_usd"].get<double>() / a["ettr"].get<double>(), 1e-6);
  // The derived save time is listed among its assumptions; the given restart time is not.
  std::string listed;
  for (const json& f : a["assumptions"]) listed += f["value_of"].get<std::string>() + " ";
  EXPECT_NE(listed.find("/availability/save_time"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("/availability/restart_time"), std::string::npos) << listed;
  EXPECT_TRUE(j["warnings"].empty()) << j["warnings"].dump();
}

TEST(RunAvailability, TablePrintsItAndTheSameSeedGivesTheSameNumbers) {
  cs::test::TempDir dir("availability_table");
  const json exp = experiment({{"mtbf_per_gpu", "50700h"}, {"save_time", "30s"}, {"checkpoint_interval", "20min"}});
  const auto table = run(dir, exp, {});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("availability     job MTBF"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("interval 20.0 min (given)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("ETTR"), std::string::npos) << table.out;
  const auto a = run(dir, exp, {"--json"}), b = run(dir, exp, {"--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(json::parse(a.out)["availability"], json::parse(b.out)["availability"]);
  // The default restart time is an assumption, listed.
  const json av = json::parse(a.out)["availability"];
  EXPECT_DOUBLE_EQ(av["restart_time_s"].get<double>(), 300.0);
  EXPECT_EQ(av["save_time_from"], "given");
  EXPECT_TRUE(av["checkpoint_bytes"].is_null());
  EXPECT_NE(av["assumptions"].dump().find("/availability/restart_time"), std::string::npos);
}

TEST(RunAvailability, OddValuesWarnAndNoObjectIsNull) {
  cs::test::TempDir dir("availability_odd");
  // An interval shorter than the save, and a per-GPU MTBF of 100 h.
  const auto odd = run(dir, experiment({{"mtbf_per_gpu", "100h"}, {"save_time", "5min"}, {"checkpoint_interval", "1min"}}),
                       {"--json"});
  ASSERT_EQ(odd.exit_code, 0) << odd.err;
  EXPECT_NE(odd.err.find("at /availability/checkpoint_interval: the interval"), std::string::npos) << odd.err;
  EXPECT_NE(odd.err.find("at /availability: a per-GPU MTBF"), std::string::npos) << odd.err;
  EXPECT_GE(json::parse(odd.out)["warnings"].size(), 2U);
  json plain = experiment(json::object());
  plain.erase("availability");
  const auto none = run(dir, plain, {"--json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_TRUE(json::parse(none.out)["availability"].is_null());
}

}  // namespace
