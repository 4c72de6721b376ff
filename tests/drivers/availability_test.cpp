// Availability of a long training run (drivers/availability.h, checkpoint.h, availability_spec.h):
// the closed forms against hand numbers, the simulated ETTR and optimal interval against them at
// the Llama 3 405B interruption rate, the checkpoint of a bundled model, and the parse errors.
#include "drivers/availability.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "sim/collectives/machine.h"
#include "core/errors.h"
#include "drivers/availability_spec.h"
#include "drivers/checkpoint.h"
#include "drivers/experiment.h"
#include "hardware/catalog.h"
#include "tests/support/config_error.h"
#include "workloads/model.h"

namespace cs::drv {
namespace {

// The reference example (../shared/reference/serving-and-failures.md): T_f = 2.78 h = 10,008 s,
// T_s = 30 s, T_r = 5 min.
TEST(AvailabilityClosedForms, ReferenceExampleByHand) {
  const LongDuration tf = long_hours(2.78), ts = long_seconds(30), tr = long_minutes(5);
  // Young: sqrt(2 x 30 x 10,008) = sqrt(600,480) = 774.91 s = 12.9 min.
  EXPECT_NEAR(young_interval(ts, tf).value(), 774.906, 0.001);
  // Daly: q = 30 / 20,016 = 0.0014988; 774.91 x (1 + 0.038714/3 + 0.0014988/9) - 30
  //       = 774.91 x 1.0130713 - 30 = 755.04 s.
  EXPECT_NEAR(daly_interval(ts, tf).value(), 755.04, 0.02);
  // With restart: 30 + sqrt(2 x 10,308 x 30 + 900) = 30 + sqrt(619,380) = 30 + 787.01 = 817.01 s.
  EXPECT_NEAR(availability_optimal_interval(ts, tr, tf).value(), 817.01, 0.01);
  // First-order ETTR at Young's interval: 1 - 30/774.91 - (387.46 + 300)/10,008
  //   = 1 - 0.038714 - 0.068691 = 0.89260 ("about 0.89").
  const CheckpointPolicy p{young_interval(ts, tf), ts, tr};
  EXPECT_NEAR(first_order_ettr(p, tf), 0.89260, 1e-5);
  // Renewal: 774.91 e^(-300/10,008) / (10,008 (e^(804.91/10,008) - 1))
  //   = 774.91 x 0.970469 / (10,008 x 0.083749) = 752.03 / 838.16 = 0.89723.
  EXPECT_NEAR(renewal_ettr(p, tf), 0.89723, 2e-5);
}

TEST(AvailabilityClosedForms, FailureProcessScalesWithGpus) {
  // Llama 3 405B: 466 interruptions in 54 days on 16,384 GPUs: per GPU 54 x 24 x 16,384 / 466 =
  // 21,233,664 / 466 = 45,565.80 h; the job of 16,384 GPUs fails every 54 x 86,400 / 466 = 10,012 s; half the GPUs,
  // every 20,024 s.
  const FailureProcess llama = failures_from_observation(466, long_days(54), 16384, 16384);
  EXPECT_NEAR(to_hours(llama.mtbf_per_gpu), 45565.80, 0.01);
  EXPECT_NEAR(llama.job_mtbf().value(), 10012.0, 0.1);
  EXPECT_NEAR(failures_from_observation(466, long_days(54), 16384, 8192).job_mtbf().value(), 20024.0, 0.1);
  EXPECT_NEAR(failures_from_gpu_mtbf(long_hours(50700), 16384).job_mtbf().value(), 50700 * 3600.0 / 16384, 1e-6);
}

// The must-show case: the Llama 3 405B rate (T_f = 54 d / 466 = 10,012 s), T_s = 30 s, T_r = 5 min,
// 4 x 10^6 simulated interruptions (about 1,270 years of training; the search takes about 1.3 s).
// The ETTR curve is flat at its peak (1% off the optimal interval costs 10^-5 of ETTR), so the
// simulated optimum wanders with the sample: over seeds 1 to 8 it lay 1.0-3.7% below Young's
// interval and within 1.6% of Daly's (the exact optimum of the simulated process, 755.2 s).
class LlamaRate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sample_ = new FailureSample(tf_, 4'000'000, 1); }
  static void TearDownTestSuite() {
    delete sample_;
    sample_ = nullptr;
  }
  static inline const LongDuration tf_ = failures_from_observation(466, long_days(54), 16384, 16384).job_mtbf();
  static inline const LongDuration ts_ = long_seconds(30), tr_ = long_minutes(5);
  static inline FailureSample* sample_ = nullptr;
};

