// The sweep file (drivers/sweep.h) and its rows (results/sweep_row.h): the order of the points
// (first axis slowest, zipped axes together, explicit points as written), the targets of the
// parameters, and the row encodings (CSV quoting, JSON Lines keys) that resume and merge rely on.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "drivers/sweep.h"
#include "drivers/sweep_output.h"
#include "results/sweep_row.h"
#include "tests/support/temp_dir.h"

namespace {

using cs::drv::load_sweep;
using cs::drv::Sweep;
using cs::drv::SweepTarget;
using cs::results::RowFormat;
using nlohmann::json;

const json kExperiment = json::parse(R"({"cluster": "a100-superpod", "cluster_overrides": ["/servers/0/count=4"], "model": "gpt-1.7b",
  "plan": {"dp": 32, "tp": 1, "pp": 1, "micro_batch": 16, "global_batch": 512, "sequence_length": 2048, "recompute": "full"}})");

Sweep sweep_of(const cs::test::TempDir& dir, json body) {
  body["experiment"] = kExperiment;
  const std::string path = (dir.path() / "sweep.json").string();
  std::ofstream(path) << body.dump();
  return load_sweep(path);
}

TEST(SweepSpec, TheFirstAxisVariesSlowestAndZippedAxesMoveTogether) {
  cs::test::TempDir dir("sweep_spec");
  const Sweep s = sweep_of(dir, json::parse(R"({"axes": [
    {"set": "/plan/tp", "values": [1, 2]},
    {"zip": [{"set": "/plan/dp", "values": [32, 16, 8]}, {"set": "/plan/global_batch", "name": "batch", "values": [512, 256, 128]}]},
    {"set": "cluster:/fabric/oversubscription", "values": [1, 2]}]})"));
  ASSERT_EQ(s.points.size(), 12u);
  EXPECT_EQ(s.columns(), (std::vector<std::string>{"/plan/tp", "/plan/dp", "batch", "cluster:/fabric/oversubscription"}));
  EXPECT_EQ(s.parameters[3].target, SweepTarget::kCluster);
  EXPECT_EQ(s.parameters[3].pointer, "/fabric/oversubscription");
  EXPECT_EQ(s.points[0], (std::vector<json>{1, 32, 512, 1}));
  EXPECT_EQ(s.points[1], (std::vector<json>{1, 32, 512, 2}));
  EXPECT_EQ(s.points[2], (std::vector<json>{1, 16, 256, 1}));
  EXPECT_EQ(s.points[11], (std::vector<json>{2, 8, 128, 2}));
  // The point's experiment: the base with its values, the cluster's as overrides.
  const cs::drv::Experiment e = cs::drv::sweep_point_experiment(s, 11);
  EXPECT_EQ(e.plan.tp, 2);
  EXPECT_EQ(e.plan.dp, 8);
  EXPECT_EQ(e.plan.global_batch, 128);
  EXPECT_EQ(e.cluster_overrides.back(), "/fabric/oversubscription=2");
}

TEST(SweepSpec, ExplicitPointsKeepTheirOrder) {
  cs::test::TempDir dir("sweep_points");
  const Sweep s = sweep_of(dir, json::parse(R"({"points": [{"/plan/tp": 4, "/plan/dp": 8}, {"/plan/dp": 32, "/plan/tp": 1}]})"));
  ASSERT_EQ(s.points.size(), 2u);
  // The columns in the order of the parameters' names (a JSON object's keys have no order).
  EXPECT_EQ(s.columns(), (std::vector<std::string>{"/plan/dp", "/plan/tp"}));
  EXPECT_EQ(s.points[0], (std::vector<json>{8, 4}));
  EXPECT_EQ(s.points[1], (std::vector<json>{32, 1}));
}

