// What replaying a recorded or written workload (a Chakra trace or a TaskGraph file,
// drivers/trace_workload.h) on a cluster produced: the graph and the GPU of each rank, the
// timeline of every op, where each rank's time went and what each link carried. The driver
// (drivers/trace_replay.h) fills it; the writers (replay_report.h) read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "core/warning.h"
#include "results/link_use.h"
#include "results/stall_attribution.h"
#include "taskgraph/task_graph.h"
#include "taskgraph/timeline.h"
#include "topology/cluster.h"

namespace cs::results {

struct ReplayRun {
  topo::Cluster cluster;
  tg::TaskGraph graph;
  std::vector<topo::NodeId> rank_gpus;   // simulated, then mirrored ranks
  std::vector<std::string> files;        // the workload's files, ranks in order
  nlohmann::json import;                 // the Chakra import report (null for a TaskGraph file)
  std::string precision;                 // of the compute model, for ops timed by it
  tg::Timeline timeline;
  std::vector<RankBreakdown> stalls;     // per simulated rank, adds up to the iteration time
  std::vector<LinkUse> links;            // busiest first
  Duration iteration{0};                 // the end of the last op
  std::uint64_t events = 0;
  bool network_folded = false;           // on a quotient (drivers/graph_run.h); not an output
  std::vector<Warning> warnings;
};

}  // namespace cs::results