TEST_F(LlamaRate, SimulatedEttrWithinOnePointOfTheFirstOrderForm) {
  const CheckpointPolicy p{young_interval(ts_, tf_), ts_, tr_};
  const EttrSimulation s = sample_->run(p);
  // First order 0.8926; the exact expectation 0.8973 (the first-order form drops the
  // second-order terms, about half a point here).
  EXPECT_NEAR(s.ettr, first_order_ettr(p, tf_), 0.01);
  // Tighter: the exact expectation within four standard errors (about 3.4e-5 each).
  EXPECT_LT(s.standard_error, 1e-4);
  EXPECT_NEAR(s.ettr, renewal_ettr(p, tf_), 4 * s.standard_error);
  EXPECT_EQ(s.interruptions, 4'000'000);
  // The wall time is spent once: useful + saves + restarts + lost.
  EXPECT_NEAR((s.useful + s.checkpointing + s.restarting + s.lost).value(), s.wall.value(), 1e-9 * s.wall.value());
  // A failure loses half an interval plus the in-flight save on average: (T_c + T_s)/2 less a
  // little (a failure is likelier late in a long life, so the lost part is not quite uniform).
  const double lost_per_failure = s.lost.value() / static_cast<double>(s.interruptions);
  EXPECT_GT(lost_per_failure, 0.4 * (p.interval + ts_).value());
  EXPECT_LT(lost_per_failure, 0.5 * (p.interval + ts_).value());
}

TEST_F(LlamaRate, SimulatedOptimumWithinFivePercentOfYoungAndDaly) {
  const IntervalSearch best = optimal_interval(*sample_, ts_, tr_);
  const double young = young_interval(ts_, tf_).value();  // 775.1 s
  const double daly = daly_interval(ts_, tf_).value();    // 755.2 s
  EXPECT_NEAR(best.interval.value(), young, 0.05 * young);
  EXPECT_NEAR(best.interval.value(), daly, 0.05 * daly);
  // The optimum is a maximum: it beats intervals 30% either side on the same failures.
  const double at_best = best.at_best.ettr;
  EXPECT_GT(at_best, sample_->run({best.interval * 0.7, ts_, tr_}).ettr);
  EXPECT_GT(at_best, sample_->run({best.interval * 1.3, ts_, tr_}).ettr);
}

TEST(AvailabilitySimulation, DeterministicForASeedAndDifferentAcrossSeeds) {
  const CheckpointPolicy p{long_minutes(10), long_seconds(60), long_minutes(10)};
  const EttrSimulation a = FailureSample(long_hours(3), 20000, 7).run(p);
  const EttrSimulation b = FailureSample(long_hours(3), 20000, 7).run(p);
  const EttrSimulation c = FailureSample(long_hours(3), 20000, 8).run(p);
  EXPECT_EQ(a.ettr, b.ettr);
  EXPECT_EQ(a.lost.value(), b.lost.value());
  EXPECT_NE(a.ettr, c.ettr);
  // Both near the exact expectation.
  EXPECT_NEAR(a.ettr, renewal_ettr(p, long_hours(3)), 4 * a.standard_error);
  EXPECT_NEAR(c.ettr, renewal_ettr(p, long_hours(3)), 4 * c.standard_error);
}

