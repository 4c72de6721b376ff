// `clustersim import chakra`, `run --trace` and `plan --emit-chakra` end to end (docs/chakra.md):
// the sample's counts, a replay without resource limits equal to the critical path, and a
// generated iteration exported, replayed and timed exactly as `run` times it.
#include <filesystem>
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
const std::string kSample = (kSource / "tests/data/chakra/sample").string();
const std::string kGpt = (kSource / "configs/examples/gpt-1.7b-32.json").string();

TEST(ChakraCommands, ImportTheSample) {
  cs::test::TempDir tmp("chakra_import");
  const std::string out = (tmp.path() / "g.json").string();
  const auto r = cs::test::run_binary(kBinary, {"import", "chakra", kSample, "--out", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["nodes"], 3664);
  EXPECT_EQ(report["by_type"]["COMP_NODE"], 3643);
  EXPECT_EQ(report["by_type"]["COMM_COLL_NODE"], 21);
  EXPECT_EQ(report["became"]["collectives"], 7);
  EXPECT_EQ(report["data_dependencies"], 181878);
  EXPECT_EQ(report["control_dependencies"], 3664);
  EXPECT_EQ(report["control_dependencies_enforced"], false);
  const json g = json::parse(cs::test::read_text(out));
  EXPECT_EQ(g["ops"].size(), 3664U);
  EXPECT_EQ(g["issue"], "ready_first");
  // The table says what became of the nodes.
  const auto t = cs::test::run_binary(kBinary, {"import", "chakra", kSample, "--out", out});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("2448 host ops and 1209 kernels as recorded"), std::string::npos) << t.out;
}

TEST(ChakraCommands, ReplayWithoutResourceLimitsIsTheCriticalPath) {
  // Recorded durations everywhere, each node issued when its data dependencies are done: the
  // sample's critical path, 46,140 us (tests/runtime/chakra_replay_test.cpp computes it).
  const auto r = cs::test::run_binary(kBinary, {"run", kGpt, "--trace", kSample, "--recorded-communication", "--issue", "dependencies", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["schema"], "clustersim-replay");
  EXPECT_EQ(s["iteration_time_ps"], 46'140'000'000LL);
  EXPECT_EQ(s["workload"]["import"]["nodes"], 3664);
}

TEST(ChakraCommands, AnExportedIterationReplaysInTheSameTime) {
  cs::test::TempDir tmp("chakra_export");
  const std::string dir = (tmp.path() / "gpt").string();
  const auto p = cs::test::run_binary(kBinary, {"plan", kGpt, "--emit-chakra", dir});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(fs::exists(dir + "/workload.31.et"));
  EXPECT_TRUE(fs::exists(dir + "/comm_groups.json"));
  const auto original = cs::test::run_binary(kBinary, {"run", kGpt, "--json"});
  ASSERT_EQ(original.exit_code, 0) << original.err;
  const std::string out = (tmp.path() / "replay").string();
  const auto replay = cs::test::run_binary(kBinary, {"run", kGpt, "--trace", dir + "/workload", "--comm-groups", dir + "/comm_groups.json", "--json", "--out", out});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const json a = json::parse(original.out), b = json::parse(replay.out);
  EXPECT_EQ(b["iteration_time_ps"], a["iteration_time_ps"]);
  EXPECT_EQ(b["gpus"], 32);
  EXPECT_EQ(b["simulated_ranks"], 32);
  EXPECT_EQ(b["issue_order"], "stream_order");
  for (const char* f : {"summary.json", "per_rank.csv", "links.csv", "trace.json"}) EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  // The report draws the replay folder as a run folder.
  const std::string page = (tmp.path() / "replay.html").string();
  const auto report = cs::test::run_binary(kBinary, {"report", out, "-o", page});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string html = cs::test::read_text(page);
  EXPECT_NE(html.find("replayed workload"), std::string::npos);
  EXPECT_NE(html.find("Stall breakdown"), std::string::npos);
  // The same folder again is refused without --force, and the export is all or nothing.
  const auto again = cs::test::run_binary(kBinary, {"plan", kGpt, "--emit-chakra", dir});
  EXPECT_EQ(again.exit_code, 2);
  const auto forced = cs::test::run_binary(kBinary, {"plan", kGpt, "--emit-chakra", dir, "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
}

}  // namespace
