// The plan search's pieces (drivers/plan_space.h, plan_estimate.h, plan_search.h): the space
// holds only plans that divide and fit, counts what it drops, honours --keep; Spearman's rank
// correlation on closed cases; the fast estimate against the full simulation on a small cluster
// (within 10% per plan, the same order for plans that differ by more than that) and its response
// to the effects that separate plans.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "drivers/experiment.h"
#include "drivers/plan_estimate.h"
#include "drivers/plan_search.h"
#include "drivers/plan_space.h"
#include "drivers/training_run.h"
#include "sim/collectives/machine.h"

namespace {

using namespace cs;

drv::Experiment gpt_on_32() {
  drv::Experiment e = drv::load_experiment(std::string(CS_SOURCE_DIR) + "/configs/examples/gpt-1.7b-32.json");
  return e;
}

// GPT 1.7B on 4 DGX A100: the experiment, its model, machine and GPU.
struct Gpt32 {
  drv::Experiment e = gpt_on_32();
  wl::Model model = drv::load_model(e);
  coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides);
  const hw::GpuSpec& gpu = machine.cluster.gpu_spec(machine.cluster.gpus()[0]);
  drv::PlanSpace space(const drv::SpaceOptions& options) const { return drv::enumerate_plans(model, e.plan, 32, gpu, options); }
};

TEST(PlanSpace, EveryPlanDividesFitsAndIsCountedOnce) {
  const Gpt32 g;
  const drv::Experiment& e = g.e;
  const wl::Model& model = g.model;
  const hw::GpuSpec& gpu = g.gpu;
  drv::SpaceOptions options;
  const drv::PlanSpace space = g.space(options);
  std::size_t dropped = 0;
  for (const auto& [why, n] : space.dropped) dropped += n;
  EXPECT_EQ(space.considered, space.plans.size() + dropped);
  ASSERT_FALSE(space.plans.empty());
  std::set<std::string> seen;
  for (const wl::ParallelPlan& p : space.plans) {
    EXPECT_EQ(p.gpus(), 32);
    EXPECT_EQ(8 % p.tp, 0);  // within a DGX A100, every TP group
    EXPECT_EQ(p.global_batch % (p.micro_batch * p.dp), 0);
    EXPECT_TRUE(seen.insert(drv::describe_plan(p)).second) << drv::describe_plan(p);
    const wl::MemoryEstimate mem = wl::peak_memory(wl::estimate_memory(model, p, gpu));
    EXPECT_LE(static_cast<double>(mem.total.value()), 0.95 * static_cast<double>(mem.capacity.value()));
    if (p.pp > 1) {
      EXPECT_GE(p.micro_batches(), p.pp);
    }
    if (p.zero >= wl::ZeroStage::kGradients) {
      EXPECT_EQ(p.pp, 1);  // DeepSpeed: no ZeRO-2/3 with PP
    }
  }
  // Keeping dimensions: only the base plan's values of those.
  options.keep = {"recompute", "zero", "micro_batch", "tp"};
  const drv::PlanSpace kept = g.space(options);
  ASSERT_FALSE(kept.plans.empty());
  for (const wl::ParallelPlan& p : kept.plans) {
    EXPECT_EQ(p.recompute, e.plan.recompute);
    EXPECT_EQ(p.zero, e.plan.zero);
    EXPECT_EQ(p.micro_batch, e.plan.micro_batch);
    EXPECT_EQ(p.tp, e.plan.tp);
  }
  EXPECT_LT(kept.plans.size(), space.plans.size());
}

TEST(PlanSpace, AFrameworkOffersItsOwnOptionsOnly) {
  const Gpt32 g;
  drv::SpaceOptions options;
  const std::size_t all = g.space(options).plans.size();
  options.framework = drv::Framework::kMegatronCore;
  const drv::PlanSpace mcore = g.space(options);
  ASSERT_FALSE(mcore.plans.empty());
  for (const wl::ParallelPlan& p : mcore.plans) {
    EXPECT_LE(p.zero, wl::ZeroStage::kOptimizer);
    EXPECT_NE(p.schedule, wl::PipelineSchedule::kZbH1);
  }
  EXPECT_GT(mcore.dropped.at("not a plan megatron-core offers"), 0u);
  options.framework = drv::Framework::kTorchFsdp;
  const drv::PlanSpace fsdp = g.space(options);
  ASSERT_FALSE(fsdp.plans.empty());
  for (const wl::ParallelPlan& p : fsdp.plans) {
    EXPECT_EQ(p.tp * p.pp * p.cp, 1);
    EXPECT_TRUE(p.zero == wl::ZeroStage::kGradients || p.zero == wl::ZeroStage::kParameters);
    EXPECT_NE(p.recompute, wl::Recompute::kSelective);
  }
  EXPECT_LT(fsdp.plans.size(), mcore.plans.size());
  EXPECT_LT(mcore.plans.size(), all);
}