TEST(AvailabilitySimulation, RestartsLongerThanFailuresKeepNothing) {
  // Every restart of 10 h is interrupted by a failure every 10 min (almost surely in 1,000 tries).
  const EttrSimulation s = FailureSample(long_minutes(10), 1000, 1).run({long_minutes(1), long_seconds(1), long_hours(10)});
  EXPECT_EQ(s.ettr, 0.0);
  EXPECT_EQ(s.restarting.value(), s.wall.value());
}

// gpt-1.7b (configs/models/gpt-1.7b.json: 24 layers, h = 2304, FFN 4h, biases, LayerNorm, learned
// positions up to 2048, vocabulary 51,200, tied embeddings):
//   block     12 h^2 + 13 h = 63,700,992 + 29,952 = 63,730,944; x 24 = 1,529,542,656
//   embedding V h + 2048 h = 117,964,800 + 4,718,592 = 122,683,392
//   head      the final LayerNorm, 2 h = 4,608 (tied)
//   P = 1,652,230,656; checkpoint 14 P = 23,131,229,184 bytes.
TEST(Checkpoint, SizeOfGpt17bByHand) {
  EXPECT_EQ(checkpoint_bytes(wl::load_model("gpt-1.7b")).value(), 23'131'229'184);
}

TEST(Checkpoint, WritersFollowTheOptimizerSharding) {
  wl::ParallelPlan p;
  p.dp = 16;
  p.tp = 4;
  p.pp = 2;
  EXPECT_EQ(checkpoint_writers(p), 8);  // one replica: tp x pp
  p.zero = wl::ZeroStage::kOptimizer;
  EXPECT_EQ(checkpoint_writers(p), 128);  // every GPU writes its shard
}

// Four DGX A100 on HDR InfiniBand (8 x 200 Gb/s NICs per server: a GPU's share 25 GB/s) with a
// storage server behind one link into leaf0.
topo::Cluster storage_cluster(const std::string& link_rate) {
  return coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/a100-4node-ib.json",
                            {"/devices=[{\"name\": \"storage0\", \"kind\": \"storage\"}]",
                             "/links=[{\"from\": \"storage0\", \"to\": \"leaf0\", \"bandwidth\": \"" + link_rate + "\"}]"},
                            hw::Catalog::builtin())
      .cluster;
}

