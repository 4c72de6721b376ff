// `clustersim sweep` end to end, on the real binary (docs/cli.md, "sweep"). The 200-point
// sweep (tests/data/sweep/gpt-200.json) runs in the Slow tests (minutes under the sanitizers); a
// 12-point one (gpt-small.json) runs the same paths everywhere:
//  - the same bytes with --jobs 1 and --jobs 2, in CSV and JSON Lines;
//  - killed with SIGKILL halfway and resumed, every point appears exactly once and the file
//    equals the uninterrupted one; a torn last line is cut and redone;
//  - two --shard halves merged, and `mpirun -n 2` (when built with MPI), give the same file;
//  - the rows are the runs: an ok row's iteration time is `clustersim run`'s for that point, and
//    invalid and out-of-memory points are rows with a reason, not a failed sweep.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"

namespace {

namespace fs = std::filesystem;
using cs::test::TempDir;

const std::string kBinary = CS_CLUSTERSIM_BIN;
const std::string kSweep = std::string(CS_TEST_DATA_DIR) + "/sweep/gpt-200.json";
const std::string kSmall = std::string(CS_TEST_DATA_DIR) + "/sweep/gpt-small.json";

cs::test::RunResult clustersim(const std::vector<std::string>& args) { return cs::test::run_binary(kBinary, args); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Runs the sweep (the 200-point one unless `sweep` says) into `out` with extra arguments; asserts
// success.
std::string sweep_into(const fs::path& out, std::vector<std::string> extra = {}, const std::string& sweep = kSweep) {
  std::vector<std::string> args{"sweep", sweep, "--out", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = clustersim(args);
  EXPECT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
  return cs::test::read_text(out);
}

TEST(SlowSweep, SameBytesForAnyJobsInBothFormats) {
  TempDir dir("sweep_jobs");
  const std::string one = sweep_into(dir.path() / "one.csv", {"--jobs", "1"});
  const std::string two = sweep_into(dir.path() / "two.csv", {"--jobs", "2"});
  EXPECT_EQ(one, two);
  const std::vector<std::string> rows = lines_of(one);
  ASSERT_EQ(rows.size(), 201u);  // the header and 200 points, in order
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].rfind(std::to_string(i - 1) + ",", 0), 0u) << rows[i];

  const std::string jl1 = sweep_into(dir.path() / "one.jsonl", {"--jobs", "1"});
  const std::string jl2 = sweep_into(dir.path() / "two.jsonl", {"--jobs", "2"});
  EXPECT_EQ(jl1, jl2);
  const std::vector<std::string> jrows = lines_of(jl1);
  ASSERT_EQ(jrows.size(), 200u);
  std::set<std::string> statuses;
  for (std::size_t i = 0; i < jrows.size(); ++i) {
    const nlohmann::json row = nlohmann::json::parse(jrows[i]);
    EXPECT_EQ(row["point"], i);
    statuses.insert(row["status"].get<std::string>());
    if (row["status"] == "ok") {
      EXPECT_TRUE(row["reason"].is_null());
      EXPECT_GT(row["iteration_time_s"].get<double>(), 0);
      EXPECT_EQ(row["gpus"], row["/plan/tp"].get<int>() * row["/plan/pp"].get<int>() * row["/plan/dp"].get<int>());
    } else {
      EXPECT_FALSE(row["reason"].get<std::string>().empty());
      EXPECT_TRUE(row["iteration_time_s"].is_null());
    }
  }
  // Plans that need more than the 32 GPUs, and micro-batches that do not fit without recomputation.
  EXPECT_EQ(statuses, (std::set<std::string>{"invalid", "ok", "out_of_memory"}));
}

TEST(SlowSweep, KilledHalfwayAndResumedEqualsTheUninterruptedFile) {
  TempDir dir("sweep_kill");
  const std::string whole = sweep_into(dir.path() / "whole.csv");
  const fs::path out = dir.path() / "killed.csv";
  const pid_t pid = cs::test::spawn_binary(kBinary, {"sweep", kSweep, "--out", out.string()}, "/dev/null", "/dev/null");
  ASSERT_GT(pid, 0);
  // Kill it once about half the rows are there.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(out) && lines_of(cs::test::read_text(out)).size() >= 100) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  const std::size_t rows_at_kill = lines_of(cs::test::read_text(out)).size();
  EXPECT_LT(rows_at_kill, 201u);
  EXPECT_GE(rows_at_kill, 100u);

  // Without --resume the file is refused and left as it was.
  const std::string before = cs::test::read_text(out);
  const auto refused = clustersim({"sweep", kSweep, "--out", out.string()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--resume"), std::string::npos) << refused.err;
  EXPECT_EQ(cs::test::read_text(out), before);

  const auto resumed = clustersim({"sweep", kSweep, "--out", out.string(), "--resume", "--jobs", "2"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("already in"), std::string::npos) << resumed.out;
  const std::string after = cs::test::read_text(out);
  EXPECT_EQ(after, whole);
  std::set<std::string> points;
  for (const std::string& row : lines_of(after)) EXPECT_TRUE(points.insert(row.substr(0, row.find(','))).second) << row;
  EXPECT_EQ(points.size(), 201u);

  // A torn last line (a crash in the middle of a write) is cut and its point redone.
  {
    std::ofstream torn(out, std::ios::binary | std::ios::trunc);
    torn << whole.substr(0, whole.size() / 2 + 7);
  }
  ASSERT_EQ(clustersim({"sweep", kSweep, "--out", out.string(), "--resume"}).exit_code, 0);
  EXPECT_EQ(cs::test::read_text(out), whole);
  // Resuming a finished file runs nothing and changes nothing.
  const auto again = clustersim({"sweep", kSweep, "--out", out.string(), "--resume"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("ran 0"), std::string::npos) << again.out;
  EXPECT_EQ(cs::test::read_text(out), whole);
}

TEST(SlowSweep, ShardsMergedEqualOneRun) {
  TempDir dir("sweep_shard");
  const std::string whole = sweep_into(dir.path() / "whole.csv");
  const fs::path a = dir.path() / "a.csv", b = dir.path() / "b.csv", c = dir.path() / "c.csv", merged = dir.path() / "merged.csv";
  sweep_into(a, {"--shard", "1/3"});
  sweep_into(b, {"--shard", "2/3"});
  sweep_into(c, {"--shard", "3/3"});
  EXPECT_EQ(lines_of(cs::test::read_text(a)).size(), 1u + 67u);  // points 0, 3, ..., 198
  const auto r = clustersim({"sweep", "merge", kSweep, c.string(), a.string(), b.string(), "--out", merged.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(cs::test::read_text(merged), whole);
  // A missing shard is an error that says which points, and nothing is written.
  const fs::path partial = dir.path() / "partial.csv";
  const auto missing = clustersim({"sweep", "merge", kSweep, a.string(), b.string(), "--out", partial.string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("66 of the sweep's 200 points are in no part (points 2, 5, 8"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(partial));
}

TEST(Sweep, MpirunGivesTheSameFile) {
#ifndef CS_MPIEXEC
  // CI (.ci/run) sets CS_REQUIRE_MPI: there the test must run.
  if (std::getenv("CS_REQUIRE_MPI") != nullptr) FAIL() << "CS_REQUIRE_MPI is set but clustersim was built without MPI";
  GTEST_SKIP() << "clustersim was built without MPI";
#else
  TempDir dir("sweep_mpi");
  const std::string whole = sweep_into(dir.path() / "whole.csv");
  const fs::path out = dir.path() / "mpi.csv";
  const std::vector<std::string> args{"-n", "2", "--oversubscribe", kBinary, "sweep", kSweep, "--out", out.string()};
  const auto r = cs::test::run_binary(CS_MPIEXEC, args, {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
  ASSERT_EQ(r.exit_code, 0) << cs::test::describe(CS_MPIEXEC, args, r);
  EXPECT_EQ(cs::test::read_text(out), whole);
  EXPECT_NE(r.out.find("ran 200: "), std::string::npos) << r.out;
#endif
}

TEST(Sweep, SmallSweepJobsTornLineShardsAndStatuses) {
  TempDir dir("sweep_small");
  const std::string one = sweep_into(dir.path() / "one.csv", {}, kSmall);
  EXPECT_EQ(sweep_into(dir.path() / "two.csv", {"--jobs", "2"}, kSmall), one);
  const std::vector<std::string> rows = lines_of(one);
  ASSERT_EQ(rows.size(), 13u);
  std::set<std::string> statuses;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].rfind(std::to_string(i - 1) + ",", 0), 0u) << rows[i];
    for (const char* s : {",ok,", ",invalid,", ",out_of_memory,"}) {
      if (rows[i].find(s) != std::string::npos) statuses.insert(s);
    }
  }
  EXPECT_EQ(statuses.size(), 3u);
  // A torn last line is cut and its point redone.
  const fs::path torn = dir.path() / "torn.csv";
  std::ofstream(torn, std::ios::binary) << one.substr(0, one.size() / 2 + 5);
  ASSERT_EQ(clustersim({"sweep", kSmall, "--out", torn.string(), "--resume", "--jobs", "2"}).exit_code, 0);
  EXPECT_EQ(cs::test::read_text(torn), one);
  // Two shards merged, in JSON Lines.
  const std::string jl = sweep_into(dir.path() / "one.jsonl", {}, kSmall);
  sweep_into(dir.path() / "a.jsonl", {"--shard", "1/2"}, kSmall);
  sweep_into(dir.path() / "b.jsonl", {"--shard", "2/2"}, kSmall);
  const fs::path merged = dir.path() / "merged.jsonl";
  ASSERT_EQ(clustersim({"sweep", "merge", kSmall, (dir.path() / "b.jsonl").string(), (dir.path() / "a.jsonl").string(), "--out", merged.string()}).exit_code, 0);
  EXPECT_EQ(cs::test::read_text(merged), jl);
}

TEST(Sweep, AnOkRowIsTheRunOfItsPoint) {
  TempDir dir("sweep_run");
  const fs::path out = dir.path() / "rows.jsonl";
  sweep_into(out, {}, kSmall);
  int checked = 0;
  for (const std::string& line : lines_of(cs::test::read_text(out))) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row["status"] != "ok") continue;
    // The same point as a plain run: the sweep's experiment written out with the point's values.
    nlohmann::json experiment = nlohmann::json::parse(cs::test::read_text(kSmall))["experiment"];
    experiment["plan"]["tp"] = row["/plan/tp"];
    experiment["plan"]["dp"] = row["/plan/dp"];
    experiment["plan"]["micro_batch"] = row["micro_batch"];
    const fs::path file = dir.path() / "point.json";
    std::ofstream(file) << experiment.dump();
    const auto run = clustersim({"run", file.string(), "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const nlohmann::json summary = nlohmann::json::parse(run.out);
    EXPECT_EQ(summary["iteration_time_s"], row["iteration_time_s"]);
    EXPECT_EQ(summary["mfu"], row["mfu"]);
    EXPECT_EQ(summary["memory_bytes"]["total"], row["memory_per_gpu_bytes"]);
    EXPECT_EQ(summary["stalls_s"]["exposed_dp"], row["exposed_dp_s"]);
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST(Sweep, DryRunListsThePointsOfAShard) {
  const auto r = clustersim({"sweep", kSweep, "--dry-run", "--json", "--shard", "2/100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["points"], 200);
  ASSERT_EQ(j["run"].size(), 2u);  // points 1 and 101
  EXPECT_EQ(j["run"][1]["point"], 101);
  // Point 101 = tp index 2 (4), micro-batch index 0 (1), pp index 0 (1), dp index 1 (2): the first axis varies slowest.
  EXPECT_EQ(j["run"][1]["/plan/tp"], 4);
  EXPECT_EQ(j["run"][1]["micro_batch"], 1);
  EXPECT_EQ(j["run"][1]["/plan/pp"], 1);
  EXPECT_EQ(j["run"][1]["/plan/dp"], 2);
}

}  // namespace
