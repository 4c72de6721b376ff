#include "drivers/trace_replay.h"

#include <algorithm>
#include <memory>
#include <set>

#include "calibration/profile_model.h"
#include "core/errors.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/graph_run.h"
#include "sim/collectives/algorithm_tuner.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_layout.h"
#include "sim/compute/compute_model.h"

namespace cs::drv {
namespace {

// "0-7,16-23" -> the GPU indices, each below `gpus`, each once. Without a text, rank r goes to
// GPU `grid_index[r]` when the graph's symmetries give a grid index per rank (a training
// graph's grid is its plan's placement order, so its ranks land where the iteration puts them;
// the mirrored ranks, numbered after the simulated ones, are not in grid order), else to GPU r.
std::vector<std::uint32_t> parse_placement(const std::string& text, std::uint32_t ranks, std::size_t gpus,
                                           const std::vector<std::uint32_t>& grid_index) {
  std::vector<std::uint32_t> out;
  if (text.empty()) {
    if (ranks > gpus) throw InputError("", "--placement", "the workload has " + std::to_string(ranks) + " ranks but the cluster " + std::to_string(gpus) + " GPUs");
    if (grid_index.size() == ranks) return grid_index;  // a permutation of 0..ranks-1 (TaskGraph::validate)
    for (std::uint32_t r = 0; r < ranks; ++r) out.push_back(r);
    return out;
  }
  auto number = [&](std::string_view s) {
    std::uint64_t v = 0;
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw InputError("", "--placement", "expected GPU indices and ranges such as \"0-7,16-23\", not \"" + text + "\"");
    }
    for (char c : s) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    if (v >= gpus) throw InputError("", "--placement", "GPU " + std::to_string(v) + " is not below the cluster's " + std::to_string(gpus) + " GPUs");
    return static_cast<std::uint32_t>(v);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = std::string_view(text).substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const std::uint32_t a = number(item.substr(0, dash));
    const std::uint32_t b = dash == std::string_view::npos ? a : number(item.substr(dash + 1));
    if (b < a) throw InputError("", "--placement", "the range \"" + std::string(item) + "\" runs backwards");
    for (std::uint32_t g = a; g <= b; ++g) out.push_back(g);
    start = comma + 1;
  }
  if (out.size() != ranks) {
    throw InputError("", "--placement", "it lists " + std::to_string(out.size()) + " GPUs for " + std::to_string(ranks) + " ranks (simulated and mirrored)");
  }
  std::set<std::uint32_t> seen(out.begin(), out.end());
  if (seen.size() != out.size()) throw InputError("", "--placement", "a GPU is listed twice");
  return out;
}

}  // namespace

results::ReplayRun replay_trace(const Experiment& e, TraceWorkload w, const std::string& placement) {
  const hw::Catalog catalog = experiment_catalog(e);
  coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, catalog);
  const topo::Cluster& cluster = machine.cluster;
  std::shared_ptr<const cal::ProfileModel> profile;
  if (!e.profile.empty()) {
    profile = std::make_shared<const cal::ProfileModel>(cal::load_profile(e.profile));
    const std::string where = e.profile_where.empty() ? "--profile" : e.profile_where;
    check_profile_gpu(*profile, cluster, e.profile, where.rfind('/', 0) == 0 ? e.file : std::string(), where);
    machine.protocol = calibrate_protocol(*profile, machine.protocol).protocol;
  }
  const tg::TaskGraph& g = w.graph;
  const std::vector<std::uint32_t> gpu_index = parse_placement(placement, g.all_ranks(), cluster.gpus().size(), g.symmetries().grid_index());
  std::vector<topo::NodeId> rank_gpus;
  for (std::uint32_t i : gpu_index) rank_gpus.push_back(cluster.gpus()[i]);
  const std::string precision = enum_name(wl::kPrecisionNames, e.plan.precision);
  for (const tg::Op& op : g.ops()) {
    if (op.kind != tg::OpKind::kCompute) continue;
    const hw::GpuSpec& spec = cluster.gpu_spec(rank_gpus[op.rank]);
    if (!spec.peak.count(precision)) {
      throw ConfigError(e.file, e.at("plan") + "/precision", "GPU " + spec.name + " has no " + precision + " peak to time the workload's compute ops");
    }
  }

  coll::NetworkLayout layout(machine);
  coll::AlgorithmTuner tuner(machine);
  std::vector<topo::NodeId> storage;
  if (std::any_of(g.ops().begin(), g.ops().end(), [](const tg::Op& op) { return op.kind == tg::OpKind::kLoad; })) {
    for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
      if (cluster.node(topo::NodeId{i}).kind == topo::NodeKind::kStorage) storage.push_back(topo::NodeId{i});
    }
    if (storage.empty()) throw ConfigError(e.cluster, "", "the workload reads from storage but the cluster has no storage device");
  }
  GraphRun run = run_graph({layout, tuner, g, rank_gpus, [&] { return std::make_unique<compute::ComputeModel>(precision, profile); },
                            [&](rt::Executor& ex) {
                              if (!storage.empty()) ex.set_storage(storage);
                            },
                            e.fold, "the replay did not finish (a collective or a transfer whose peers never came)"});
  const Duration iteration = run.end - kTimeZero;
  std::vector<results::RankBreakdown> stalls = results::attribute_stalls(g, run.timeline, run.end);
  nlohmann::json import = w.report ? import_report_json(*w.report) : nlohmann::json();
  return results::ReplayRun{std::move(machine.cluster), std::move(w.graph), std::move(rank_gpus), std::move(w.files), std::move(import),
                            precision, std::move(run.timeline), std::move(stalls), std::move(run.links), iteration, run.events,
                            run.network_folded, std::move(machine.warnings)};
}

}  // namespace cs::drv
