// The scheduler's network model (drivers/job_network.h): jobs' all-reduces alone and together.
#include "drivers/job_network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_layout.h"

namespace cs::drv {
namespace {

std::string cluster_file(const std::string& name) {
  return std::string(CS_SOURCE_DIR) + "/configs/clusters/" + name;
}

// A one-group (pure data-parallel) job over the cluster's GPUs at these rank-order indices.
JobTraffic dp_job(const topo::Cluster& c, const std::vector<std::size_t>& gpus, Bytes bytes) {
  JobTraffic job;
  job.bytes = bytes;
  job.groups.emplace_back();
  for (std::size_t i : gpus) job.groups[0].push_back(c.gpus()[i]);
  return job;
}

// The all-reduce (auto) of `job`'s only group, run alone by the collective simulator.
coll::CollectiveResult run_alone(const coll::Machine& m, const JobTraffic& job,
                                 std::vector<coll::LinkActivity>* activity = nullptr) {
  coll::CollectiveSimulator sim(m);
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = job.bytes;
  spec.ranks = job.groups.at(0);
  return sim.run(spec, "test", activity);
}

Bytes bytes_on(const std::vector<LinkLoad>& loads, topo::LinkId link) {
  for (const LinkLoad& l : loads) {
    if (l.link == link) return l.bytes;
  }
  return Bytes{0};
}

// leafspine-oversub cut down to 6 single-GPU servers (one 400G NIC each), 2 per leaf on 3
// leaves, one spine, 2:1 at the leaves: each leaf's one uplink is 2 x 400G / 2 = 400G, one NIC's
// rate. With one spine every route is unique, so ECMP labels change nothing.
coll::Machine small_oversubscribed() {
  return coll::load_machine(
      cluster_file("leafspine-oversub.json"),
      {"/servers/0/count=6", "/fabric/endpoints_per_leaf=2", "/fabric/spines=1"});
}

TEST(JobNetwork, AloneIsTheCollectiveSimulatorsAutoRun) {
  // Eight single-GPU servers on one leaf (leafspine-oversub's leaf0): one path per pair, so the
  // job network's ECMP label cannot matter and the time must be the simulator's to the picosecond;
  // the link loads are the simulator's cluster links with their bytes.
  const coll::Machine m = coll::load_machine(cluster_file("leafspine-oversub.json"));
  JobNetwork jn(m);
  const JobTraffic job = dp_job(m.cluster, {0, 1, 2, 3, 4, 5, 6, 7}, mebibytes(64));
  std::vector<coll::LinkActivity> activity;
  const coll::CollectiveResult r = run_alone(m, job, &activity);
  EXPECT_EQ(jn.alone(job), r.time);
  const auto& links = jn.links(job);
  ASSERT_EQ(links.size(), activity.size());  // no reduction engines on this fabric
  for (std::size_t i = 0; i < links.size(); ++i) {
    EXPECT_EQ(links[i].link, activity[i].link);
    EXPECT_EQ(links[i].bytes, activity[i].bytes);
  }

  // Four GPUs of one DGX H100: the same time, and nothing outside the server (tier 0 only).
  const coll::Machine dgx = coll::load_machine(cluster_file("dgx-h100.json"));
  JobNetwork in_server(dgx);
  const JobTraffic local = dp_job(dgx.cluster, {0, 1, 2, 3}, mebibytes(256));
  EXPECT_EQ(in_server.alone(local), run_alone(dgx, local).time);
  EXPECT_FALSE(in_server.links(local).empty());
  for (const LinkLoad& l : in_server.links(local)) {
    EXPECT_EQ(dgx.cluster.link(l.link).tier, 0) << "link " << l.link.value;
    EXPECT_LT(l.link.value, dgx.cluster.link_count());
  }

  // One GPU, or no bytes: time 0, no links.
  const JobTraffic single = dp_job(m.cluster, {9}, mebibytes(64));
  const JobTraffic empty = dp_job(m.cluster, {8, 9}, Bytes{0});
  EXPECT_EQ(jn.alone(single), Duration{0});
  EXPECT_TRUE(jn.links(single).empty());
  EXPECT_EQ(jn.alone(empty), Duration{0});
  EXPECT_TRUE(jn.links(empty).empty());
}

TEST(JobNetwork, JobsOnDisjointLinksKeepTheirAloneTimesWithoutAJointRun) {
  // leafspine-oversub made non-blocking: job A on leaves 0-1 (GPUs 0-3 and 8-11), job B on
  // leaves 2-3 (16-19, 24-27). Both cross the spines, but every link of a leaf-spine belongs to
  // one leaf (a NIC's, a leaf's uplink, a spine's downlink to a leaf), so they share none: two
  // components of one job, their alone times, and no joint simulation.
  const coll::Machine m =
      coll::load_machine(cluster_file("leafspine-oversub.json"), {"/fabric/oversubscription=1"});
  JobNetwork jn(m);
  const Bytes S = mebibytes(128);
  const JobTraffic a = dp_job(m.cluster, {0, 1, 2, 3, 8, 9, 10, 11}, S);
  const JobTraffic b = dp_job(m.cluster, {16, 17, 18, 19, 24, 25, 26, 27}, S);
  bool tier2 = false;
  for (const LinkLoad& la : jn.links(a)) {
    tier2 = tier2 || m.cluster.link(la.link).tier == 2;
    EXPECT_EQ(bytes_on(jn.links(b), la.link), Bytes{0}) << "shared link " << la.link.value;
  }
  EXPECT_TRUE(tier2);  // the job does cross the spines
  const JobTraffic* jobs[] = {&a, &b};
  const std::vector<Duration> t = jn.together(jobs);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], jn.alone(a));
  EXPECT_EQ(t[1], jn.alone(b));
  EXPECT_GT(t[0], Duration{0});
  EXPECT_EQ(jn.joint_runs(), 0u);
}

