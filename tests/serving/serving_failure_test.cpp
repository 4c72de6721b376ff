// Availability (issue 15, must-show 3): a failed replica takes its share of the capacity away;
// under the retry policy no request is lost; under drop its requests are.
#include <gtest/gtest.h>

#include "drivers/serving_sim.h"
#include "results/serving_report.h"
#include "tests/serving/scenario.h"

namespace cs::drv {
namespace {

nlohmann::json saturated(int replicas) {
  // Far more load than the replicas can serve: throughput is their capacity.
  nlohmann::json j = test::small_scenario(2000, 4000, 256, 64);
  j["replicas"]["count"] = replicas;
  j["router"] = "least_outstanding";
  return j;
}

TEST(ServingFailure, ADownReplicaTakesItsShare) {
  const auto all = results::serving_metrics(simulate_serving(test::scenario(saturated(4))));
  nlohmann::json j = saturated(4);
  j["failures"] = {{"events", {{{"replica", 2}, {"at", "0s"}}}}};
  const results::ServingRun run = simulate_serving(test::scenario(j));
  const auto one_down = results::serving_metrics(run);
  EXPECT_EQ(one_down.completed, 4000);
  EXPECT_NEAR(one_down.output_tokens_per_s / all.output_tokens_per_s, 0.75, 0.02);
  EXPECT_EQ(run.replica_stats[2].completed, 0);
  EXPECT_NEAR(one_down.availability, 0.75, 1e-9);
}

TEST(ServingFailure, RetryLosesNothing) {
  nlohmann::json j = test::small_scenario(40, 2000, 512, 128);
  j["replicas"]["count"] = 2;
  j["failures"] = {{"events", {{{"replica", 0}, {"at", "5s"}, {"until", "20s"}}}}, {"policy", "retry"}};
  const results::ServingRun run = simulate_serving(test::scenario(j));
  const auto m = results::serving_metrics(run);
  EXPECT_EQ(m.completed, 2000);
  EXPECT_EQ(m.lost, 0);
  EXPECT_GT(m.retried, 0);
  EXPECT_EQ(run.replica_stats[0].failures, 1);
  EXPECT_EQ(run.replica_stats[0].down, Duration{15000000000000});
  // Retried requests restart: their latency counts from the first arrival and grows.
  double retried = 0, others = 0;
  std::int64_t nr = 0, no = 0;
  for (const auto& r : run.requests) {
    const double e2e = to_seconds(r.finish - r.arrival);
    if (r.retries > 0) retried += e2e, ++nr;
    else others += e2e, ++no;
  }
  EXPECT_GT(retried / static_cast<double>(nr), others / static_cast<double>(no));

  j["failures"]["policy"] = "drop";
  const auto dropped = results::serving_metrics(simulate_serving(test::scenario(j)));
  EXPECT_GT(dropped.lost, 0);
  EXPECT_EQ(dropped.lost + dropped.completed, 2000);
  EXPECT_EQ(dropped.retried, 0);
}

TEST(ServingFailure, AllDownWaitsAtTheRouter) {
  nlohmann::json j = test::small_scenario(10, 200, 256, 16);
  j["failures"] = {{"events", {{{"replica", 0}, {"at", "2s"}, {"until", "10s"}}}}};
  const results::ServingRun run = simulate_serving(test::scenario(j));
  EXPECT_EQ(results::serving_metrics(run).completed, 200);
  EXPECT_GT(run.router_peak_queue, 50);  // about 8 s of arrivals at 10/s waited for the repair
  for (const auto& r : run.requests) {
    if (r.arrival > kTimeZero + Duration{2500000000000} && r.arrival < kTimeZero + Duration{9000000000000}) {
      EXPECT_GE(r.first_token, kTimeZero + Duration{10000000000000});
    }
  }
}

TEST(ServingFailure, AGpuOrAServerNamesItsReplicas) {
  nlohmann::json j = test::small_scenario(5, 100, 256, 16);
  j["replicas"] = {{"count", 2}, {"tp", 4}};  // GPUs 0-3 and 4-7 of one DGX H100
  j["failures"] = {{"events", {{{"gpu", 5}, {"at", "1s"}, {"until", "3s"}}}}};
  const auto gpu = simulate_serving(test::scenario(j));
  EXPECT_EQ(gpu.replica_stats[0].failures, 0);
  EXPECT_EQ(gpu.replica_stats[1].failures, 1);
  j["failures"] = {{"events", {{{"server", 0}, {"at", "1s"}, {"until", "3s"}}}}};
  const auto server = simulate_serving(test::scenario(j));
  EXPECT_EQ(server.replica_stats[0].failures, 1);
  EXPECT_EQ(server.replica_stats[1].failures, 1);
  EXPECT_EQ(results::serving_metrics(server).completed, 100);
  // A switch inside the server (its NVSwitch) takes the server's replicas down with it.
  j["failures"] = {{"events", {{{"switch", "node0/nvswitch"}, {"at", "1s"}, {"until", "3s"}}}}};
  const auto nvswitch = simulate_serving(test::scenario(j));
  EXPECT_EQ(nvswitch.replica_stats[0].failures, 1);
  EXPECT_EQ(nvswitch.replica_stats[1].failures, 1);
}

TEST(ServingFailure, FailureProcessAvailability) {
  // Per-GPU MTBF 1 h, repair 6 min, TP 1: each replica is up 1 / (1 + 0.1) of the time in the
  // long run (an alternating renewal process).
  nlohmann::json j = test::small_scenario(0.5, 4000, 128, 8);
  j["replicas"]["count"] = 8;
  j["failures"] = {{"mtbf_per_gpu", "1h"}, {"repair", "6min"}, {"seed", 3}};
  const auto m = results::serving_metrics(simulate_serving(test::scenario(j)));
  EXPECT_NEAR(m.availability, 1 / 1.1, 0.02);
  EXPECT_EQ(m.completed, 4000);
}

}  // namespace
}  // namespace cs::drv
