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

TEST(Experiment, MoeRoutingKeysOfThePlan) {
  // Megatron-Core's --moe-expert-capacity-factor, --moe-pad-expert-input-to-capacity and
  // --moe-token-drop-policy, and the load imbalance; dropless and balanced by default.
  const Experiment defaults = parse(experiment(nlohmann::json::object()));
  EXPECT_DOUBLE_EQ(defaults.plan.moe_capacity_factor, 0.0);
  EXPECT_FALSE(defaults.plan.moe_pad_to_capacity);
  EXPECT_EQ(defaults.plan.moe_token_drop_policy, wl::MoeDropPolicy::kProbs);
  EXPECT_DOUBLE_EQ(defaults.plan.moe_load_imbalance, 1.0);
  const Experiment e = parse(experiment({{"moe_capacity_factor", 1.25},
                                         {"moe_pad_to_capacity", true},
                                         {"moe_token_drop_policy", "position"},
                                         {"moe_load_imbalance", 1.5}}));
  EXPECT_DOUBLE_EQ(e.plan.moe_capacity_factor, 1.25);
  EXPECT_TRUE(e.plan.moe_pad_to_capacity);
  EXPECT_EQ(e.plan.moe_token_drop_policy, wl::MoeDropPolicy::kPosition);
  EXPECT_DOUBLE_EQ(e.plan.moe_load_imbalance, 1.5);
  try {
    parse(experiment({{"moe_token_drop_policy", "random"}}));
    FAIL() << "accepted moe_token_drop_policy random";
  } catch (const ConfigError& err) {
    EXPECT_EQ(err.json_path(), "/plan/moe_token_drop_policy");
  }
}

}  // namespace
}  // namespace cs::drv
