// `clustersim serve` end to end (docs/serving.md): the table, the JSON schema, the --out folder,
// determinism, and capacity planning.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = CS_CLUSTERSIM_BIN;
const fs::path kSource = CS_SOURCE_DIR;
const std::string kExample = (kSource / "configs/examples/serve-llama3-70b-azure.json").string();
// A short version of the example: the first 2,000 requests of the trace.
const std::vector<std::string> kShort = {"--set", "/requests/limit=2000"};

std::vector<std::string> args(std::vector<std::string> a) {
  a.insert(a.end(), kShort.begin(), kShort.end());
  return a;
}

TEST(ServeCommand, TableAndJson) {
  const auto t = cs::test::run_binary(kBinary, args({"serve", kExample}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* s : {"TTFT", "TPOT", "E2E", "throughput", "goodput", "availability"}) {
    EXPECT_NE(t.out.find(s), std::string::npos) << s;
  }
  // The whole trace (19,366 requests), so that the failure at 600 s happens.
  const auto r = cs::test::run_binary(kBinary, {"serve", kExample, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "clustersim-serving");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["requests"]["total"], 19366);
  EXPECT_EQ(j["requests"]["completed"], 19366);  // the retry policy loses nothing
  EXPECT_GT(j["requests"]["retried"].get<int>(), 0);
  EXPECT_EQ(j["deployment"]["gpus"], 16);
  EXPECT_EQ(j["replicas"].size(), 4U);
  EXPECT_GT(j["ttft_s"]["p99"].get<double>(), j["ttft_s"]["p50"].get<double>());
  EXPECT_GT(j["assumptions"].size(), 0U);
  // Replica 1 was down from 600 s to 1,200 s of a run of about 1,750 s.
  EXPECT_DOUBLE_EQ(j["replicas"][1]["down_s"].get<double>(), 600.0);
  EXPECT_NEAR(j["availability"].get<double>(), 1 - 600.0 / (4 * j["span_s"].get<double>()), 0.01);
}

TEST(ServeCommand, OutFolderIsDeterministic) {
  cs::test::TempDir dir("serve");
  const auto a = cs::test::run_binary(kBinary, args({"serve", kExample, "--out", (dir.path() / "a").string()}));
  const auto b = cs::test::run_binary(kBinary, args({"serve", kExample, "--out", (dir.path() / "b").string()}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  for (const char* f : {"summary.json", "requests.csv", "timeline.csv", "links.csv", "trace.json"}) {
    const std::string x = cs::test::read_text(dir.path() / "a" / f), y = cs::test::read_text(dir.path() / "b" / f);
    EXPECT_FALSE(x.empty()) << f;
    EXPECT_EQ(x, y) << f;
  }
  // One CSV row per request, the header first.
  std::istringstream csv(cs::test::read_text(dir.path() / "a" / "requests.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "id,arrival_s,prompt_tokens,output_tokens,replica,status,ttft_s,tpot_s,e2e_s,preemptions,retries,kv_transfer_s");
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 2000);
  const json trace = json::parse(cs::test::read_text(dir.path() / "a" / "trace.json"));
  EXPECT_GT(trace["traceEvents"].size(), 1000U);
}

TEST(ServeCommand, FindMaxRateBracketsTheSlo) {
  const auto r = cs::test::run_binary(kBinary, args({"serve", kExample, "--find-max-rate", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_FALSE(j["best"].is_null());
  // The best load met the SLO; some higher load tried did not; the bracket is within 1%.
  const double best = j["best"]["load"].get<double>();
  double lowest_fail = 1e9;
  for (const json& p : j["probes"]) {
    if (!p["meets_slo"].get<bool>()) lowest_fail = std::min(lowest_fail, p["load"].get<double>());
    if (p["meets_slo"].get<bool>()) {
      EXPECT_LE(p["ttft_p90_s"].get<double>(), 2.0);
      EXPECT_LE(p["tpot_p99_s"].get<double>(), 0.2);
    }
  }
  EXPECT_GT(lowest_fail, best);
  EXPECT_LE((lowest_fail - best) / best, 0.01);
}

TEST(ServeCommand, FindReplicas) {
  const auto r = cs::test::run_binary(kBinary, args({"serve", kExample, "--find-replicas", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_FALSE(j["best"].is_null());
  const int best = static_cast<int>(j["best"]["load"].get<double>());
  // One fewer replica (when tried) missed the SLO.
  for (const json& p : j["probes"]) {
    const int n = static_cast<int>(p["load"].get<double>());
    if (n == best - 1) {
      EXPECT_FALSE(p["meets_slo"].get<bool>());
    }
    if (n >= best) {
      EXPECT_TRUE(p["meets_slo"].get<bool>());
    }
  }
}

}  // namespace
