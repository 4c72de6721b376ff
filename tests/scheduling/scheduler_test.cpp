// The multi-job scheduler (drivers/cluster_scheduler.h): queueing closed forms, policies, gang
// scheduling, preemption and failures, rejections, placement on the cluster graph.
#include "drivers/cluster_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/config.h"
#include "drivers/gpu_pool.h"
#include "results/schedule_report.h"
#include "sim/collectives/machine.h"
#include "tests/support/temp_dir.h"

namespace cs::drv {
namespace {

using nlohmann::json;

std::string source(const std::string& rel) { return std::string(CS_SOURCE_DIR) + "/" + rel; }

ScheduleScenario scenario(const json& doc, const std::string& base_dir = "") {
  return parse_schedule_scenario(ConfigDocument::from_json(doc, "scenario.json").root(), base_dir);
}

// A node list of `servers` servers of `gpus` GPUs each, written into `dir`.
std::string node_list(const test::TempDir& dir, int servers, int gpus) {
  std::string text = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int s = 0; s < servers; ++s) text += "n" + std::to_string(s) + ",1000,1024," + std::to_string(gpus) + ",X\n";
  const std::string path = dir.file("nodes.csv");
  test::write_text(path, text);
  return path;
}

// Erlang C: the probability that an arrival waits in M/M/c with offered load a = lambda / mu.
double erlang_c(int c, double a) {
  double term = 1, sum = 0;  // a^k / k!
  for (int k = 0; k < c; ++k) {
    sum += term;
    term *= a / (k + 1);
  }
  const double top = term * c / (c - a);  // a^c / c! x c / (c - a)
  return top / (sum + top);
}

TEST(Scheduler, FifoMatchesErlangC) {
  // c = 8 GPUs, one-GPU jobs, exponential service of mean 100 s, Poisson arrivals at rho = 0.7:
  // W_q = C(c, a) / (c mu - lambda) = 11.27 s. The mean wait of one run of 10^5 jobs scatters by
  // about 6% from seed to seed (waits come in long correlated busy periods), so the check is the
  // mean of 16 independent runs of 10^5 jobs (seeds 1-16, fixed before looking; standard error
  // about 1.5%), within 3%.
  test::TempDir dir("mmc");
  const int c = 8;
  const double mu = 1.0 / 100, rho = 0.7, lambda = rho * c * mu;
  const double expected = erlang_c(c, lambda / mu) / (c * mu - lambda);
  double wait = 0, utilization = 0;
  const int runs = 16;
  for (int seed = 1; seed <= runs; ++seed) {
    const ScheduleScenario s = scenario({{"nodes", node_list(dir, 2, 4)},
                                         {"jobs", {{"rate", lambda}, {"count", 100000}, {"gpus", 1}, {"duration", {{"exponential", 100}}}, {"seed", seed}}},
                                         {"policy", "fifo"}});
    const results::ScheduleMetrics m = results::schedule_metrics(simulate_schedule(s));
    ASSERT_EQ(m.completed, 100000);
    wait += m.wait.mean / runs;
    utilization += m.gpu_utilization / runs;
  }
  std::printf("M/M/8 at rho 0.7, 16 x 10^5 jobs: mean wait %.3f s, Erlang C %.3f s (%+.2f%%); utilization %.4f\n", wait, expected,
              100 * (wait / expected - 1), utilization);
  EXPECT_NEAR(wait / expected, 1.0, 0.03);
  EXPECT_NEAR(utilization / rho, 1.0, 0.01);
}

TEST(Scheduler, GangJobsHoldAllTheirGpusForTheirWholeRun) {
  test::TempDir dir("gang");
  const ScheduleScenario s = scenario({{"nodes", node_list(dir, 4, 8)},
                                       {"jobs", {{"rate", 0.02}, {"count", 2000}, {"gpus", {{"choice", {1, 2, 4, 8, 16, 24}}}},
                                                 {"duration", {{"exponential", 300}}}, {"seed", 3}}},
                                       {"policy", "easy_backfill"}});
  const results::ScheduleRun run = simulate_schedule(s);
  int multi = 0;
  for (const results::JobRecord& j : run.jobs) {
    ASSERT_EQ(j.status, results::JobStatus::kCompleted);
    EXPECT_EQ(j.starts, 1);
    // Never a partial job: GPU-seconds are all its GPUs for all of its run.
    EXPECT_NEAR(j.gpu_seconds, j.gpus * to_seconds(j.finish - j.first_start), 1e-6 * j.gpu_seconds + 1e-9);
    EXPECT_GE(j.servers, (j.gpus + 7) / 8);
    multi += j.servers > 1;
    // A job of fixed length runs exactly its length.
    EXPECT_NEAR(to_seconds(j.finish - j.first_start), to_seconds(j.ideal), 1e-6);
  }
  EXPECT_GT(multi, 100);
  for (const results::ScheduleSample& x : run.timeline) EXPECT_LE(x.allocated_milli, 32 * 1000);
}

TEST(Scheduler, PreemptionLosesAtMostTheWorkSinceTheLastCheckpoint) {
  // Two priorities on 16 GPUs, checkpoints every 10 minutes of progress, 1 minute to restart.
  test::TempDir dir("preempt");
  std::string csv = "id,arrival_s,gpus,duration_s,priority\n";
  for (int i = 0; i < 400; ++i) {
    csv += "j" + std::to_string(i) + "," + std::to_string(i * 1000) + "," + std::to_string(i % 3 == 0 ? 16 : 4) + "," +
           std::to_string(1500 + (i * 37) % 2000) + "," + std::to_string(i % 4 == 0 ? 1 : 0) + "\n";
  }
  test::write_text(dir.file("jobs.csv"), csv);
  const ScheduleScenario s = scenario({{"nodes", node_list(dir, 2, 8)},
                                       {"jobs", {{"trace", dir.file("jobs.csv")}}},
                                       {"policy", "priority"},
                                       {"preemption", true},
                                       {"checkpoint", {{"interval", "10min"}, {"restart", "1min"}}}});
  const results::ScheduleRun run = simulate_schedule(s);
  int preempted = 0;
  double high_wait = 0, low_wait = 0;
  int highs = 0, lows = 0;
  for (const results::JobRecord& j : run.jobs) {
    ASSERT_EQ(j.status, results::JobStatus::kCompleted);
    EXPECT_EQ(j.starts, 1 + j.preemptions);
    // Each stop loses less than one interval of progress, plus the restart it pays.
    EXPECT_LE(to_seconds(j.lost), j.preemptions * (600.0 + 60.0) + 1e-6);
    EXPECT_GE(to_seconds(j.lost), j.preemptions * 60.0 - 1e-6);
    // What it ran: its length, what it lost, its restarts.
    if (j.preemptions == 0) {
      EXPECT_NEAR(to_seconds(j.finish - j.first_start), to_seconds(j.ideal), 1e-6);
    }
    preempted += j.preemptions > 0;
    if (j.priority > 0) {
      high_wait += to_seconds(j.wait());
      ++highs;
      EXPECT_EQ(j.preemptions, 0);  // nothing outranks them
    } else {
      low_wait += to_seconds(j.wait());
      ++lows;
    }
  }
  EXPECT_GT(preempted, 10);
  EXPECT_LT(high_wait / highs, 0.5 * (low_wait / lows));
}

TEST(Scheduler, FailuresRestartJobsFromTheirLastCheckpoint) {
  test::TempDir dir("fail");
  const ScheduleScenario s = scenario({{"nodes", node_list(dir, 4, 8)},
                                       {"jobs", {{"rate", 0.005}, {"count", 300}, {"gpus", {{"choice", {8, 16}}}}, {"duration", "2h"}, {"seed", 5}}},
                                       {"checkpoint", {{"interval", "30min"}, {"restart", "5min"}}},
                                       {"failures", {{"mtbf_per_gpu", "100h"}, {"repair", "1h"}, {"seed", 2}}}});
  const results::ScheduleRun run = simulate_schedule(s);
  const results::ScheduleMetrics m = results::schedule_metrics(run);
  EXPECT_GT(m.failures, 20);
  EXPECT_EQ(m.completed, 300);
  for (const results::JobRecord& j : run.jobs) {
    EXPECT_EQ(j.starts, 1 + j.failures);
    EXPECT_LE(to_seconds(j.lost), j.failures * (1800.0 + 300.0) + 1e-6);
    // The run is the length plus the lost work plus the restarts: never shorter.
    EXPECT_GE(to_seconds(j.finish - j.first_start) + 1e-6, to_seconds(j.ideal) + j.failures * 300.0);
  }
}

TEST(Scheduler, AJobThatCanNeverFitIsRejectedWithItsReason) {
  test::TempDir dir("reject");
  test::write_text(dir.file("jobs.csv"), "id,arrival_s,gpus,duration_s\na,0,4,100\nhuge,1,64,100\nb,2,8,100\n");
  const ScheduleScenario s = scenario({{"nodes", node_list(dir, 2, 8)}, {"jobs", {{"trace", dir.file("jobs.csv")}}}});
  const results::ScheduleRun run = simulate_schedule(s);
  ASSERT_EQ(run.jobs.size(), 3u);
  EXPECT_EQ(run.jobs[1].status, results::JobStatus::kRejected);
  EXPECT_NE(run.jobs[1].reason.find("64 GPUs requested; the cluster has 16"), std::string::npos) << run.jobs[1].reason;
  EXPECT_EQ(run.jobs[2].status, results::JobStatus::kCompleted);
  EXPECT_DOUBLE_EQ(to_seconds(run.jobs[2].wait()), 0.0);  // a rejected job blocks nobody
}

TEST(Scheduler, AlibabaTraceAsPublishedNeverQueues) {
  // Every GPU task of the trace fits its cluster at once (shares packed): no waits, whatever the
  // policy; each runs exactly its duration.
  const ScheduleScenario s =
      load_schedule_scenario(source("configs/examples/schedule-alibaba-2023.json"), {"/node_fraction=1", "/jobs/time_scale=1"});
  const results::ScheduleRun run = simulate_schedule(s);
  EXPECT_EQ(run.gpus, 6212);
  EXPECT_EQ(run.servers, 1213);
  const results::ScheduleMetrics m = results::schedule_metrics(run);
  EXPECT_EQ(m.completed, 6203);
  EXPECT_EQ(m.wait.max, 0.0);
  EXPECT_DOUBLE_EQ(m.slowdown.max, 1.0);
}

TEST(Scheduler, AlibabaTraceSjfBeatsFifoAndReplaysDeterministically) {
  const std::string file = source("configs/examples/schedule-alibaba-2023.json");
  // The scenario's load: every twentieth node, arrivals 50x faster (the trace as published never
  // queues on its own cluster: test below).
  ScheduleScenario fifo = load_schedule_scenario(file);
  ScheduleScenario sjf = load_schedule_scenario(file, {"/policy=\"sjf\""});
  const results::ScheduleRun a = simulate_schedule(fifo), b = simulate_schedule(fifo), c = simulate_schedule(sjf);
  EXPECT_EQ(results::schedule_jobs_csv(a), results::schedule_jobs_csv(b));
  EXPECT_EQ(results::schedule_timeline_csv(a), results::schedule_timeline_csv(b));
  const results::ScheduleMetrics mf = results::schedule_metrics(a), ms = results::schedule_metrics(c);
  EXPECT_EQ(mf.completed, ms.completed);
  EXPECT_EQ(mf.jobs, 6203);
  EXPECT_EQ(a.skipped, 8152 - 6203);
  EXPECT_LT(ms.jct.mean, mf.jct.mean);
  RecordProperty("fifo_over_sjf_mean_jct", std::to_string(mf.jct.mean / ms.jct.mean));
  std::printf("Alibaba v2023, 287 GPUs, arrivals 50x: mean JCT FIFO %.0f s, SJF %.0f s (FIFO / SJF %.3f); mean wait %.0f vs %.0f s\n",
              mf.jct.mean, ms.jct.mean, mf.jct.mean / ms.jct.mean, mf.wait.mean, ms.wait.mean);
}

// ---- placement on the cluster graph --------------------------------------------------------

results::ScheduleMetrics leafspine(const std::string& placement, int oversubscription, results::ScheduleRun* keep = nullptr) {
  const ScheduleScenario s = load_schedule_scenario(
      source("configs/examples/schedule-leafspine-2to1.json"),
      {"/jobs/count=300", "/placement=\"" + placement + "\"",
       "/cluster_overrides/0=/fabric/oversubscription=" + std::to_string(oversubscription)});
  results::ScheduleRun run = simulate_schedule(s);
  results::ScheduleMetrics m = results::schedule_metrics(run);
  if (keep) *keep = std::move(run);
  return m;
}

TEST(Scheduler, TopologyAwarePlacementBeatsPackingOnAnOversubscribedFabricOnly) {
  // 300 data-parallel GPT 1.7B jobs of 1-8 servers on 128 DGX H100 under 32 leaves. At 2:1 the
  // jobs that packing spreads over leaves share leaf-spine cables; under one leaf they do not.
  results::ScheduleRun packed_run;
  const results::ScheduleMetrics topology = leafspine("topology", 2), packed = leafspine("packed", 2, &packed_run);
  std::printf("2:1 mean JCT: topology %.1f s, packed %.1f s (packed / topology %.4f)\n", topology.jct.mean, packed.jct.mean,
              packed.jct.mean / topology.jct.mean);
  EXPECT_LT(topology.jct.mean, packed.jct.mean);
  // The report names the links that did it: leaf-spine cables carried two or more jobs at once.
  const std::string table = results::schedule_table(packed_run, packed);
  EXPECT_NE(table.find("most shared links"), std::string::npos);
  EXPECT_NE(table.find("(tier 2)"), std::string::npos);
  double slowed = 0;
  for (const results::JobRecord& j : packed_run.jobs) slowed = std::max(slowed, to_seconds(j.finish - j.first_start) / to_seconds(j.alone));
  EXPECT_GT(slowed, 1.05);  // some job ran at least 5% slower than alone on its placement
  // Non-blocking: the same cables never run out, and the placements give the same JCT.
  const results::ScheduleMetrics topology1 = leafspine("topology", 1), packed1 = leafspine("packed", 1);
  std::printf("1:1 mean JCT: topology %.1f s, packed %.1f s\n", topology1.jct.mean, packed1.jct.mean);
  EXPECT_NEAR(packed1.jct.mean / topology1.jct.mean, 1.0, 1e-3);
}

TEST(GpuPool, LeafGroupsComeFromTheNicsLeaves) {
  // h100-leafspine-2to1: 4 servers per leaf.
  const coll::Machine m = coll::load_machine(source("configs/clusters/h100-leafspine-2to1.json"), {"/servers/0/count=16"});
  const GpuPool pool(m.cluster);
  EXPECT_EQ(pool.gpus(), 128);
  EXPECT_EQ(pool.groups(), 4);
  for (std::size_t s = 0; s < pool.servers().size(); ++s) EXPECT_EQ(pool.servers()[s].group, static_cast<int>(s / 4));
}

TEST(GpuPool, TopologyKeepsAJobUnderOneLeafWherePackingSpreadsIt) {
  // Leaf 0 has one whole free server, leaf 1 two: a two-server job.
  const coll::Machine m = coll::load_machine(source("configs/clusters/h100-leafspine-2to1.json"), {"/servers/0/count=8"});
  GpuPool pool(m.cluster);
  Rng rng(1);
  auto fill = [&](int server, int gpus) {
    Placement p;
    for (int g = 0; g < gpus; ++g) p.gpus.push_back(server * 8 + g);
    pool.allocate(p);
  };
  for (int s : {0, 1, 2}) fill(s, 4);  // leaf 0: servers 0-2 half full, 3 free
  for (int s : {4, 5}) fill(s, 4);     // leaf 1: servers 4-5 half full, 6-7 free
  // Fragmentation: whole free GPUs on servers with fewer than the threshold of them.
  EXPECT_EQ(pool.fragmented(8), 5 * 4);
  EXPECT_EQ(pool.fragmented(4), 0);
  EXPECT_EQ(pool.allocated_milli(), 5 * 4 * 1000);
  const GpuRequest r{16, 1000, 1, nullptr};
  const auto packed = pool.place(r, PlacementPolicy::kPacked, rng);
  const auto topology = pool.place(r, PlacementPolicy::kTopology, rng);
  ASSERT_TRUE(packed && topology);
  EXPECT_EQ(packed->servers, 2);
  EXPECT_EQ(packed->groups, 2);
  EXPECT_EQ(topology->servers, 2);
  EXPECT_EQ(topology->groups, 1);
  EXPECT_EQ(topology->gpus.front(), 48);
  // A one-server job goes to the fullest server that holds it (best fit).
  const auto small = pool.place(GpuRequest{4, 1000, 1, nullptr}, PlacementPolicy::kPacked, rng);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->gpus.front(), 4);
  // A share of a GPU goes on the GPU with the least room that holds it.
  Placement share{{12}, 700};
  pool.allocate(share);
  const auto s = pool.place(GpuRequest{1, 200, 1, nullptr}, PlacementPolicy::kPacked, rng);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gpus.front(), 12);
  EXPECT_FALSE(pool.place(GpuRequest{1, 400, 1, nullptr}, PlacementPolicy::kFirstFit, rng)->gpus.front() == 12);
}

}  // namespace
}  // namespace cs::drv

