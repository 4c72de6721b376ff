// Validation tables as experiments (drivers/training_records.h): the Megatron SC21 rows parse as
// experiments, and a row whose experiment is not the published configuration is an error at the
// record's config.
#include "drivers/training_records.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs::drv {
namespace {

const std::string kValidation = std::string(CS_SOURCE_DIR) + "/configs/validation";

nlohmann::json megatron_table() { return ConfigDocument::load(kValidation + "/megatron-sc21-table1.json").json(); }

std::string error_of(const nlohmann::json& table) {
  try {
    load_training_records(ConfigDocument::from_json(table, "table.json"), kValidation);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainingRecords, TheMegatronRowsAreExperimentsOfThePublishedConfiguration) {
  const auto records = load_training_records(ConfigDocument::from_json(megatron_table(), "table.json"), kValidation);
  ASSERT_EQ(records.size(), 10u);
  // Row 1: GPT 1.7B, DP 32, micro-batch 16, torch DDP (buckets reduced during the backward pass).
  const Experiment& first = records[0].experiment;
  EXPECT_EQ(first.path, "/records/0/experiment");
  EXPECT_EQ(first.at("plan"), "/records/0/experiment/plan");
  EXPECT_EQ(first.plan.dp, 32);
  EXPECT_EQ(first.plan.micro_batch, 16);
  EXPECT_TRUE(first.plan.dp_overlap);
  EXPECT_EQ(first.plan.recompute, wl::Recompute::kFull);
  EXPECT_DOUBLE_EQ(records[0].params_billion, 1.7);
  EXPECT_DOUBLE_EQ(records[0].published_tflops_per_gpu, 137);
  // Row 6 (76.1B): interleaved, 60 layers / (pp 8 x 5 layers per virtual stage) = 3 chunks.
  EXPECT_EQ(records[5].experiment.plan.schedule, wl::PipelineSchedule::kInterleaved);
  EXPECT_EQ(records[5].experiment.plan.virtual_stages, 3);
  EXPECT_FALSE(records[5].experiment.plan.dp_overlap);
}

TEST(TrainingRecords, AnExperimentThatIsNotThePublishedConfigurationIsAnError) {
  nlohmann::json plan = megatron_table();
  plan["records"][0]["experiment"]["plan"]["tp"] = 2;
  plan["records"][0]["experiment"]["plan"]["dp"] = 16;
  EXPECT_EQ(error_of(plan),
            "config error in table.json at /records/0/config/tp: the record's experiment has 2 where the published "
            "configuration has 1");
  nlohmann::json model = megatron_table();
  model["records"][1]["experiment"]["model"] = "gpt-1.7b";
  EXPECT_EQ(error_of(model),
            "config error in table.json at /records/1/config/layers: the record's experiment has 24 where the "
            "published configuration has 30");
}

TEST(TrainingRecords, ExperimentErrorsNameTheRecordsPath) {
  nlohmann::json table = megatron_table();
  table["records"][2]["experiment"]["plan"]["schedule"] = "zigzag";
  EXPECT_NE(error_of(table).find("at /records/2/experiment/plan/schedule: expected one of \"gpipe\""), std::string::npos)
      << error_of(table);
}

}  // namespace
}  // namespace cs::drv
