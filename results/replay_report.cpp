#include "results/replay_report.h"

#include <cstdio>

#include "results/graph_trace.h"

namespace cs::results {

nlohmann::json replay_summary_json(const std::string& name, const ReplayRun& run) {
  const tg::TaskGraph& g = run.graph;
  nlohmann::json ops_by_kind = nlohmann::json::object();
  for (const tg::Op& op : g.ops()) {
    auto& n = ops_by_kind[tg::to_string(op.kind)];
    n = n.is_null() ? 1 : n.get<std::uint64_t>() + 1;
  }
  nlohmann::json stalls = nlohmann::json::object();
  const auto means = mean_stall_seconds(run.stalls);
  for (int k = 0; k < kStallCount; ++k) stalls[to_string(static_cast<Stall>(k))] = means[static_cast<std::size_t>(k)];
  nlohmann::json out = {{"schema", "clustersim-replay"},
          {"schema_version", 1},
          {"experiment", name},
          {"cluster", run.cluster.name()},
          {"workload", {{"files", run.files}, {"import", run.import}}},
          {"gpus", g.all_ranks()},
          {"simulated_ranks", g.ranks()},
          {"issue_order", tg::to_string(g.issue_order())},
          {"precision", run.precision},
          {"ops", g.size()},
          {"ops_by_kind", ops_by_kind},
          {"iteration_time_s", to_seconds(run.iteration)},
          {"iteration_time_ps", run.iteration.count()},
          {"events", run.events},
          {"mean_time_per_rank_s", stalls}};
  list_warnings_in(out, run.warnings);
  return out;
}

std::string replay_per_rank_csv(const ReplayRun& run) {
  std::string out = "rank,gpu";
  for (int k = 0; k < kStallCount; ++k) out += std::string(",") + to_string(static_cast<Stall>(k)) + "_s";
  out += ",total_s\n";
  char buf[48];
  for (std::uint32_t r = 0; r < run.stalls.size(); ++r) {
    out += std::to_string(r) + "," + run.cluster.node(run.rank_gpus[r]).name;
    for (Duration d : run.stalls[r].time) {
      std::snprintf(buf, sizeof buf, ",%.12g", to_seconds(d));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, ",%.12g\n", to_seconds(run.stalls[r].total()));
    out += buf;
  }
  return out;
}

std::string replay_trace_json(const ReplayRun& run) {
  std::vector<std::string> names;
  for (std::uint32_t r = 0; r < run.graph.ranks(); ++r) names.push_back("rank " + std::to_string(r) + " " + run.cluster.node(run.rank_gpus[r]).name);
  return graph_trace_json(run.graph, run.timeline, names);
}

}  // namespace cs::results
