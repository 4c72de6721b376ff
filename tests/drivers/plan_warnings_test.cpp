// The plan's plausibility warnings (drivers/plan_warnings.h): a tensor-parallel group across
// servers warns at <plan>/tp, whatever the rank order; expert parallelism across servers does not.
#include "drivers/plan_warnings.h"

#include <string>

#include <gtest/gtest.h>

#include "core/config.h"
#include "topology/cluster_loader.h"

namespace cs::drv {
namespace {

// Two DGX A100 servers of 8 GPUs (node0: GPUs 0-7, node1: GPUs 8-15) on one switch.
topo::Cluster two_servers() {
  const nlohmann::json c = {
      {"servers", {{{"count", 2}, {"template", "nvswitch"}, {"gpu", "A100-SXM-80GB"}, {"nic", "HDR-200G"}}}},
      {"fabric", {{"type", "star"}}}};
  return topo::build_cluster(ConfigDocument::from_json(c, "c.json"));
}

std::vector<Warning> warnings_for(const wl::ParallelPlan& plan, const std::string& path = "") {
  Experiment e;
  e.file = "exp.json";
  e.path = path;
  e.plan = plan;
  const topo::Cluster cluster = two_servers();
  return plan_warnings(e, wl::RankGrid(plan, e.file, e.at("plan")), cluster);
}

wl::ParallelPlan plan(int dp, int tp) {
  wl::ParallelPlan p;
  p.dp = dp;
  p.tp = tp;
  return p;
}

TEST(PlanWarnings, TensorParallelInsideAServerIsQuiet) {
  EXPECT_TRUE(warnings_for(plan(2, 8)).empty());
  EXPECT_TRUE(warnings_for(plan(4, 4)).empty());
  EXPECT_TRUE(warnings_for(plan(16, 1)).empty());
}

TEST(PlanWarnings, TensorParallelAcrossServersWarnsAtThePlan) {
  const std::vector<Warning> w = warnings_for(plan(1, 16));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].file, "exp.json");
  EXPECT_EQ(w[0].json_path, "/plan/tp");
  EXPECT_NE(w[0].message.find("the tensor-parallel group of rank 0 (tp 16) spans 2 servers (node0, node1)"), std::string::npos)
      << w[0].message;
  // An experiment inside a table: the path is under its object.
  EXPECT_EQ(warnings_for(plan(1, 16), "/records/3/experiment")[0].json_path, "/records/3/experiment/plan/tp");
}

TEST(PlanWarnings, TheRankOrderDecidesWhereAGroupLies) {
  // order dp, tp, cp, pp (innermost first): rank = dp + 2 tp, so the TP group of dp 0 is ranks
  // 0, 2, ..., 14, on both servers, though tp 8 would fit one.
  wl::ParallelPlan p = plan(2, 8);
  p.order = {"dp", "tp", "cp", "pp"};
  const std::vector<Warning> w = warnings_for(p);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("group of rank 0 (tp 8) spans 2 servers"), std::string::npos) << w[0].message;
}

TEST(PlanWarnings, ExpertParallelAcrossServersIsQuiet) {
  // EP 2 over the two data-parallel replicas, one per server: all-to-alls on the network by design.
  wl::ParallelPlan p = plan(2, 8);
  p.ep = 2;
  EXPECT_TRUE(warnings_for(p).empty());
}

}  // namespace
}  // namespace cs::drv
