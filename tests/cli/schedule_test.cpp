// `clustersim schedule` end to end (docs/scheduling.md): the table, the JSON schema, the --out
// folder and its determinism, a trace with a rejection.
#include <filesystem>
#include <fstream>
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
const std::string kLeafSpine = (kSource / "configs/examples/schedule-leafspine-2to1.json").string();
const std::string kAlibaba = (kSource / "configs/examples/schedule-alibaba-2023.json").string();
const std::vector<std::string> kShort = {"--set", "/jobs/count=120"};

std::vector<std::string> args(std::vector<std::string> a) {
  a.insert(a.end(), kShort.begin(), kShort.end());
  return a;
}

TEST(ScheduleCommand, TableAndJson) {
  const auto t = cs::test::run_binary(kBinary, args({"schedule", kLeafSpine}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* s : {"JCT", "wait", "slowdown", "makespan", "GPU utilization", "tier 2", "assumed"}) {
    EXPECT_NE(t.out.find(s), std::string::npos) << s;
  }
  const auto r = cs::test::run_binary(kBinary, args({"schedule", kLeafSpine, "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "clustersim-schedule");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["gpus"], 1024);
  EXPECT_EQ(j["leaf_groups"], 32);
  EXPECT_EQ(j["jobs"]["total"], 120);
  EXPECT_EQ(j["jobs"]["completed"], 120);
  EXPECT_GE(j["slowdown"]["p50"].get<double>(), 1.0);
  EXPECT_GE(j["jct_s"]["p99"].get<double>(), j["jct_s"]["p50"].get<double>());
  EXPECT_EQ(j["users"].size(), 4U);
  double share = 0;
  for (const json& u : j["users"]) share += u["gpu_share"].get<double>();
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_GT(j["network_tiers"].size(), 0U);
}

TEST(ScheduleCommand, OutFolderIsCompleteAndDeterministic) {
  cs::test::TempDir dir("schedule");
  const auto a = cs::test::run_binary(kBinary, args({"schedule", kLeafSpine, "--out", (dir.path() / "a").string()}));
  const auto b = cs::test::run_binary(kBinary, args({"schedule", kLeafSpine, "--out", (dir.path() / "b").string()}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  for (const char* f : {"summary.json", "jobs.csv", "timeline.csv", "links.csv", "trace.json"}) {
    EXPECT_EQ(cs::test::read_text(dir.path() / "a" / f), cs::test::read_text(dir.path() / "b" / f)) << f;
  }
  // jobs.csv: a header and one row per job; trace.json parses with a span per job.
  const std::string jobs = cs::test::read_text(dir.path() / "a" / "jobs.csv");
  EXPECT_EQ(std::count(jobs.begin(), jobs.end(), '\n'), 121);
  const json trace = json::parse(cs::test::read_text(dir.path() / "a" / "trace.json"));
  int spans = 0;
  for (const json& e : trace["traceEvents"]) spans += e["ph"] == "X";
  EXPECT_EQ(spans, 120);
  EXPECT_EQ(cs::test::read_text(dir.path() / "a" / "links.csv").rfind("src,dst,tier,bytes,utilization,shared_s,max_jobs\n", 0), 0U);
}

TEST(ScheduleCommand, ATraceJobThatCanNeverFitIsReportedNotFatal) {
  cs::test::TempDir dir("schedule_reject");
  std::ofstream(dir.path() / "jobs.csv") << "id,arrival_s,gpus,duration_s,user\nsmall,0,8,60,ann\nhuge,5,4096,60,bob\nnext,10,8,60,ann\n";
  std::ofstream(dir.path() / "s.json") << R"({"cluster": "dgx-h100", "jobs": {"trace": "jobs.csv"}})";
  const auto r = cs::test::run_binary(kBinary, {"schedule", (dir.path() / "s.json").string(), "--out", (dir.path() / "o").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 completed, 1 rejected"), std::string::npos) << r.out;
  const std::string jobs = cs::test::read_text(dir.path() / "o" / "jobs.csv");
  EXPECT_NE(jobs.find("huge,,bob,0,4096,1000,rejected"), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("4096 GPUs requested; the cluster has 8"), std::string::npos) << jobs;
}

TEST(ScheduleCommand, AlibabaExampleRuns) {
  const auto r = cs::test::run_binary(kBinary, {"schedule", kAlibaba, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["jobs"]["total"], 6203);
  EXPECT_EQ(j["jobs"]["skipped_rows"], 1949);
  EXPECT_EQ(j["gpus"], 287);
}

}  // namespace
