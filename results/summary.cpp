#include "results/summary.h"

#include <map>

#include "results/availability.h"

namespace cs::results {
namespace {

// Mean over ranks of each stall category, seconds.
nlohmann::json stall_means(const std::vector<RankBreakdown>& stalls) {
  const auto mean = mean_stall_seconds(stalls);
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < kStallCount; ++k) j[to_string(static_cast<Stall>(k))] = mean[static_cast<std::size_t>(k)];
  return j;
}

// Bytes per link tier and the most utilized links.
nlohmann::json network_summary(const TrainingRun& s) {
  std::map<int, std::int64_t> per_tier;
  for (const LinkUse& u : s.links) per_tier[s.cluster.link(u.link).tier] += u.bytes.value();
  nlohmann::json tiers = nlohmann::json::object();
  static const char* kTierNames[] = {"in_server", "endpoint_leaf", "leaf_spine", "spine_core"};
  for (const auto& [tier, bytes] : per_tier) tiers[tier >= 0 && tier < 4 ? kTierNames[tier] : std::to_string(tier)] = bytes;
  nlohmann::json top = nlohmann::json::array();
  for (std::size_t i = 0; i < s.links.size() && i < 10; ++i) {
    const topo::LinkInfo& l = s.cluster.link(s.links[i].link);
    top.push_back({{"src", s.cluster.node(l.src).name}, {"dst", s.cluster.node(l.dst).name}, {"class", hw::to_string(l.link_class)},
                   {"bytes", s.links[i].bytes.value()}, {"utilization", s.links[i].utilization}});
  }
  return {{"bytes_by_tier", tiers}, {"busiest_links", top}};
}

// The iteration's throughput in every FLOP convention that applies, in the conventions' order.
nlohmann::json flop_conventions_json(const IterationResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : r.flop_conventions) {
    out.push_back({{"convention", c.convention}, {"tflops_per_gpu", c.tflops_per_gpu}, {"fraction_of_peak", c.fraction_of_peak}});
  }
  return out;
}


}  // namespace

std::array<std::int64_t, 4> bytes_by_tier(const TrainingRun& run) {
  std::array<std::int64_t, 4> tiers{};
  for (const LinkUse& u : run.links) {
    const int tier = run.cluster.link(u.link).tier;
    if (tier >= 0 && tier < static_cast<int>(tiers.size())) tiers[static_cast<std::size_t>(tier)] += u.bytes.value();
  }
  return tiers;
}

nlohmann::json assumptions_json(const std::vector<SourcedFact>& facts) {
  nlohmann::json out = nlohmann::json::array();
  for (const SourcedFact& f : facts) {
    out.push_back({{"value_of", f.path}, {"file", f.file}, {"value", f.value}, {"kind", f.kind}, {"status", f.status}});
  }
  return out;
}

nlohmann::json energy_json(const TrainingRun& s) {
  if (!s.energy) return nullptr;
  const RunEnergy& e = *s.energy;
  return {{"per_iteration_j", e.iteration.facility.value()},
          {"it_per_iteration_j", e.iteration.it().value()},
          {"gpus_j", e.iteration.gpus.value()},
          {"hosts_j", e.iteration.hosts.value()},
          {"network_j", e.iteration.network.value()},
          {"pue", e.pue},
          {"average_power_w", e.iteration.average_power.value()},
          {"cost_per_hour_usd", e.cost_per_hour.value()},
          {"assumptions", assumptions_json(e.assumptions)}};
}

nlohmann::json goal_json(const TrainingRun& s) {
  if (!s.energy || !s.energy->goal) return nullptr;
  const cost::GoalCost& g = *s.energy->goal;
  return {{"tokens", g.tokens},
          {"time_to_train_s", g.seconds},
          {"time_to_train_days", g.seconds / 86400},
          {"iterations", g.iterations},
          {"energy_j", g.energy.value()},
          {"energy_mwh", to_kilowatt_hours(g.energy) / 1e3},
          {"energy_cost_usd", g.energy_cost.value()},
          {"capital_cost_usd", g.capital_cost.value()},
          {"cost_usd", g.cost().value()},
          {"cloud_cost_usd", g.cloud_cost ? nlohmann::json(g.cloud_cost->value()) : nlohmann::json(nullptr)},
          {"tokens_per_usd", g.tokens_per_dollar()},
          {"tokens_per_j", g.tokens_per_joule()}};
}

nlohmann::json summary_json(const std::string& experiment, const wl::ParallelPlan& plan, const TrainingRun& s) {
  const IterationResult& r = s.result;
  nlohmann::json out = {{"experiment", experiment},
          {"cluster", s.cluster.name()},
          {"model", s.model.name},
          {"gpus", r.gpus},
          {"plan", {{"dp", plan.dp}, {"tp", plan.tp}, {"pp", plan.pp}, {"cp", plan.cp}, {"ep", plan.ep},
                    {"micro_batch", plan.micro_batch}, {"global_batch", plan.global_batch},
                    {"micro_batches", plan.micro_batches()}, {"sequence_length", plan.sequence_length}}},
          {"iteration_time_s", to_seconds(r.iteration)},
          {"iteration_time_ps", r.iteration.count()},
          {"samples_per_s", r.samples_per_s},
          {"tokens_per_s", r.tokens_per_s},
          {"tflops_per_gpu", r.tflops_per_gpu},
          {"model_tflops_per_gpu", r.model_tflops_per_gpu},
          {"mfu", r.mfu},
          {"flop_conventions", flop_conventions_json(r)},
          {"memory_bytes", {{"weights", r.memory.weights.value()}, {"gradients", r.memory.gradients.value()},
                            {"optimizer_state", r.memory.optimizer_state.value()},
                            {"gathered_weights", r.memory.gathered_weights.value()},
                            {"gradient_buckets", r.memory.gradient_buckets.value()}, {"activations", r.memory.activations.value()},
                            {"workspace", r.memory.workspace.value()}, {"fragmentation", r.memory.fragmentation.value()},
                            {"total", r.memory.total.value()},
                            {"capacity", r.memory.capacity.value()}, {"worst_stage", r.memory.worst_stage}}},
          {"stalls_s", stall_means(s.stalls)},
          {"network", network_summary(s)},
          {"simulated_ranks", r.simulated_ranks},
          {"dominant_stall", r.largest_stall.stall ? nlohmann::json(to_string(*r.largest_stall.stall)) : nlohmann::json(nullptr)},
          {"dominant_stall_share", r.largest_stall.share},
          {"finding", r.largest_stall.text},
          {"load_imbalance", r.imbalance ? nlohmann::json(r.imbalance->text) : nlohmann::json(nullptr)},
          {"load_imbalance_share", r.imbalance ? nlohmann::json(r.imbalance->share) : nlohmann::json(nullptr)},
          {"ops", r.ops},
          {"events", r.events},
          {"calibration", s.calibration.is_null() ? nlohmann::json(nullptr) : s.calibration},
          {"assumptions", assumptions_json(s.assumptions)},
          {"energy", energy_json(s)},
          {"energy_unavailable", s.energy ? nlohmann::json(nullptr) : nlohmann::json(s.energy_unavailable)},
          {"goal", goal_json(s)},
          {"availability", s.availability ? availability_json(*s.availability) : nlohmann::json(nullptr)}};
  list_warnings_in(out, s.warnings);
  return out;
}

}  // namespace cs::results
