#include "apps/cmd_size.h"

#include <cstdio>
#include <iostream>

#include "apps/cli_common.h"
#include "apps/cmd_cost.h"
#include "cost/price_catalog.h"
#include "drivers/plan_space.h"
#include "drivers/sizing.h"
#include "results/cost_report.h"

namespace cs::cli {
namespace {

inline constexpr int kSizeSchema = 1;

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}


nlohmann::json plan_json(const wl::ParallelPlan& p) {
  return {{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"cp", p.cp}, {"ep", p.ep}, {"micro_batch", p.micro_batch},
          {"zero", p.zero}, {"label", drv::describe_plan(p)}};
}

nlohmann::json size_json(const drv::SizingSpec& spec, const drv::SizingResult& r) {
  const drv::PaperEstimates& p = r.paper;
  nlohmann::json candidates = nlohmann::json::array();
  for (const drv::SizeCandidate& c : r.candidates) {
    nlohmann::json j = {{"cluster", c.cluster}, {"gpus", c.gpus}, {"servers", c.servers}};
    if (!c.skipped.empty()) {
      j["skipped"] = c.skipped;
    } else {
      j["plan"] = plan_json(c.plan);
      j["estimated_iteration_s"] = to_seconds(c.estimate.iteration);
      j["estimated_time_to_train_s"] = c.time_to_train_s;
      j["meets_deadline"] = c.meets_deadline;
      j["capital_usd"] = c.capital.value();
    }
    candidates.push_back(j);
  }
  nlohmann::json finalists = nlohmann::json::array();
  for (const drv::SizingFinalist& f : r.finalists) {
    nlohmann::json j = {{"cluster", f.candidate.cluster}, {"gpus", f.candidate.gpus}, {"servers", f.candidate.servers},
                        {"plan", plan_json(f.candidate.plan)}, {"capital_usd", f.candidate.capital.value()}};
    if (!f.failure.empty()) {
      j["failure"] = f.failure;
    } else {
      j["iteration_s"] = to_seconds(f.simulated.iteration);
      j["tokens_per_s"] = f.simulated.tokens_per_s;
      j["mfu"] = f.simulated.mfu;
      j["memory_per_gpu_bytes"] = f.simulated.memory.value();
      j["memory_capacity_bytes"] = f.capacity.value();
      j["time_to_train_s"] = f.time_to_train_s;
      j["time_to_train_days"] = f.time_to_train_s / 86400;
      j["meets_deadline"] = f.meets_deadline;
      j["energy_to_train_j"] = f.energy.value();
      j["cost_to_train_usd"] = f.cost_to_train.value();
      j["cloud_cost_usd"] = f.cloud_cost ? nlohmann::json(f.cloud_cost->value()) : nlohmann::json(nullptr);
      j["power_full_load_w"] = f.power_full.value();
      j["average_power_w"] = f.average_power.value();
      j["dominant_stall"] = f.simulated.dominant_stall ? nlohmann::json(results::to_string(*f.simulated.dominant_stall)) : nlohmann::json(nullptr);
      j["dominant_stall_share"] = f.simulated.dominant_share;
      j["bytes_by_tier"] = {{"in_server", f.bytes_by_tier[0]}, {"endpoint_leaf", f.bytes_by_tier[1]},
                            {"leaf_spine", f.bytes_by_tier[2]}, {"spine_core", f.bytes_by_tier[3]}};
      j["within_budget"] = f.within_budget;
    }
    finalists.push_back(j);
  }
  const auto index = [](const std::optional<std::size_t>& i) { return i ? nlohmann::json(*i) : nlohmann::json(nullptr); };
  return {{"schema", kSizeSchema},
          {"kind", "size"},
          {"name", spec.name},
          {"goal", {{"tokens", spec.tokens}, {"deadline_s", spec.deadline_s},
                    {"budget_usd", spec.budget_usd ? nlohmann::json(*spec.budget_usd) : nlohmann::json(nullptr)}}},
          {"estimates",
           {{"parameters", p.parameters},
            {"active_parameters", p.active_parameters},
            {"tokens_per_iteration", p.tokens_per_iteration},
            {"iterations", p.iterations},
            {"flops_to_train", p.flops_to_train.value()},
            {"flops_6nd", p.flops_6nd.value()},
            {"model_state_bytes", p.model_state.value()},
            {"data_volume_bytes", p.data_volume.value()},
            {"storage_read_rate_bytes_per_s", p.storage_read_rate.value()},
            {"gpu", p.gpu},
            {"gpu_peak_flops", p.peak.value()},
            {"gpu_memory_bytes", p.hbm.value()},
            {"gpus_for_memory", p.gpus_for_memory},
            {"gpus_for_deadline", p.gpus_for_deadline}}},
          {"candidates", candidates},
          {"finalists", finalists},
          {"smallest", index(r.smallest)},
          {"cheapest", index(r.cheapest)},
          {"no_cluster_needed", r.no_cluster_needed},
          {"answer", r.answer},
          {"seconds", r.seconds}};
}

void print_size(const drv::SizingSpec& spec, const drv::SizingResult& r) {
  const drv::PaperEstimates& p = r.paper;
  std::cout << "clustersim size: " << spec.name << "\n\n"
            << "on paper\n"
            << "  parameters           " << fixed(static_cast<double>(p.parameters) / 1e9, 2) << "B ("
            << fixed(static_cast<double>(p.active_parameters) / 1e9, 2) << "B active)\n"
            << "  tokens               " << fixed(p.tokens / 1e9, 1) << "B in " << fixed(p.iterations, 0) << " iterations of "
            << fixed(p.tokens_per_iteration, 0) << "\n"
            << "  FLOPs to train       " << scientific(p.flops_to_train.value()) << " (6ND: " << scientific(p.flops_6nd.value()) << ")\n"
            << "  model states         " << format_bytes(p.model_state) << " (16 B per parameter)\n"
            << "  data                 " << format_bytes(p.data_volume) << ", read at " << format_bandwidth(p.storage_read_rate)
            << " to meet the deadline\n"
            << "  GPUs, lower bounds   " << p.gpus_for_memory << " for memory (" << format_bytes(p.hbm) << " per " << p.gpu << "), "
            << p.gpus_for_deadline << " for the deadline at peak (" << format_flop_rate(p.peak) << ")\n\n";
  std::cout << "candidates (estimated)\n";
  for (const drv::SizeCandidate& c : r.candidates) {
    if (!c.skipped.empty()) continue;
    std::cout << "  " << c.cluster << "  " << c.gpus << " GPUs  " << drv::describe_plan(c.plan) << "  "
              << fixed(c.time_to_train_s / 86400, 2) << " days" << (c.meets_deadline ? "  meets" : "") << "\n";
  }
  std::cout << "\nsimulated\n";
  for (const drv::SizingFinalist& f : r.finalists) {
    std::cout << "  " << f.candidate.cluster << "  " << f.candidate.gpus << " GPUs  " << drv::describe_plan(f.candidate.plan);
    if (!f.failure.empty()) {
      std::cout << "  refused: " << f.failure << "\n";
      continue;
    }
    std::cout << "  " << fixed(f.time_to_train_s / 86400, 2) << " days, MFU " << fixed(100 * f.simulated.mfu, 1) << "%, capital "
              << results::format_money(f.candidate.capital) << ", to train " << results::format_money(f.cost_to_train) << ", "
              << fixed(f.power_full.value() / 1e3, 1) << " kW";
    if (f.simulated.dominant_stall) {
      std::cout << ", limited by " << results::to_string(*f.simulated.dominant_stall) << " ("
                << fixed(100 * f.simulated.dominant_share, 0) << "%)";
    }
    std::cout << "\n";
  }
  std::cout << "\n" << r.answer << "\n";
}

}  // namespace

CLI::App* add_size_command(CLI::App& app, SizeOptions& o) {
  auto* c = app.add_subcommand("size", "The smallest and the cheapest cluster that trains a model by a deadline");
  c->add_option("goal", o.goal, "Goal file (docs/sizing.md)")->required();
  add_price_options(*c, o.prices, o.price_overrides);
  c->add_flag("--json", o.json, "Print JSON (schema 1, docs/sizing.md) instead of the table");
  return c;
}

int run_size_command(const SizeOptions& o) {
  drv::SizingSpec spec = drv::load_sizing(o.goal);
  spec.prices = o.prices;
  spec.price_overrides = o.price_overrides;
  (void)cost::PriceCatalog::load(o.prices, o.price_overrides);
  const bool progress = stderr_is_terminal();
  const drv::SizingResult r = drv::size_cluster(spec, [&](const std::string& what) {
    if (progress) std::cerr << "\r\033[K" << what << std::flush;
  });
  if (progress) std::cerr << "\r\033[K";
  if (o.json) {
    std::cout << size_json(spec, r).dump(2) << "\n";
  } else {
    print_size(spec, r);
  }
  return 0;
}

}  // namespace cs::cli
