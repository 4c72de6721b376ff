// clustersim-calibrate without a GPU (label cli): measuring exits 2 with one clear line and writes
// nothing; bad options exit 2 with one line; --refit recomputes a hand-written profile's models
// (tests/data/calibration/probe-small.json), deterministically, and refuses bad input with one
// line naming the file.
//
// The measuring cases hide every GPU (CUDA_VISIBLE_DEVICES=-1), so they behave the same on a
// machine that has one.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibration/profile.h"
#include "tests/calibration_gpu/run_calibrate.h"

namespace {

using cs::test::describe;
using cs::test::run_calibrate;

namespace fs = std::filesystem;
using cs::test::TempDir;

const std::string kFixture = std::string(CS_TEST_DATA_DIR) + "/calibration/probe-small.json";
const std::map<std::string, std::string> kNoGpu = {{"CUDA_VISIBLE_DEVICES", "-1"}};

bool folder_is_empty(const fs::path& p) { return fs::is_empty(p); }

// ---- measuring without a GPU ------------------------------------------------------------------

TEST(CalibrateCli, MeasuringWithoutAGpuExitsTwoWithOneLineAndWritesNothing) {
  TempDir dir("nogpu");
  const std::vector<std::string> args = {"--quick", "--out", dir.file("p.json")};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << describe(args, r);
#ifdef CS_HAVE_PROBE
  EXPECT_NE(r.err.find("clustersim-calibrate: no CUDA GPU found ("), std::string::npos) << r.err;
#else
  EXPECT_EQ(r.err, "clustersim-calibrate was built without CUDA/NCCL: only --refit is available\n");
#endif
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(folder_is_empty(dir.path()));
}

TEST(CalibrateCli, NoArgumentsMeansMeasureAndExitsTwoWithoutAGpu) {
  TempDir dir("noargs");
  const auto r = run_calibrate({"--out", dir.file("p.json")}, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe({}, r);
  EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_TRUE(folder_is_empty(dir.path()));
}

TEST(CalibrateCli, UnknownSectionIsOneLine) {
  const std::vector<std::string> args = {"--sections", "gemm,bogus"};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
#ifdef CS_HAVE_PROBE
  EXPECT_NE(r.err.find("--sections"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
#endif
}

TEST(CalibrateCli, BadMaxBytesIsOneLine) {
  const std::vector<std::string> args = {"--max-bytes", "12parsecs"};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
#ifdef CS_HAVE_PROBE
  EXPECT_NE(r.err.find("--max-bytes"), std::string::npos) << r.err;
#endif
}

TEST(CalibrateCli, NonPositiveTimeLimitIsRejected) {
  const std::vector<std::string> args = {"--time-limit", "-1"};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("command-line error"), std::string::npos) << r.err;
}

TEST(CalibrateCli, RefitTakesNoMeasuringOptions) {
  const std::vector<std::string> args = {"--refit", kFixture, "--quick"};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("command-line error"), std::string::npos) << r.err;
}

// Issue 12: --gpus beyond a server's 1,024 GPUs named a JSON path of the machine it built
// ("/servers/0/gpus") instead of the option; an empty value was ignored.
TEST(CalibrateCli, BadOptionValuesNameTheOption) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--gpus", "2000"}, std::vector<std::string>{"--gpus", "0"},
                                               std::vector<std::string>{"--out", ""}, std::vector<std::string>{"--refit", ""}}) {
    const auto r = run_calibrate(args, kNoGpu);
    EXPECT_EQ(r.exit_code, 2) << describe(args, r);
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("command-line error: " + args[0]), std::string::npos) << r.err;
  }
}

TEST(CalibrateCli, HelpAndVersion) {
  const auto help = run_calibrate({"--help"}, kNoGpu);
  EXPECT_EQ(help.exit_code, 0) << help.err;
  for (const char* opt : {"--quick", "--out", "--gpus", "--algos", "--sections", "--max-bytes", "--time-limit", "--refit"}) {
    EXPECT_NE(help.out.find(opt), std::string::npos) << opt;
  }
  const auto version = run_calibrate({"--version"}, kNoGpu);
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("clustersim-calibrate 0.1.0 (probe: "), std::string::npos) << version.out;
}

// ---- --refit ------------------------------------------------------------------------------------

