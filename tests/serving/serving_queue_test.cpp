// Queueing closed forms on the serving simulator (issue 15, must-show 1): with batching off and
// constant lengths a replica is a deterministic server, so Poisson arrivals make an M/D/1 queue
// (mean wait rho / (2 mu (1 - rho))) and several replicas behind least-outstanding routing
// approach M/D/c; at zero load the time to first token is the prefill iteration.
#include <gtest/gtest.h>

#include <cmath>

#include "drivers/serving_sim.h"
#include "drivers/serving_step_time.h"
#include "results/serving_report.h"
#include "sim/collectives/machine.h"
#include "tests/serving/scenario.h"
#include "workloads/model.h"

namespace cs::drv {
namespace {

constexpr std::int64_t kPrompt = 128, kOutput = 4;

nlohmann::json unbatched(double rate, std::int64_t count, int replicas) {
  nlohmann::json j = test::small_scenario(rate, count, kPrompt, kOutput);
  j["replicas"]["count"] = replicas;
  j["scheduler"] = {{"max_batch_requests", 1}};
  return j;
}

// The service time of one request alone.
double service_time() {
  const results::ServingRun run = simulate_serving(test::scenario(unbatched(1, 1, 1)));
  return to_seconds(run.requests[0].finish - run.requests[0].arrival);
}

double mean_wait(const results::ServingRun& run, double service) {
  double sum = 0;
  for (const auto& r : run.requests) sum += to_seconds(r.finish - r.arrival) - service;
  return sum / static_cast<double>(run.requests.size());
}

TEST(ServingQueue, ServiceIsDeterministic) {
  // Two lone requests far apart take exactly the same time.
  const results::ServingRun run = simulate_serving(test::scenario(unbatched(1e-3, 2, 1)));
  EXPECT_EQ(run.requests[0].finish - run.requests[0].arrival, run.requests[1].finish - run.requests[1].arrival);
}

TEST(ServingQueue, MD1MeanWait) {
  const double s = service_time();
  const double mu = 1.0 / s;
  for (double rho : {0.5, 0.8}) {
    const results::ServingRun run = simulate_serving(test::scenario(unbatched(rho * mu, 100000, 1)));
    const double expected = rho / (2 * mu * (1 - rho));
    const double w = mean_wait(run, s);
    EXPECT_NEAR(w / expected, 1.0, 0.03) << "rho " << rho << ": " << w << " s vs " << expected << " s (service " << s << " s)";
    // The server is busy rho of the time, and (Little) lambda W requests wait on average.
    const results::ServingMetrics m = results::serving_metrics(run);
    EXPECT_NEAR(m.gpu_utilization / rho, 1.0, 0.02) << m.gpu_utilization;
    EXPECT_NEAR(m.queue_mean / (rho * mu * w), 1.0, 0.1) << m.queue_mean << " vs " << rho * mu * w;
  }
}

// Erlang C: the probability that an arrival waits in M/M/c with offered load a = lambda / mu.
double erlang_c(int c, double a) {
  double term = 1, sum = 1;  // a^k / k! for k = 0
  for (int k = 1; k < c; ++k) {
    term *= a / k;
    sum += term;
  }
  const double last = term * a / c;  // a^c / c!
  const double rho = a / c;
  return last / (1 - rho) / (sum + last / (1 - rho));
}

TEST(ServingQueue, MDcMeanWaitBehindLeastOutstanding) {
  // The M/D/c mean wait is close to half the M/M/c one (Allen-Cunneen with c_a = 1, c_s = 0).
  // Routing to the replica with the fewest outstanding requests is join-the-shortest-queue, with
  // a queue per replica rather than one shared queue, so it waits somewhat longer: within 15%,
  // and never less.
  const double s = service_time();
  const double mu = 1.0 / s;
  const int c = 4;
  const double rho = 0.7, lambda = rho * c * mu;
  nlohmann::json j = unbatched(lambda, 100000, c);
  j["router"] = "least_outstanding";
  const results::ServingRun run = simulate_serving(test::scenario(j));
  const double mmc = erlang_c(c, lambda / mu) / (c * mu - lambda);
  const double w = mean_wait(run, s);
  EXPECT_GE(w / (mmc / 2), 1.0) << w << " s vs M/D/c " << mmc / 2 << " s";
  EXPECT_LE(w / (mmc / 2), 1.15) << w << " s vs M/D/c " << mmc / 2 << " s";
  // Far less than four independent M/D/1 queues at the same load (random routing).
  EXPECT_LT(w, 0.5 * rho / (2 * mu * (1 - rho)));
  // With equal service times the replica that was sent a request longest ago frees first, so
  // least-outstanding (ties in round-robin order) makes round-robin's choices.
  j["router"] = "round_robin";
  EXPECT_NEAR(mean_wait(simulate_serving(test::scenario(j)), s), w, 1e-12);
}

TEST(ServingQueue, ZeroLoadTtftIsThePrefill) {
  const ServingScenario sc = test::scenario(unbatched(1, 1, 1));
  const results::ServingRun run = simulate_serving(sc);
  const coll::Machine machine = coll::load_machine(sc.cluster);
  const wl::Model model = wl::load_model(sc.model);
  ServingStepTime step(machine, model, {1, wl::Precision::kBf16}, {{machine.cluster.gpus()[0]}}, nullptr);
  wl::InferenceBatch prefill;
  prefill.add(kPrompt, 0, true);
  EXPECT_EQ(run.requests[0].first_token - run.requests[0].arrival, step.step(0, prefill).total());
  // Then each token is one decode iteration over the grown context.
  Duration decode{0};
  for (std::int64_t k = 1; k < kOutput; ++k) {
    wl::InferenceBatch d;
    d.add(1, kPrompt + k - 1, true);
    decode += step.step(0, d).total();
  }
  EXPECT_EQ(run.requests[0].finish - run.requests[0].first_token, decode);
}

}  // namespace
}  // namespace cs::drv