TEST(SweepSpec, ABadValueIsTheSweepFilesErrorAtItsPath) {
  cs::test::TempDir dir("sweep_bad");
  try {
    sweep_of(dir, json::parse(R"({"axes": [{"set": "/plan/recompute", "values": ["full", "sometimes"]}]})"));
    FAIL() << "accepted a recompute the experiment refuses";
  } catch (const cs::ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/axes/0/values/1");
    EXPECT_NE(std::string(e.what()).find("sweep.json"), std::string::npos) << e.what();
  }
  // Objects a pointer needs are created: the base has no "options"; an unknown one is refused.
  EXPECT_NO_THROW(sweep_of(dir, json::parse(R"({"axes": [{"set": "/options/symmetry", "values": [true, false]}]})")));
  try {
    sweep_of(dir, json::parse(R"({"axes": [{"set": "/parallelism/tp", "values": [2]}]})"));
    FAIL() << "accepted a key the experiment format does not have";
  } catch (const cs::ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/axes/0/values/0");
    EXPECT_NE(std::string(e.what()).find("unknown key \"parallelism\""), std::string::npos) << e.what();
  }
  // A value that only fails in combination is the point's, not the file's: dp 64 needs 64 GPUs.
  EXPECT_NO_THROW(sweep_of(dir, json::parse(R"({"axes": [{"set": "/plan/dp", "values": [32, 64]}]})")));
}

TEST(SweepRow, CsvQuotesWhatNeedsItAndRowsStartWithTheirKey) {
  const std::vector<std::string> params{"/cluster", "/plan/tp"};
  const std::vector<json> values{"my,cluster \"x\"", 2};
  const std::string key = cs::results::sweep_row_key(RowFormat::kCsv, 7, params, values);
  EXPECT_EQ(key, "7,\"my,cluster \"\"x\"\"\",2");
  const std::string row = key + cs::results::sweep_row_rest(RowFormat::kCsv, cs::results::sweep_failure_cells(cs::results::PointStatus::kInvalid, "bad, very"));
  EXPECT_EQ(row.back(), '\n');
  EXPECT_TRUE(cs::results::is_whole_sweep_row(RowFormat::kCsv, row.substr(0, row.size() - 1), params.size()));
  EXPECT_FALSE(cs::results::is_whole_sweep_row(RowFormat::kCsv, row.substr(0, row.size() / 2), params.size()));
  const std::string header = cs::results::sweep_header(RowFormat::kCsv, params);
  EXPECT_EQ(header.rfind("point,/cluster,/plan/tp,status,reason,", 0), 0u);

  const std::string jkey = cs::results::sweep_row_key(RowFormat::kJsonLines, 7, params, values);
  const std::string jrow = jkey + cs::results::sweep_row_rest(RowFormat::kJsonLines, cs::results::sweep_failure_cells(cs::results::PointStatus::kOutOfMemory, "r"));
  const json parsed = json::parse(jrow);
  EXPECT_EQ(parsed["point"], 7);
  EXPECT_EQ(parsed["/cluster"], values[0]);
  EXPECT_EQ(parsed["status"], "out_of_memory");
  EXPECT_TRUE(parsed["iteration_time_s"].is_null());
  EXPECT_EQ(parsed.size(), 1 + params.size() + cs::results::sweep_result_columns().size());
}

TEST(SweepResultsFile, WritesRowsInOrderWhateverOrderTheyFinish) {
  cs::test::TempDir dir("sweep_file");
  const std::string path = (dir.path() / "r.jsonl").string();
  std::vector<std::string> keys;
  for (int k = 0; k < 4; ++k) keys.push_back("{\"point\":" + std::to_string(k));
  {
    cs::drv::SweepResultsFile out(path, RowFormat::kJsonLines, "", 0, keys, cs::drv::SweepResultsFile::Mode::kFresh, "--out");
    const auto row = [&](int k) { return keys[static_cast<std::size_t>(k)] + ",\"x\":1}\n"; };
    out.put(2, row(2));
    out.put(1, row(1));
    EXPECT_EQ(out.written(), 0u);  // row 0 is not there yet
    out.put(0, row(0));
    EXPECT_EQ(out.written(), 3u);
    out.put(3, row(3));
  }
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"point\":0,\"x\":1}\n{\"point\":1,\"x\":1}\n{\"point\":2,\"x\":1}\n{\"point\":3,\"x\":1}\n");
}

}  // namespace
