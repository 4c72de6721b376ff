#include "results/training_trace.h"

#include "results/graph_trace.h"

namespace cs::results {

std::string training_trace_json(const TrainingRun& s) {
  const tg::TaskGraph& g = s.graph.graph;
  std::vector<std::string> names;
  for (std::uint32_t r = 0; r < g.ranks(); ++r) {
    const int grid_rank = s.graph.grid_rank[r];
    names.push_back("rank " + std::to_string(grid_rank) + " " + s.cluster.node(s.cluster.gpus()[static_cast<std::size_t>(grid_rank)]).name);
  }
  return graph_trace_json(g, s.timeline, names);
}

}  // namespace cs::results