TEST(Spearman, ClosedCases) {
  EXPECT_DOUBLE_EQ(*drv::spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(*drv::spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ranks (1, 2, 3, 4) against (2, 1, 4, 3): d^2 = 4, rho = 1 - 6 x 4 / (4 x 15) = 0.6.
  EXPECT_NEAR(*drv::spearman({1, 2, 3, 4}, {5, 1, 9, 7}), 0.6, 1e-12);
  // A tie takes the average rank: (1, 2.5, 2.5, 4) against (1, 2, 3, 4): Pearson of the ranks.
  EXPECT_NEAR(*drv::spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9486832980505138, 1e-12);
  EXPECT_FALSE(drv::spearman({1, 2}, {1, 2}).has_value());
  EXPECT_FALSE(drv::spearman({1, 1, 1}, {1, 2, 3}).has_value());
}

TEST(PlanEstimate, TracksTheFullSimulation) {
  drv::Experiment e = gpt_on_32();
  const wl::Model model = drv::load_model(e);
  const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides);
  drv::PlanEstimator estimator(machine, model);
  struct Case {
    int tp, pp, dp, mb;
    wl::Recompute recompute;
    wl::PipelineSchedule schedule;
    int v;
  };
  const Case cases[] = {{1, 1, 32, 16, wl::Recompute::kFull, wl::PipelineSchedule::kOneFOneB, 1},
                        {1, 1, 32, 4, wl::Recompute::kNone, wl::PipelineSchedule::kOneFOneB, 1},
                        {2, 1, 16, 8, wl::Recompute::kSelective, wl::PipelineSchedule::kOneFOneB, 1},
                        {8, 1, 4, 4, wl::Recompute::kFull, wl::PipelineSchedule::kOneFOneB, 1},
                        {2, 4, 4, 2, wl::Recompute::kFull, wl::PipelineSchedule::kOneFOneB, 1},
                        {2, 4, 4, 2, wl::Recompute::kFull, wl::PipelineSchedule::kInterleaved, 3},
                        {1, 8, 4, 1, wl::Recompute::kNone, wl::PipelineSchedule::kZbH1, 1}};
  e.allow_oom = true;  // the times, not the memory, are compared here
  std::vector<double> est, sim;
  for (const Case& c : cases) {
    e.plan.tp = c.tp, e.plan.pp = c.pp, e.plan.dp = c.dp, e.plan.micro_batch = c.mb;
    e.plan.recompute = c.recompute, e.plan.schedule = c.schedule, e.plan.virtual_stages = c.v;
    const double t_est = to_seconds(estimator.estimate(e.plan).iteration);
    const double t_sim = to_seconds(drv::simulate_training(e).result.iteration);
    EXPECT_NEAR(t_est / t_sim, 1.0, 0.10) << drv::describe_plan(e.plan) << ": estimate " << t_est << " s, simulation " << t_sim << " s";
    est.push_back(t_est);
    sim.push_back(t_sim);
  }
  // Pairs that the simulation separates by more than 10% come in the same order.
  for (std::size_t i = 0; i < est.size(); ++i) {
    for (std::size_t j = 0; j < est.size(); ++j) {
      if (sim[i] < 0.9 * sim[j]) {
        EXPECT_LT(est[i], est[j]) << i << " vs " << j;
      }
    }
  }
}

TEST(PlanEstimate, RespondsToWhatSeparatesPlans) {
  drv::Experiment e = gpt_on_32();
  const wl::Model model = drv::load_model(e);
  const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides);
  drv::PlanEstimator estimator(machine, model);
  wl::ParallelPlan p = e.plan;
  p.tp = 2, p.pp = 4, p.dp = 4, p.micro_batch = 2;
  const drv::PlanEstimate one_f_one_b = estimator.estimate(p);
  // The interleaved schedule divides the bubble by v (SC21, Sec. 2.2).
  wl::ParallelPlan q = p;
  q.schedule = wl::PipelineSchedule::kInterleaved, q.virtual_stages = 3;
  const drv::PlanEstimate interleaved = estimator.estimate(q);
  EXPECT_LT(interleaved.bubble, one_f_one_b.bubble);
  // Recomputation costs a forward pass; none is faster.
  wl::ParallelPlan r = p;
  r.recompute = wl::Recompute::kNone;
  EXPECT_LT(estimator.estimate(r).iteration, one_f_one_b.iteration);
  // Data-parallel reduction not overlapped with the backward is exposed in full.
  wl::ParallelPlan d = p;
  d.dp_overlap = false;
  EXPECT_GE(estimator.estimate(d).exposed_dp, one_f_one_b.exposed_dp);
  // A group across servers is slower than inside one: 4 GPUs of one server, and 4 one per server.
  const Bytes size = mebibytes(64);
  EXPECT_LT(estimator.collective(CollectiveOp::kAllReduce, 4, 1, size), estimator.collective(CollectiveOp::kAllReduce, 4, 8, size));
}

}  // namespace
