// A real calibration run on this machine's GPU (label gpu; CI runs `ctest -LE gpu`):
// `clustersim-calibrate --quick --sections launch,memory` must finish, write a profile that loads,
// whose points are ok and plausible, with the memory model and launch overhead fitted. Without a
// GPU (cudaGetDeviceCount fails or finds none) every test is skipped, saying why.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "calibration/profile.h"
#include "tests/calibration_gpu/run_calibrate.h"

namespace {

using cs::test::describe;
using cs::test::run_calibrate;

using cs::test::TempDir;

// "" when a GPU is there, else why not.
std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no CUDA GPU: cudaGetDeviceCount: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA GPU: cudaGetDeviceCount found 0 devices";
  return "";
}

class CalibrateGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(CalibrateGpu, QuickLaunchAndMemoryRunWritesAValidProfile) {
  TempDir dir("gpu");
  const std::string out = dir.file("quick.json");
  const std::vector<std::string> args = {"--quick", "--gpus", "1", "--sections", "launch,memory", "--out", out};
  const auto r = run_calibrate(args, {}, 600);
  ASSERT_EQ(r.exit_code, 0) << describe(args, r);

  const cs::cal::Profile p = cs::cal::load_profile(out);
  EXPECT_EQ(p.provenance.kind, "measured");
  EXPECT_TRUE(p.provenance.complete) << p.provenance.notes;
  EXPECT_TRUE(p.settings.quick);
  EXPECT_GE(p.settings.min_samples, 10);
  ASSERT_EQ(p.inventory.gpus.size(), 1u);
  EXPECT_GT(p.inventory.gpus[0].sm_count, 0);
  EXPECT_GT(p.inventory.gpus[0].memory.value(), 0);
  EXPECT_TRUE(p.gemm.empty());
  EXPECT_TRUE(p.collectives.empty());

  ASSERT_EQ(p.launch.size(), 1u);
  const auto& launch = p.launch[0];
  ASSERT_EQ(launch.status, cs::cal::PointStatus::kOk) << launch.error;
  ASSERT_TRUE(launch.timing.has_value());
  EXPECT_GT(cs::to_seconds(launch.timing->median), 0.0);
  EXPECT_LT(cs::to_seconds(launch.timing->median), 1e-4) << "an empty kernel launch takes microseconds";

  ASSERT_FALSE(p.memory.empty());
  for (const auto& m : p.memory) {
    ASSERT_EQ(m.status, cs::cal::PointStatus::kOk) << m.kernel << " " << m.bytes.value() << ": " << m.error;
    ASSERT_TRUE(m.timing.has_value());
    EXPECT_GE(m.timing->samples, 1);
    EXPECT_LE(m.timing->p10, m.timing->median);
    EXPECT_LE(m.timing->median, m.timing->p90);
    // No GPU moves more than 20 TB/s through its memory (the H200 is 4.8 TB/s).
    EXPECT_LT(m.bandwidth().value(), 20e12) << m.kernel << " " << m.bytes.value();
  }
  ASSERT_TRUE(p.models.memory.has_value());
  EXPECT_GT(p.models.memory->bandwidth.value(), 1e11);
  ASSERT_TRUE(p.models.launch_overhead.has_value());
}

}  // namespace
