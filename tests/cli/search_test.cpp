// `clustersim search` on the published Megatron-LM SC21 table (configs/validation/
// megatron-sc21-table1.json, docs/plan-search.md "Validation"): with the settings the paper's
// Megatron had (full recomputation, no distributed optimizer, no sequence parallelism: --keep
// recompute,zero,sequence_parallel), the plan the search picks first is the published one or one
// the simulator rates at least as fast, within 5%; the fast estimate orders the simulated plans
// as the simulation does wherever the simulation separates them by more than 10%. Rows 1-5 here, rows 6-10 (1,024 to 3,072 GPUs) in the
// Slow test; the 175B search on 512 GPUs (the full space) is Slow too.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = CS_CLUSTERSIM_BIN;

json search(const fs::path& experiment, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"search", experiment.string(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = cs::test::run_binary(kBinary, args);
  EXPECT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

// Plans the simulation separates by more than 10% come in the same order from the estimate (the
// order of plans closer than that is within the estimate's error, and Spearman's coefficient over
// a handful of near-ties says little).
void expect_same_order(const json& ranked, int row) {
  for (const json& a : ranked) {
    for (const json& b : ranked) {
      if (a["iteration_time_s"].is_null() || b["iteration_time_s"].is_null()) continue;
      if (a["iteration_time_s"].get<double>() < 0.9 * b["iteration_time_s"].get<double>()) {
        EXPECT_LT(a["estimated_iteration_s"].get<double>(), b["estimated_iteration_s"].get<double>())
            << "row " << row << ": " << a["description"] << " against " << b["description"];
      }
    }
  }
}

void check_rows(int first, int last, int simulate) {
  const json table = json::parse(cs::test::read_text(std::string(CS_SOURCE_DIR) + "/configs/validation/megatron-sc21-table1.json"));
  cs::test::TempDir dir("search_sc21");
  for (int row = first; row <= last; ++row) {
    const json& record = table["records"][static_cast<std::size_t>(row - 1)];
    const fs::path file = dir.path() / ("row" + std::to_string(row) + ".json");
    std::ofstream(file) << record["experiment"].dump();
    const json r = search(file, {"--keep", "recompute,zero,sequence_parallel", "--simulate", std::to_string(simulate), "--top", std::to_string(simulate)});
    ASSERT_TRUE(r.contains("ranked")) << "row " << row;
    ASSERT_FALSE(r["ranked"].empty());
    ASSERT_TRUE(r["given"].is_object()) << "row " << row << ": the published plan was not simulated";
    const double published = r["given"]["iteration_time_s"].get<double>();
    const double picked = r["ranked"][0]["iteration_time_s"].get<double>();
    EXPECT_LE(picked, 1.05 * published) << "row " << row << ": picked " << r["ranked"][0]["description"] << " at " << picked
                                        << " s, the published plan " << r["given"]["description"] << " at " << published << " s";
    expect_same_order(r["ranked"], row);
    EXPECT_GT(r["kept"].get<int>(), 0);
  }
}

TEST(SearchSc21, Rows1To5FindThePublishedPlanOrOneAsFast) { check_rows(1, 5, 8); }

// Each full simulation of these rows takes seconds (up to 128 pipeline stages of a 1T model).
TEST(SlowSearchSc21, Rows6To10FindThePublishedPlanOrOneAsFast) { check_rows(6, 10, 2); }

TEST(SlowSearch, Gpt175bOn512GpusTheWholeSpace) {
  const json r = search(std::string(CS_SOURCE_DIR) + "/bench/experiments/search-gpt-175b-512.json", {});
  ASSERT_TRUE(r.contains("ranked"));
  EXPECT_GT(r["considered"].get<int>(), 5000);
  ASSERT_TRUE(r["heuristic"].is_object());
  // The search's first plan is at least as fast as the published heuristic's, simulated alike.
  EXPECT_LE(r["ranked"][0]["iteration_time_s"].get<double>(), r["heuristic"]["iteration_time_s"].get<double>());
  EXPECT_GT(r["rank_correlation"].get<double>(), 0.5);
  expect_same_order(r["ranked"], 0);
  // Every simulated plan uses the 512 GPUs and fits.
  for (const json& c : r["ranked"]) {
    EXPECT_EQ(c["plan"]["gpus"], 512);
    EXPECT_LE(c["memory_per_gpu_bytes"].get<double>(), 0.95 * 80e9);
  }
}

TEST(Search, SeveralGpuCountsAndTheCostObjective) {
  cs::test::TempDir dir("search_cost");
  const fs::path exp = std::string(CS_SOURCE_DIR) + "/configs/examples/gpt-1.7b-32.json";
  const json fast = search(exp, {"--gpus", "8,32", "--objective", "time", "--simulate", "4"});
  const json cheap = search(exp, {"--gpus", "8,32", "--objective", "cost", "--simulate", "4"});
  ASSERT_FALSE(fast["ranked"].empty());
  ASSERT_FALSE(cheap["ranked"].empty());
  // The fastest plan uses the most GPUs; the cheapest per token (GPU-seconds) the fewest, since
  // the data-parallel reduction and the smaller per-GPU work only add GPU-seconds.
  EXPECT_EQ(fast["ranked"][0]["plan"]["gpus"], 32);
  EXPECT_EQ(cheap["ranked"][0]["plan"]["gpus"], 8);
  EXPECT_EQ(fast["gpus"], json::array({8, 32}));
}

}  // namespace
