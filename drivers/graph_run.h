// One run of a TaskGraph on the cluster's network, as training iterations and trace replays do
// it: on the quotient of a rotation of the fabric's leaf blocks where that gives the same run
// (sim/collectives/network_fold.h, sim/runtime/executor.h; docs/network-model.md "Training
// iterations folded by the blocks' rotation"), else on the quotient of its twin switches
// ("Training iterations on the quotient"), else, or when a transfer breaks both, on every link.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "results/link_use.h"
#include "sim/collectives/algorithm_tuner.h"
#include "sim/collectives/network_layout.h"
#include "sim/compute/compute_model.h"
#include "sim/runtime/executor.h"
#include "taskgraph/task_graph.h"
#include "taskgraph/timeline.h"

namespace cs::drv {

struct GraphRun {
  tg::Timeline timeline;
  SimTime end = kTimeZero;
  std::uint64_t events = 0;
  std::vector<results::LinkUse> links;          // drivers/link_uses.h, every cluster link's own
  bool network_folded = false;
  std::unique_ptr<compute::ComputeModel> compute;  // the run's (its tally counts this run only)
  std::uint32_t rotated_blocks = 0;  // folded by the rotation of this many leaf blocks, else 0
};

struct GraphRunSetup {
  const coll::NetworkLayout& layout;
  coll::AlgorithmTuner& tuner;
  const tg::TaskGraph& graph;
  const std::vector<topo::NodeId>& rank_gpus;
  // A fresh compute model per attempt, and what to set on the executor before it starts
  // (stragglers, storage).
  std::function<std::unique_ptr<compute::ComputeModel>()> make_compute;
  std::function<void(rt::Executor&)> configure;
  bool fold = true;  // false: every link, whatever the fabric (the experiment's options.fold)
  std::string unfinished;  // the InternalError's text when the graph does not finish
};

GraphRun run_graph(const GraphRunSetup& setup);

}  // namespace cs::drv