TEST(JobNetwork, TwoJobsSharingAnOversubscribedUplinkEachLoseTheirShare) {
  // small_oversubscribed(): leaf0 = GPUs 0,1; leaf1 = 2,3; leaf2 = 4,5. Topology-blind spreading
  // puts job A on GPUs {0, 2} and job B on {1, 3}: each all-reduce crosses leaf0 -> spine ->
  // leaf1 and back. Job C, on {4, 5}, never leaves leaf2.
  //
  // Alone a job's flows run at the NIC's usable rate C, which the uplink (one NIC's line rate,
  // same packet efficiency) matches: the job puts d = X / T on it, X its bytes there in one
  // iteration, T its alone time. Together, job-level max-min gives each the level x with
  // 2 x d = C, so each takes T / x = 2 X / C: the bandwidth term doubles. The event simulation of
  // the two all-reduces started together (the same traffic as one job of two groups, whose alone
  // time runs them jointly) takes T + X / C: it doubles the bandwidth term only, so the fluid
  // answer differs from it by no more than the latency part of T, T - X / C.
  const coll::Machine m = small_oversubscribed();
  const topo::Cluster& c = m.cluster;
  JobNetwork jn(m);
  const Bytes S = mebibytes(256);
  const JobTraffic a = dp_job(c, {0, 2}, S);
  const JobTraffic b = dp_job(c, {1, 3}, S);
  const JobTraffic third = dp_job(c, {4, 5}, S);
  const topo::LinkId uplink = *c.find_link(*c.find_node("leaf0"), *c.find_node("spine0"));
  ASSERT_EQ(c.link(uplink).tier, 2);
  const Bytes X = bytes_on(jn.links(a), uplink);
  EXPECT_EQ(bytes_on(jn.links(b), uplink), X);
  // A 2-rank all-reduce sends S each way (ring: 2 (n - 1) / n S = S; a 2-rank tree: S up, S down).
  EXPECT_EQ(X, S);
  const coll::NetworkLayout layout(m);
  const Bandwidth C = layout.usable_bandwidth(uplink);

  const JobTraffic* jobs[] = {&a, &b, &third};
  const std::vector<Duration> t = jn.together(jobs);
  const double alone_a = to_seconds(jn.alone(a)), alone_b = to_seconds(jn.alone(b));
  const double expected = static_cast<double>(X.value()) / C.value();
  // Each of the two: 2 X / C, to the picosecond the level's rounding allows.
  EXPECT_NEAR(to_seconds(t[0]), 2 * expected, 2e-12);
  EXPECT_NEAR(to_seconds(t[1]), 2 * expected, 2e-12);
  EXPECT_EQ(t[2], jn.alone(third));  // its own leaf: no shared link
  EXPECT_EQ(jn.joint_runs(), 1u);    // only {A, B} needed a solve

  // The same traffic as one job of two groups (t = 2 local ranks, one group per rail-like pair):
  // its groups share the uplinks with each other, so its alone time is the event simulation of
  // the two all-reduces together: T + X / C.
  JobTraffic two_groups = a;
  two_groups.groups.push_back(b.groups[0]);
  const double simulated = to_seconds(jn.alone(two_groups));
  std::printf("alone %.3f ms, together %.3f ms (slowdown %.3f), event simulation together %.3f ms\n",
              alone_a * 1e3, to_seconds(t[0]) * 1e3, to_seconds(t[0]) / alone_a, simulated * 1e3);
  EXPECT_NEAR(simulated - alone_a, expected, 10e-12);
  EXPECT_NEAR(simulated - alone_b, expected, 10e-12);
  EXPECT_LE(std::abs(to_seconds(t[0]) - simulated), alone_a - expected + 1e-12);
  EXPECT_GT(to_seconds(t[0]) / alone_a, 1.9);  // the latency is small at 256 MiB
  EXPECT_EQ(bytes_on(jn.links(two_groups), uplink), Bytes{2 * X.value()});
}

