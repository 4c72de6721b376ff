// What-ifs on one sourced value (drivers/perturbation.h): scaled values as written, and factors
// kept inside the value's domain (an efficiency is at most 1).
#include "drivers/perturbation.h"

#include <gtest/gtest.h>

namespace cs::drv {
namespace {

SourcedFact fact(const std::string& path, const std::string& value) {
  SourcedFact f;
  f.path = path;
  f.file = "configs/collectives/nccl-protocol.json";
  f.value = value;
  f.kind = "assumed";
  return f;
}

TEST(Perturbation, AnEfficiencyIsNeverScaledAboveOne) {
  // 0.92 x 1.1 = 1.012 is no efficiency (the cluster loader rejects it): the factor becomes
  // 1 / 0.92, the value 1. Downwards and below 1 the factor is kept.
  const SourcedFact network = fact("/link_classes/network/efficiency", "0.92");
  EXPECT_DOUBLE_EQ(feasible_factor(network, 1.1), 1 / 0.92);
  EXPECT_EQ(scaled_value(network, feasible_factor(network, 1.1)), "1");
  EXPECT_DOUBLE_EQ(feasible_factor(network, 0.9), 0.9);
  const SourcedFact gemm = fact("/gpus/A100-SXM-80GB/efficiency/gemm", "0.69");
  EXPECT_DOUBLE_EQ(feasible_factor(gemm, 1.1), 1.1);
  EXPECT_DOUBLE_EQ(feasible_factor(fact("/gpus/A100-SXM-80GB/efficiency/gemm", "0.95"), 1.1), 1 / 0.95);
}

TEST(Perturbation, ValuesThatAreNotFractionsScaleFreely) {
  // overlap_slowdown is a factor >= 1 and kernel_launch a duration, though both sit under
  // "efficiency"; a step latency and a rate have no upper bound.
  EXPECT_DOUBLE_EQ(feasible_factor(fact("/gpus/A100-SXM-80GB/efficiency/overlap_slowdown", "1.19"), 1.1), 1.1);
  EXPECT_DOUBLE_EQ(feasible_factor(fact("/gpus/A100-SXM-80GB/efficiency/kernel_launch", "4us"), 1.1), 1.1);
  EXPECT_DOUBLE_EQ(feasible_factor(fact("/link_classes/nvlink/step_latency", "14.1us"), 1.1), 1.1);
  EXPECT_EQ(scaled_value(fact("/link_classes/nvlink/step_latency", "14.1us"), 1.1), "15510000ps");
}

}  // namespace
}  // namespace cs::drv
