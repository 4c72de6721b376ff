// A training iteration on the quotient of the rotation of the fabric's leaf blocks or of its twin
// switches (drivers/graph_run.cpp, sim/collectives/network_fold.h) gives what the iteration on
// every link gives: the same time, the same per-rank timeline, and every link's bytes, busy time
// and utilization.
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
Experiment experiment(bool fold, const std::vector<std::string>& sets) {
  Experiment e = load_experiment(kExperiment, sets);
  e.fold = fold;
  return e;
}

Experiment across_spines(bool fold) { return experiment(fold, {"/cluster_overrides/-=/fabric/nodes_per_leaf=2"}); }

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

// The folded run against the run on every link: the iteration time, every op's start and end,
// and every link that carried bytes in one run carried them in the other, with the same bytes
// (to one byte), busy time and utilization.
void expect_same_run(const results::TrainingRun& folded, const results::TrainingRun& full) {
  const double t = to_seconds(full.result.iteration);
  EXPECT_NEAR(to_seconds(folded.result.iteration), t, 1e-9 * t);
  ASSERT_EQ(folded.timeline.size(), full.timeline.size());
  for (std::size_t i = 0; i < full.timeline.size(); ++i) {
    EXPECT_NEAR(to_seconds(folded.timeline[i].start - kTimeZero), to_seconds(full.timeline[i].start - kTimeZero), 1e-9 * t) << "op " << i;
    EXPECT_NEAR(to_seconds(folded.timeline[i].end - kTimeZero), to_seconds(full.timeline[i].end - kTimeZero), 1e-9 * t) << "op " << i;
  }
  std::map<std::uint32_t, results::LinkUse> by_link;
  for (const results::LinkUse& u : full.links) by_link[u.link.value] = u;
  ASSERT_EQ(folded.links.size(), full.links.size());
  for (const results::LinkUse& u : folded.links) {
    const auto it = by_link.find(u.link.value);
    ASSERT_NE(it, by_link.end()) << "link " << u.link.value;
    const double bytes = static_cast<double>(it->second.bytes.value());
    EXPECT_NEAR(static_cast<double>(u.bytes.value()), bytes, 1 + 1e-9 * bytes) << "link " << u.link.value;
    EXPECT_NEAR(to_seconds(u.busy), to_seconds(it->second.busy), 1e-9 * t) << "link " << u.link.value;
    EXPECT_NEAR(u.utilization, it->second.utilization, 1e-9) << "link " << u.link.value;
  }
}

// The run of make(true) folded (by the rotation of `blocks` leaf blocks; 0: by the twin switches
// alone) gives the run of make(false), on every link (expect_same_run); returns the folded run.
template <class Make>
results::TrainingRun expect_folds(const Make& make, std::uint32_t blocks) {
  results::TrainingRun folded = simulate_training(make(true));
  const results::TrainingRun full = simulate_training(make(false));
  EXPECT_TRUE(folded.result.network_folded);
  EXPECT_EQ(folded.result.rotated_blocks, blocks);
  EXPECT_FALSE(full.result.network_folded);
  if (blocks > 0) EXPECT_LT(folded.result.events, full.result.events);
  expect_same_run(folded, full);
  return folded;
}

TEST(TrainingFold, TheTwinSwitchesQuotientGivesTheIterationOnEveryLink) {
  // A replica spans two leaf blocks: the blocks' rotation moves stage 0 onto stage 2, no
  // symmetry of the job, so the twin switches fold it.
  const results::TrainingRun folded = expect_folds(across_spines, 0);
  int spine_links = 0;
  for (const results::LinkUse& u : folded.links) {
    const topo::LinkInfo& info = folded.cluster.link(u.link);
    if (folded.cluster.node(info.src).name.find("spine") != std::string::npos ||
        folded.cluster.node(info.dst).name.find("spine") != std::string::npos) {
      ++spine_links;
    }
  }
  EXPECT_GT(spine_links, 64);  // the spreads reached every spine, both ways
}

// The same job with a replica per leaf block (TP 8 x PP 2 on two servers of one leaf): a
// data-parallel shift moves each block onto the next, which the rotation of the four leaf blocks
// does (topo::BlockRotation), so the iteration runs folded by it: the pipeline transfers of
// block 0's replica stand for the others', the data-parallel rings run whole at a quarter of
// their load, the tensor-parallel collectives on their own server's links.
Experiment replica_per_block(bool fold, std::vector<std::string> more = {}) {
  std::vector<std::string> sets = {"/cluster_overrides/-=/fabric/nodes_per_leaf=2", "/plan/pp=2", "/plan/dp=4"};
  sets.insert(sets.end(), more.begin(), more.end());
  return experiment(fold, sets);
}

TEST(TrainingFold, TheBlocksRotationGivesTheIterationOnEveryLink) {
  expect_folds([](bool fold) { return replica_per_block(fold); }, 4);
}

TEST(TrainingFold, TheBlocksRotationWithTwoReplicasPerBlock) {
  // Four servers per leaf: two replicas per block, two blocks; the shift by two replicas is the
  // rotation, and the rings cross both blocks.
  expect_folds([](bool fold) {
    return experiment(fold, {"/cluster_overrides/-=/fabric/nodes_per_leaf=4", "/plan/pp=2", "/plan/dp=4"});
  }, 2);
}

TEST(TrainingFold, TheBlocksRotationWithNvlsTensorParallelism) {
  // Tensor-parallel all-reduces by NVLS inside each server (their reduction engines are the
  // server's own; kOwnLinks runs) beside the rotation's fold.
  expect_folds([](bool fold) { return replica_per_block(fold, {"/plan/sequence_parallel=false", "/plan/recompute=full"}); }, 4);
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
