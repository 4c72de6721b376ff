// The plan keys of an experiment that only the memory estimate reads (drivers/experiment.h):
// ZeRO's unit and the allocator's fragmentation, with their defaults and errors.
#include "drivers/experiment.h"

#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs::drv {
namespace {

const std::string kExamples = std::string(CS_SOURCE_DIR) + "/configs/examples";

nlohmann::json experiment(nlohmann::json plan) {
  plan["micro_batch"] = 1;
  plan["global_batch"] = 8;
  plan["dp"] = 8;
  return {{"cluster", "dgx-a100"}, {"model", "gpt-1.7b"}, {"plan", plan}};
}

Experiment parse(const nlohmann::json& j) {
  return parse_experiment(ConfigDocument::from_json(j, "exp.json").root(), kExamples);
}

TEST(Experiment, MemoryKeysOfThePlan) {
  const Experiment defaults = parse(experiment(nlohmann::json::object()));
  EXPECT_EQ(defaults.plan.zero_unit, wl::ZeroUnit::kLayer);
  EXPECT_DOUBLE_EQ(defaults.plan.memory_fragmentation, 0.0);
  const Experiment e =
      parse(experiment({{"zero", 3}, {"zero_unit", "module"}, {"memory_fragmentation", 0.1}}));
  EXPECT_EQ(e.plan.zero_unit, wl::ZeroUnit::kModule);
  EXPECT_DOUBLE_EQ(e.plan.memory_fragmentation, 0.1);
  try {
    parse(experiment({{"zero_unit", "tensor"}}));
    FAIL() << "accepted zero_unit tensor";
  } catch (const ConfigError& err) {
    EXPECT_EQ(err.json_path(), "/plan/zero_unit");
    EXPECT_NE(std::string(err.what()).find("\"layer\""), std::string::npos) << err.what();
  }
}

TEST(Experiment, ContextParallelCommunicationAndTheZeroBubbleSchedule) {
  // cp_comm_type mirrors Megatron-Core's --cp-comm-type (default p2p); schedule "zb-h1" names
  // Qi et al.'s ZB-H1. Unknown values are errors at their key listing the accepted ones.
  const Experiment defaults = parse(experiment(nlohmann::json::object()));
  EXPECT_EQ(defaults.plan.cp_comm_type, wl::CpCommType::kP2p);
  EXPECT_EQ(parse(experiment({{"cp_comm_type", "all_gather"}})).plan.cp_comm_type, wl::CpCommType::kAllGather);
  EXPECT_EQ(parse(experiment({{"cp_comm_type", "a2a"}})).plan.cp_comm_type, wl::CpCommType::kA2a);
  EXPECT_EQ(parse(experiment({{"schedule", "zb-h1"}})).plan.schedule, wl::PipelineSchedule::kZbH1);
  try {
    parse(experiment({{"cp_comm_type", "ring"}}));
    FAIL() << "accepted cp_comm_type ring";
  } catch (const ConfigError& err) {
    EXPECT_EQ(err.json_path(), "/plan/cp_comm_type");
    EXPECT_NE(std::string(err.what()).find("\"all_gather\""), std::string::npos) << err.what();
  }
  try {
    parse(experiment({{"cp_comm_type", 1}}));
    FAIL() << "accepted a number";
  } catch (const ConfigError& err) {
    EXPECT_EQ(err.json_path(), "/plan/cp_comm_type");
  }
}

}  // namespace
}  // namespace cs::drv
