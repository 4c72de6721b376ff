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

// `framework` sets each default the plan leaves unset, and a key the plan sets wins.
TEST(Experiment, FrameworkPresetSetsTheDefaultsThePlanLeavesOpen) {
  nlohmann::json mc = experiment({{"framework", "megatron-core"}});
  mc["plan"]["dp"] = 2;
  mc["plan"]["tp"] = 4;
  mc["plan"]["global_batch"] = 2;
  const wl::ParallelPlan p = parse(mc).plan;
  EXPECT_TRUE(p.sequence_parallel);
  EXPECT_TRUE(p.tp_comm_overlap);
  EXPECT_EQ(p.zero, wl::ZeroStage::kOptimizer);
  EXPECT_TRUE(p.overlap_param_gather);
  EXPECT_TRUE(p.dp_overlap);
  EXPECT_TRUE(p.flash_attention);
  EXPECT_EQ(p.grad_reduce_bytes, 4);
  EXPECT_EQ(p.recompute, wl::Recompute::kNone);
  // max(40M, 1M x 2) parameters of 4-byte gradients.
  EXPECT_DOUBLE_EQ(p.dp_bucket_mib, 40e6 * 4 / (1024.0 * 1024.0));

  // Without tensor parallelism there is nothing to sequence-shard or overlap.
  const wl::ParallelPlan no_tp = parse(experiment({{"framework", "megatron-core"}})).plan;
  EXPECT_FALSE(no_tp.sequence_parallel);
  EXPECT_FALSE(no_tp.tp_comm_overlap);

  // The plan's own keys win.
  const wl::ParallelPlan own =
      parse(experiment({{"framework", "megatron-core"}, {"zero", 0}, {"grad_reduce_dtype", "bf16"}, {"flash_attention", false}})).plan;
  EXPECT_EQ(own.zero, wl::ZeroStage::kNone);
  EXPECT_FALSE(own.overlap_param_gather);  // follows the plan's ZeRO stage
  EXPECT_EQ(own.grad_reduce_bytes, 2);
  EXPECT_FALSE(own.flash_attention);

  const wl::ParallelPlan ds = parse(experiment({{"framework", "deepspeed"}})).plan;
  EXPECT_EQ(ds.zero, wl::ZeroStage::kParameters);
  EXPECT_EQ(ds.zero_unit, wl::ZeroUnit::kModule);
  EXPECT_TRUE(ds.reshard_after_forward);
  EXPECT_DOUBLE_EQ(ds.dp_bucket_mib, 5e8 * 2 / (1024.0 * 1024.0));
  const wl::ParallelPlan fsdp = parse(experiment({{"framework", "torch-fsdp"}})).plan;
  EXPECT_EQ(fsdp.zero_unit, wl::ZeroUnit::kLayer);
  EXPECT_EQ(fsdp.grad_reduce_bytes, 2);
  const wl::ParallelPlan titan = parse(experiment({{"framework", "torchtitan"}})).plan;
  EXPECT_EQ(titan.zero, wl::ZeroStage::kParameters);
  EXPECT_EQ(titan.grad_reduce_bytes, 4);
  const wl::ParallelPlan old = parse(experiment({{"framework", "megatron-lm-2021"}})).plan;
  EXPECT_EQ(old.recompute, wl::Recompute::kFull);
  EXPECT_FALSE(old.dp_overlap);
  EXPECT_FALSE(old.flash_attention);

  try {
    parse(experiment({{"framework", "jax"}}));
    FAIL() << "accepted framework jax";
  } catch (const ConfigError& err) {
    EXPECT_EQ(err.json_path(), "/plan/framework");
    EXPECT_NE(std::string(err.what()).find("\"megatron-core\""), std::string::npos) << err.what();
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
