// A training iteration on the quotient of the fabric's twin switches (drivers/training_run.cpp,
// sim/collectives/network_fold.h) gives what the iteration on every link gives: the same time,
// the same per-rank timeline, and every link's bytes, busy time and utilization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "drivers/experiment.h"
#include "drivers/trace_replay.h"
#include "drivers/trace_workload.h"
#include "drivers/training_run.h"
#include "workloads/training_graph.h"

namespace cs::drv {
namespace {

const std::string kExperiment = std::string(CS_TEST_DATA_DIR) + "/experiments/llama3-70b-h100-64.json";

// 8 DGX H100 of the rail-optimized fabric, two per leaf: each rail's four leaves reach each other
// through the 64 spines, so data- and pipeline-parallel transfers between servers spread over
// them (adaptive routing, the NDR NICs' default).
Experiment across_spines(bool fold) {
  Experiment e = load_experiment(kExperiment, {"/cluster_overrides/-=/fabric/nodes_per_leaf=2"});
  e.fold = fold;
  return e;
}

// The links that carried bytes in the run on every link, and only they, carried them folded,
// each the same bytes to one byte.
void expect_same_link_bytes(const std::vector<results::LinkUse>& folded, const std::vector<results::LinkUse>& full) {
  std::map<std::uint32_t, Bytes> bytes;
  for (const results::LinkUse& u : full) bytes[u.link.value] = u.bytes;
  ASSERT_EQ(folded.size(), full.size());
  for (const results::LinkUse& u : folded) {
    ASSERT_TRUE(bytes.count(u.link.value)) << "link " << u.link.value;
    const auto b = static_cast<double>(bytes[u.link.value].value());
    EXPECT_NEAR(static_cast<double>(u.bytes.value()), b, 1 + 1e-9 * b) << "link " << u.link.value;
  }
}

TEST(TrainingFold, TheTwinSwitchesQuotientGivesTheIterationOnEveryLink) {
  const results::TrainingRun folded = simulate_training(across_spines(true));
  const results::TrainingRun full = simulate_training(across_spines(false));
  ASSERT_TRUE(folded.result.network_folded);
  ASSERT_FALSE(full.result.network_folded);
  const double t = to_seconds(full.result.iteration);
  EXPECT_NEAR(to_seconds(folded.result.iteration), t, 1e-9 * t);

  ASSERT_EQ(folded.timeline.size(), full.timeline.size());
  for (std::size_t i = 0; i < full.timeline.size(); ++i) {
    EXPECT_NEAR(to_seconds(folded.timeline[i].end - kTimeZero), to_seconds(full.timeline[i].end - kTimeZero), 1e-9 * t) << "op " << i;
  }

  // Every link that carried bytes in one run carried them in the other; spine links among them.
  std::map<std::uint32_t, results::LinkUse> by_link;
  for (const results::LinkUse& u : full.links) by_link[u.link.value] = u;
  ASSERT_EQ(folded.links.size(), full.links.size());
  int spine_links = 0;
  for (const results::LinkUse& u : folded.links) {
    const auto it = by_link.find(u.link.value);
    ASSERT_NE(it, by_link.end()) << "link " << u.link.value;
    const results::LinkUse& v = it->second;
    const double bytes = static_cast<double>(v.bytes.value());
    EXPECT_NEAR(static_cast<double>(u.bytes.value()), bytes, 1 + 1e-9 * bytes) << "link " << u.link.value;
    EXPECT_NEAR(to_seconds(u.busy), to_seconds(v.busy), 1e-9 * t) << "link " << u.link.value;
    EXPECT_NEAR(u.utilization, v.utilization, 1e-9) << "link " << u.link.value;
    const topo::LinkInfo& info = folded.cluster.link(u.link);
    if (folded.cluster.node(info.src).name.find("spine") != std::string::npos ||
        folded.cluster.node(info.dst).name.find("spine") != std::string::npos) {
      ++spine_links;
    }
  }
  EXPECT_GT(spine_links, 64);  // the spreads reached every spine, both ways
}

TEST(TrainingFold, TensorParallelNvlsAllReducesFold) {
  // Without sequence parallelism (full recomputation to fit) the tensor-parallel groups
  // all-reduce inside each DGX H100 by NVLS (single-server NVLS rounds, their pipeline fill from
  // their own paths): the iteration still runs on the quotient, with the iteration time and
  // every link's bytes of the run on every link. (Checked: refusing NVLS rounds, as before, fails
  // network_folded.)
  const auto iteration = [](bool fold) {
    Experiment e = load_experiment(kExperiment, {"/cluster_overrides/-=/fabric/nodes_per_leaf=2", "/plan/sequence_parallel=false",
                                                   "/plan/recompute=full"});
    e.fold = fold;
    return simulate_training(e);
  };
  const results::TrainingRun folded = iteration(true);
  const results::TrainingRun full = iteration(false);
  ASSERT_TRUE(folded.result.network_folded);
  const double t = to_seconds(full.result.iteration);
  EXPECT_NEAR(to_seconds(folded.result.iteration), t, 1e-9 * t);
  expect_same_link_bytes(folded.links, full.links);
}

TEST(TrainingFold, StaticEcmpRunsUnfolded) {
  // Hashed paths are no automorphism's (network_fold.h): the fold is never tried.
  Experiment e = load_experiment(kExperiment, {"/cluster_overrides/-=/fabric/nodes_per_leaf=2",
                                               "/cluster_overrides/-=/fabric/routing=ecmp"});
  EXPECT_FALSE(simulate_training(e).result.network_folded);
}

TEST(TrainingFold, AStorageReadRunsEveryLink) {
  // Reads come from a storage server outside the servers, which the exchanges may not fix
  // (network_fold.h, twin_foldable): the folded attempt is dropped and the iteration runs on every
  // link; the same job with its data local folds.
  const std::string examples = std::string(CS_SOURCE_DIR) + "/configs/examples/";
  Experiment e = load_experiment(examples + "resnet50-storage.json");
  const results::TrainingRun tried = simulate_training(e);
  e.fold = false;
  const results::TrainingRun full = simulate_training(e);
  EXPECT_FALSE(tried.result.network_folded);
  EXPECT_EQ(tried.result.iteration, full.result.iteration);
  EXPECT_EQ(tried.result.events, full.result.events);
  EXPECT_TRUE(simulate_training(load_experiment(examples + "resnet50-ib.json")).result.network_folded);
}

TEST(TrainingFold, AReplayedGraphFoldsAsTheIteration) {
  // `run --trace` of the iteration's own TaskGraph (what `plan --emit-graph` writes) runs through
  // the same drivers/graph_run.cpp: on the quotient it ends when it ends on every link, every
  // link carrying the same bytes, and it ends when the training iteration does.
  const auto replay = [](bool fold) {
    const Experiment e = across_spines(fold);
    const wl::TrainingGraph g = wl::build_training_graph(load_model(e), e.plan, e.file, e.at("plan"), e.symmetry);
    // The default placement: each rank at its grid index, where the iteration puts it.
    return replay_trace(e, TraceWorkload{g.graph, {"graph"}, std::nullopt}, "");
  };
  const results::ReplayRun folded = replay(true);
  const results::ReplayRun full = replay(false);
  ASSERT_TRUE(folded.network_folded);
  ASSERT_FALSE(full.network_folded);
  const double t = to_seconds(full.iteration);
  EXPECT_NEAR(to_seconds(folded.iteration), t, 1e-9 * t);
  EXPECT_EQ(folded.events, full.events);
  expect_same_link_bytes(folded.links, full.links);
  const double trained = to_seconds(simulate_training(across_spines(true)).result.iteration);
  EXPECT_NEAR(to_seconds(folded.iteration), trained, 1e-9 * trained);
}

}  // namespace
}  // namespace cs::drv
