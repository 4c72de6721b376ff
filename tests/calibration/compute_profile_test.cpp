// The compute model with a calibration profile: GEMM ops at the rate the profile gives their
// shapes, memory-bound ops on the fitted line, the measured launch overhead and overlap
// slowdown, and a tally of where each value came from.
#include <gtest/gtest.h>

#include "calibration/profile_model.h"
#include "sim/compute/compute_model.h"
#include "tests/collectives/test_clusters.h"

namespace cs::compute {
namespace {

using cal::EstimateProvenance;

// A profile with two exact GEMM shapes, a memory line 2 us + B / 2 TB/s over 1 KiB..1 GiB, a 3 us
// launch and a 1.25x overlap slowdown.
std::shared_ptr<const cal::ProfileModel> profile() {
  cal::Profile p;
  cal::GemmModel g;
  g.dtype = "bf16";
  g.best = teraflops_per_second(500);
  g.t0 = microseconds(5);
  g.rate = teraflops_per_second(400);
  g.table = {{1024, 1024, 1024, teraflops_per_second(200)}, {8192, 8192, 8192, teraflops_per_second(500)}};
  p.models.gemm = {g};
  cal::MemoryModel m;
  m.t0 = microseconds(2);
  m.bandwidth = bytes_per_second(2e12);
  m.min_bytes = kibibytes(1);
  m.max_bytes = gibibytes(1);
  p.models.memory = m;
  p.models.launch_overhead = microseconds(3);
  p.models.overlap_slowdown = 1.25;
  return std::make_shared<const cal::ProfileModel>(std::move(p));
}

constexpr int kMeasured = static_cast<int>(EstimateProvenance::kMeasured);
constexpr int kExtrapolated = static_cast<int>(EstimateProvenance::kExtrapolated);
constexpr int kNominal = static_cast<int>(EstimateProvenance::kNominal);

TEST(ComputeWithProfile, GemmOpsRunAtTheRateOfTheirShapes) {
  const hw::GpuSpec gpu = testing::round_gpu();
  const ComputeModel cm("bf16", profile());
  // A mix of one small and one large shape: rate = total FLOPs / total time.
  const tg::GemmShape mix[] = {{1024, 1024, 1024}, {8192, 8192, 8192}};
  const double f_small = 2.0 * 1024 * 1024 * 1024, f_large = 2.0 * 8192 * 8192 * 8192;
  const double rate = (f_small + f_large) / (f_small / 200e12 + f_large / 500e12);
  // The op's FLOPs are half the mix's (a piece between two TP collectives).
  const Flops op{(f_small + f_large) / 2};
  const Duration t = cm.time(gpu, tg::ComputeClass::kGemm, op, Bytes{0}, mix);
  EXPECT_NEAR(to_seconds(t), 3e-6 + op.value() / rate, 1e-11);
  EXPECT_EQ(cm.tally().gemm[kMeasured], 1);
  EXPECT_EQ(cm.tally().launch[kMeasured], 1);
  // Without shapes: the curve t0 + F / rate, extrapolated.
  const Duration c = cm.time(gpu, tg::ComputeClass::kGemm, flops(4e12), Bytes{0});
  EXPECT_NEAR(to_seconds(c), 3e-6 + 5e-6 + 4e12 / 400e12, 1e-11);
  EXPECT_EQ(cm.tally().gemm[kExtrapolated], 1);
}

TEST(ComputeWithProfile, MemoryLaunchAndOverlapComeFromTheProfile) {
  const hw::GpuSpec gpu = testing::round_gpu();
  const ComputeModel cm("bf16", profile());
  const Duration t = cm.time(gpu, tg::ComputeClass::kElementwise, Flops{0}, mebibytes(64));
  EXPECT_NEAR(to_seconds(t), 3e-6 + 2e-6 + 64.0 * 1024 * 1024 / 2e12, 1e-12);
  EXPECT_EQ(cm.tally().memory[kMeasured], 1);
  const Duration beyond = cm.time(gpu, tg::ComputeClass::kElementwise, Flops{0}, gibibytes(4));
  EXPECT_GT(beyond, t);
  EXPECT_EQ(cm.tally().memory[kExtrapolated], 1);
  EXPECT_DOUBLE_EQ(cm.overlap_slowdown(gpu), 1.25);
  EXPECT_EQ(cm.tally().overlap[kMeasured], 1);
  // Fused attention has no profile model: the catalog's efficiency, counted as nominal when it
  // is a GEMM and not counted otherwise.
  const Duration a = cm.time(gpu, tg::ComputeClass::kAttention, flops(1e12), Bytes{0});
  EXPECT_NEAR(to_seconds(a), 3e-6 + 1e12 / (100e12 * 0.5), 1e-11);
  EXPECT_EQ(cm.tally().gemm[kNominal], 0);
}

TEST(ComputeWithProfile, WithoutAProfileNothingChangesAndNothingIsCounted) {
  const hw::GpuSpec gpu = testing::round_gpu();
  const ComputeModel plain("bf16");
  const tg::GemmShape mix[] = {{1024, 1024, 1024}};
  // The catalog roofline: 1e12 FLOP at 100 TFLOP/s x 0.5; no launch cost in the test GPU.
  EXPECT_DOUBLE_EQ(to_seconds(plain.time(gpu, tg::ComputeClass::kGemm, flops(1e12), Bytes{0}, mix)), 0.02);
  EXPECT_EQ(plain.tally().gemm[kMeasured] + plain.tally().gemm[kNominal], 0);
  EXPECT_DOUBLE_EQ(plain.overlap_slowdown(gpu), gpu.roofline.overlap_slowdown);
}

}  // namespace
}  // namespace cs::compute