TEST(CalibrateRefit, RecomputesTheModelsFromThePoints) {
  TempDir dir("refit");
  const std::string in = dir.file("in.json");
  const std::string out = dir.file("out.json");
  fs::copy_file(kFixture, in);
  const std::string before = cs::test::read_text(in);
  const std::vector<std::string> args = {"--refit", in, "--out", out};
  const auto r = run_calibrate(args, kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << describe(args, r);
  EXPECT_EQ(cs::test::read_text(in), before) << "--out given: the input stays as it was";

  const cs::cal::Profile src = cs::cal::load_profile(in);
  const cs::cal::Profile p = cs::cal::load_profile(out);
  EXPECT_TRUE(src.models.gemm.empty()) << "the fixture carries no models";
  EXPECT_FALSE(p.provenance.refit.empty());
  EXPECT_EQ(p.provenance.created, src.provenance.created);
  EXPECT_EQ(p.gemm.size(), src.gemm.size());
  EXPECT_EQ(p.collectives.size(), src.collectives.size());

  // GEMM: bf16's best rate is its best point, 8192^3 at 785 TFLOP/s (the failed fp8 point gives no model).
  ASSERT_FALSE(p.models.gemm.empty());
  const auto bf16 = std::find_if(p.models.gemm.begin(), p.models.gemm.end(), [](const auto& g) { return g.dtype == "bf16"; });
  ASSERT_NE(bf16, p.models.gemm.end());
  EXPECT_NEAR(bf16->best.value(), 7.85e14, 7.85e14 * 1e-6);
  EXPECT_EQ(bf16->table.size(), 6u);
  for (const auto& g : p.models.gemm) EXPECT_NE(g.dtype, "fp8");
  // Memory: the points lie on t = 3 us + B / 4.2 TB/s.
  ASSERT_TRUE(p.models.memory.has_value());
  EXPECT_NEAR(p.models.memory->bandwidth.value(), 4.2e12, 4.2e12 * 1e-3);
  EXPECT_NEAR(cs::to_seconds(p.models.memory->t0), 3e-6, 3e-9);
  ASSERT_TRUE(p.models.launch_overhead.has_value());
  EXPECT_NEAR(cs::to_seconds(*p.models.launch_overhead), 2.4e-6, 1e-12);
  ASSERT_TRUE(p.models.overlap_slowdown.has_value());
  EXPECT_NEAR(*p.models.overlap_slowdown, 1.52 / 1.4, 1e-9);
  // Collectives: NCCL's protocol changes at 64 KiB (LL -> Simple): two segments.
  ASSERT_EQ(p.models.collectives.size(), 2u);
  EXPECT_FALSE(p.models.network.empty());
}

TEST(CalibrateRefit, InPlaceWithoutOut) {
  TempDir dir("inplace");
  const std::string in = dir.file("p.json");
  fs::copy_file(kFixture, in);
  const auto r = run_calibrate({"--refit", in}, kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << describe({"--refit", in}, r);
  const cs::cal::Profile p = cs::cal::load_profile(in);
  EXPECT_FALSE(p.provenance.refit.empty());
  EXPECT_FALSE(p.models.gemm.empty());
  // Nothing else is left in the folder (the write is atomic: no temporary file stays behind).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(CalibrateRefit, SamePointsGiveTheSameModels) {
  TempDir dir("determinism");
  fs::copy_file(kFixture, dir.file("in.json"));
  const auto a = run_calibrate({"--refit", dir.file("in.json"), "--out", dir.file("a.json")}, kNoGpu);
  const auto b = run_calibrate({"--refit", dir.file("in.json"), "--out", dir.file("b.json")}, kNoGpu);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(cs::cal::to_json(cs::cal::load_profile(dir.file("a.json"))).at("models"),
            cs::cal::to_json(cs::cal::load_profile(dir.file("b.json"))).at("models"));
}

TEST(CalibrateRefit, MissingFileIsOneLineNamingIt) {
  TempDir dir("missing");
  const std::string missing = dir.file("nope.json");
  const auto r = run_calibrate({"--refit", missing}, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe({"--refit", missing}, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
  EXPECT_TRUE(folder_is_empty(dir.path()));
}

TEST(CalibrateRefit, OtherSchemaVersionIsOneLineNamingFileAndPath) {
  // The fixture with schema_version 2, written beside the (empty) output folder.
  TempDir dir("version"), input("version-input");
  nlohmann::json j = nlohmann::json::parse(cs::test::read_text(kFixture));
  j["schema_version"] = 2;
  const std::string bad = input.file("probe-bad-version.json");
  std::ofstream(bad) << j.dump(1);
  const std::vector<std::string> args = {"--refit", bad, "--out", dir.file("out.json")};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("probe-bad-version.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/schema_version"), std::string::npos) << r.err;
  EXPECT_TRUE(folder_is_empty(dir.path()));
}

TEST(CalibrateRefit, UnwritableOutputIsOneLine) {
  TempDir dir("unwritable");
  const std::string out = dir.file("no-such-folder/out.json");
  const std::vector<std::string> args = {"--refit", kFixture, "--out", out};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
}

}  // namespace

// ---- synthetic profiles ----------------------------------------------------------------------

TEST(CalibrateCli, SyntheticProfilesMovedToTheSimulatorAndTheOptionSaysWhere) {
  // The calibration tool knows nothing of the simulator; `clustersim profile synthetic` makes
  // them (tests/cli/cli_test.cpp). The old option is one line naming the new command.
  TempDir dir("synthetic");
  const std::vector<std::string> args = {"--synthetic", "H100-SXM", "--out", dir.file("p.json")};
  const auto r = run_calibrate(args, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("clustersim profile synthetic H100-SXM"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("p.json")));
}