TEST(JobNetwork, TogetherIsDeterministicAndIndependentOfOrder) {
  const coll::Machine m = small_oversubscribed();
  const topo::Cluster& c = m.cluster;
  JobNetwork jn(m);
  const Bytes S = mebibytes(32);
  const JobTraffic a = dp_job(c, {0, 2}, S);
  const JobTraffic b = dp_job(c, {1, 3, 5}, S);
  const JobTraffic d = dp_job(c, {4}, S);
  const JobTraffic* abd[] = {&a, &b, &d};
  const std::vector<Duration> first = jn.together(abd);
  EXPECT_EQ(jn.joint_runs(), 1u);  // {a, b}; d is alone
  EXPECT_EQ(jn.together(abd), first);
  const JobTraffic* dba[] = {&d, &b, &a};
  const std::vector<Duration> reversed = jn.together(dba);
  EXPECT_EQ(reversed[0], first[2]);
  EXPECT_EQ(reversed[1], first[1]);
  EXPECT_EQ(reversed[2], first[0]);
  EXPECT_GT(first[0], jn.alone(a));  // they do contend
  // A fresh network, asked in the other order first, gives the same.
  JobNetwork fresh(m);
  EXPECT_EQ(fresh.together(dba), reversed);
}

TEST(JobNetwork, NicLinksCarryWhatTheRingPutsOnTheWire) {
  // A ring all-reduce of n = 8 single-GPU servers on one leaf: every ring edge leaves its
  // server, so each rank's NIC sends 2 (n - 1) / n S up its tier-1 link and the leaf sends the
  // same down the next rank's: the tier-1 links carry 2 x n x 2 (n - 1) / n S = 4 (n - 1) S in
  // all, twice the collective's wire bytes (each flow counted once, on its first link).
  const coll::Machine m = coll::load_machine(cluster_file("leafspine-oversub.json"));
  JobNetwork jn(m);
  const std::int64_t n = 8;
  const Bytes S = mebibytes(8 * n);
  const JobTraffic job = dp_job(m.cluster, {0, 1, 2, 3, 4, 5, 6, 7}, S);
  const coll::CollectiveResult r = run_alone(m, job);
  ASSERT_EQ(r.algorithm, CollectiveAlgorithm::kRing);
  ASSERT_EQ(r.protocol, coll::Protocol::kSimple);
  Bytes tier1{0};
  for (const LinkLoad& l : jn.links(job)) {
    if (m.cluster.link(l.link).tier == 1) tier1 += l.bytes;
  }
  EXPECT_EQ(tier1.value(), 4 * (n - 1) * S.value());
  EXPECT_EQ(tier1.value(), 2 * r.wire_bytes.value());
}

}  // namespace
}  // namespace cs::drv
