#include "results/tables.h"

#include <cstdio>

namespace cs::results {

std::string per_gpu_csv(const TrainingRun& s) {
  std::string out = "rank,gpu,dp,pp,cp,tp";
  for (int k = 0; k < kStallCount; ++k) out += std::string(",") + to_string(static_cast<Stall>(k)) + "_s";
  out += ",total_s,memory_weights_bytes,memory_gradients_bytes,memory_optimizer_bytes,memory_gathered_weights_bytes,"
         "memory_gradient_buckets_bytes,memory_activations_bytes,memory_workspace_bytes,memory_fragmentation_bytes,"
         "memory_total_bytes,memory_capacity_bytes\n";
  char buf[64];
  for (std::size_t r = 0; r < s.stalls.size(); ++r) {
    const int grid_rank = s.graph.grid_rank[r];
    const wl::GridCoord c = s.graph.grid.coord(grid_rank);
    out += std::to_string(grid_rank) + "," + s.cluster.node(s.cluster.gpus()[static_cast<std::size_t>(grid_rank)]).name + "," + std::to_string(c.dp) + "," +
           std::to_string(c.pp) + "," + std::to_string(c.cp) + "," + std::to_string(c.tp);
    for (Duration d : s.stalls[r].time) {
      std::snprintf(buf, sizeof buf, ",%.12g", to_seconds(d));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, ",%.12g", to_seconds(s.stalls[r].total()));
    out += buf;
    const wl::MemoryEstimate& m = s.stage_memory.at(static_cast<std::size_t>(c.pp));
    for (Bytes b : {m.weights, m.gradients, m.optimizer_state, m.gathered_weights, m.gradient_buckets, m.activations, m.workspace,
                    m.fragmentation, m.total, m.capacity}) {
      out += ',';
      out += std::to_string(b.value());
    }
    out += "\n";
  }
  return out;
}


}  // namespace cs::results