namespace cs::results {
namespace {

TEST(ScheduleMetrics, TimeAveragesLostWorkAndLinkUtilizationByHand) {
  // Two jobs on 8 GPUs over 100 s; the timeline holds each sample until the next.
  ScheduleRun run;
  run.gpus = 8;
  run.users = {"ann", "bob"};
  JobRecord a;
  a.user = "ann";
  a.gpus = 4;
  a.arrival = long_seconds(0);
  a.first_start = long_seconds(0);
  a.finish = long_seconds(60);
  a.ideal = long_seconds(50);
  a.lost = long_seconds(10);  // one restart's worth: 10 s x 4 GPUs
  a.gpu_seconds = 240;
  JobRecord b = a;
  b.user = "bob";
  b.gpus = 2;
  b.arrival = long_seconds(20);
  b.first_start = long_seconds(40);
  b.finish = long_seconds(100);
  b.ideal = long_seconds(60);
  b.lost = long_seconds(0);
  b.gpu_seconds = 120;
  run.jobs = {a, b};
  // 0-20 s: 4 GPUs; 20-40 s: 4 GPUs, b waits, 3 GPUs fragmented; 40-60 s: 6; 60-100 s: 2.
  run.timeline = {{long_seconds(0), 1, 0, 4000, 0, 0},
                  {long_seconds(20), 1, 1, 4000, 0, 3},
                  {long_seconds(40), 2, 0, 6000, 0, 0},
                  {long_seconds(60), 1, 0, 2000, 0, 0},
                  {long_seconds(100), 0, 0, 0, 0, 0}};
  run.links = {{"leaf0", "spine0", 2, 5e11, Bandwidth{50e9}, long_seconds(12), 2},
               {"leaf1", "spine0", 2, 0, Bandwidth{50e9}, long_seconds(0), 1}};
  const ScheduleMetrics m = schedule_metrics(run);
  EXPECT_DOUBLE_EQ(m.makespan_s, 100);
  // (20 x 4 + 20 x 4 + 20 x 6 + 40 x 2) / (100 x 8)
  EXPECT_DOUBLE_EQ(m.gpu_utilization, 360.0 / 800.0);
  // Fragmentation is averaged over the time jobs wait: 3 GPUs for the 20 s b waited.
  EXPECT_DOUBLE_EQ(m.fragmentation, 3.0);
  EXPECT_DOUBLE_EQ(m.lost_gpu_hours, 40.0 / 3600.0);
  EXPECT_DOUBLE_EQ(m.jct.mean, (60.0 + 80.0) / 2);
  EXPECT_DOUBLE_EQ(m.wait.mean, (0.0 + 20.0) / 2);
  EXPECT_DOUBLE_EQ(m.slowdown.max, 80.0 / 60.0);
  EXPECT_DOUBLE_EQ(m.user_share[0], 240.0 / 360.0);
  EXPECT_DOUBLE_EQ(m.user_share[1], 120.0 / 360.0);
  // Tier 2: 5e11 B over 100 s at 50 GB/s is 10% on one link, 0% on the other: mean 5%.
  ASSERT_EQ(m.tier_bytes.size(), 3u);
  EXPECT_DOUBLE_EQ(m.tier_bytes[2], 5e11);
  EXPECT_DOUBLE_EQ(m.tier_utilization[2], 0.05);
  // links.csv: the most shared link first, with its utilization.
  const std::string csv = schedule_links_csv(run, m);
  EXPECT_EQ(csv.substr(csv.find('\n') + 1, 32), "leaf0,spine0,2,500000000000,0.1,");
}

}  // namespace
}  // namespace cs::results