TEST(Checkpoint, SaveTimeFromTheStorageLinksOrTheWriters) {
  const wl::Model m = wl::load_model("gpt-1.7b");
  wl::ParallelPlan p;
  p.dp = 32;
  // 100 Gb/s into storage (12.5 GB/s) is below one writer's 25 GB/s: 23.131 GB / 12.5 GB/s = 1.8505 s.
  const auto slow = checkpoint_write(storage_cluster("100Gbps"), m, p);
  ASSERT_TRUE(slow.has_value());
  EXPECT_EQ(slow->storage_devices, 1);
  EXPECT_EQ(slow->writers, 1);
  EXPECT_DOUBLE_EQ(slow->storage_ingress.value(), 12.5e9);
  EXPECT_DOUBLE_EQ(slow->writers_egress.value(), 25e9);
  EXPECT_NEAR(slow->save_time.value(), 23'131'229'184 / 12.5e9, 1e-9);
  // 800 Gb/s (100 GB/s): one writer's 25 GB/s binds (0.9253 s); with ZeRO-1 all 32 GPUs write.
  const topo::Cluster fast = storage_cluster("800Gbps");
  EXPECT_NEAR(checkpoint_write(fast, m, p)->save_time.value(), 23'131'229'184 / 25e9, 1e-9);
  p.zero = wl::ZeroStage::kOptimizer;
  EXPECT_NEAR(checkpoint_write(fast, m, p)->save_time.value(), 23'131'229'184 / 100e9, 1e-9);
  // No storage: nothing to derive.
  EXPECT_FALSE(checkpoint_write(coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/a100-4node-ib.json", {}, hw::Catalog::builtin()).cluster, m, p).has_value());
}

AvailabilitySpec parse(const nlohmann::json& j) {
  return parse_availability(ConfigDocument::from_json({{"availability", j}}, "exp.json").root().at("availability"));
}

TEST(AvailabilitySpec, ParsesBothFailureFormsAndTheOptions) {
  const AvailabilitySpec a = parse({{"mtbf_per_gpu", "50700h"}});
  ASSERT_TRUE(a.mtbf_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(a.mtbf_per_gpu->value(), 50700 * 3600.0);
  EXPECT_FALSE(a.checkpoint_interval.has_value());
  EXPECT_FALSE(a.restart_time.has_value());
  const AvailabilitySpec b = parse({{"interruptions", 466}, {"window", "54d"}, {"gpus", 16384}, {"checkpoint_interval", "15min"},
                                    {"save_time", "30s"}, {"restart_time", "5min"}, {"seed", 3}});
  EXPECT_EQ(b.interruptions, 466);
  EXPECT_DOUBLE_EQ(b.window.value(), 54 * 86400.0);
  EXPECT_EQ(b.observed_gpus, 16384);
  EXPECT_DOUBLE_EQ(b.checkpoint_interval->value(), 900.0);
  EXPECT_DOUBLE_EQ(b.save_time->value(), 30.0);
  EXPECT_DOUBLE_EQ(b.restart_time->value(), 300.0);
  EXPECT_EQ(b.seed, 3U);
  EXPECT_FALSE(parse({{"mtbf_per_gpu", "1e5h"}, {"checkpoint_interval", "optimal"}}).checkpoint_interval.has_value());
}

TEST(AvailabilitySpec, ErrorsNameTheKey) {
  using test::config_error;
  auto at = [](const std::string& message, const std::string& path) {
    EXPECT_NE(message.find("exp.json at " + path), std::string::npos) << message;
  };
  at(config_error([] { parse({{"mtbf_per_gpu", "50700h"}, {"mtbf", "1h"}}); }), "/availability/mtbf: unknown key");
  at(config_error([] { parse(nlohmann::json::object()); }), "/availability");
  at(config_error([] { parse({{"mtbf_per_gpu", "50700h"}, {"interruptions", 3}, {"window", "1d"}}); }), "/availability");
  at(config_error([] { parse({{"mtbf_per_gpu", "-5h"}}); }), "/availability/mtbf_per_gpu");
  at(config_error([] { parse({{"mtbf_per_gpu", "0h"}}); }), "/availability/mtbf_per_gpu");
  at(config_error([] { parse({{"mtbf_per_gpu", 50700}}); }), "/availability/mtbf_per_gpu");
  at(config_error([] { parse({{"mtbf_per_gpu", "50700 weeks"}}); }), "/availability/mtbf_per_gpu");
  at(config_error([] { parse({{"mtbf_per_gpu", "50700h"}, {"window", "54d"}}); }), "/availability/window");
  at(config_error([] { parse({{"interruptions", 0}, {"window", "54d"}}); }), "/availability/interruptions");
  at(config_error([] { parse({{"interruptions", 466}}); }), "/availability");
  at(config_error([] { parse({{"mtbf_per_gpu", "50700h"}, {"checkpoint_interval", "best"}}); }), "/availability/checkpoint_interval");
  at(config_error([] { parse({{"mtbf_per_gpu", "50700h"}, {"restart_time", "0s"}}); }), "/availability/restart_time");
}

TEST(AvailabilitySpec, AnExperimentCarriesIt) {
  const nlohmann::json j = {{"cluster", "dgx-a100"}, {"model", "gpt-1.7b"},
                            {"plan", {{"dp", 8}, {"micro_batch", 1}, {"global_batch", 8}}},
                            {"availability", {{"mtbf_per_gpu", "50700h"}, {"save_time", "20s"}}}};
  const Experiment e = parse_experiment(ConfigDocument::from_json(j, "exp.json").root(), std::string(CS_SOURCE_DIR) + "/configs/examples");
  ASSERT_TRUE(e.availability.has_value());
  EXPECT_EQ(e.availability->where, "/availability");
  EXPECT_DOUBLE_EQ(e.availability->save_time->value(), 20.0);
}

}  // namespace
}  // namespace cs::drv
