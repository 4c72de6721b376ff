#include "apps/cmd_search.h"

#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli_common.h"
#include "core/errors.h"
#include "core/limits.h"
#include "drivers/config_paths.h"
#include "drivers/experiment.h"
#include "drivers/plan_search.h"
#include "drivers/plan_space.h"

namespace cs::cli {
namespace {

nlohmann::ordered_json plan_json(const wl::ParallelPlan& p) {
  nlohmann::ordered_json j;
  j["gpus"] = p.gpus();
  j["tp"] = p.tp, j["pp"] = p.pp, j["dp"] = p.dp, j["cp"] = p.cp, j["ep"] = p.ep;
  j["micro_batch"] = p.micro_batch;
  j["schedule"] = enum_name(wl::kPipelineScheduleNames, p.schedule);
  j["virtual_stages"] = p.virtual_stages;
  j["zero"] = static_cast<int>(p.zero);
  j["recompute"] = enum_name(wl::kRecomputeNames, p.recompute);
  j["sequence_parallel"] = p.sequence_parallel;
  return j;
}

nlohmann::ordered_json candidate_json(const drv::SearchCandidate& c) {
  nlohmann::ordered_json j;
  j["plan"] = plan_json(c.plan);
  j["description"] = drv::describe_plan(c.plan);
  j["estimated_iteration_s"] = to_seconds(c.estimate.iteration);
  if (c.simulated) {
    j["iteration_time_s"] = to_seconds(c.simulated->iteration);
    j["tokens_per_s"] = c.simulated->tokens_per_s;
    j["samples_per_s"] = c.simulated->samples_per_s;
    j["mfu"] = c.simulated->mfu;
    j["memory_per_gpu_bytes"] = c.simulated->memory.value();
    j["dominant_stall"] = c.simulated->dominant_stall ? nlohmann::ordered_json(results::to_string(*c.simulated->dominant_stall)) : nlohmann::ordered_json(nullptr);
    j["dominant_stall_share"] = c.simulated->dominant_share;
    j["failure"] = nullptr;
  } else {
    j["iteration_time_s"] = nullptr;
    j["failure"] = c.failure;
  }
  return j;
}

std::string row(const std::string& rank, const drv::SearchCandidate& c) {
  char line[400];
  if (!c.simulated) {
    std::snprintf(line, sizeof line, "  %5s  %-64s %5d %10s  not simulated: %s\n", rank.c_str(), drv::describe_plan(c.plan).c_str(), c.plan.gpus(),
                  format_duration(c.estimate.iteration).c_str(), c.failure.c_str());
    return line;
  }
  const drv::SimulatedPlan& s = *c.simulated;
  const std::string stall = s.dominant_stall && s.dominant_share >= 0.005
                                ? std::string(results::to_string(*s.dominant_stall)) + " " + fixed(100 * s.dominant_share, 0) + "%"
                                : "-";
  // Tokens per second for language models, samples per second for the others.
  const std::string rate = s.tokens_per_s > 0 ? fixed(s.tokens_per_s, 0) + " tok" : fixed(s.samples_per_s, 0) + " smp";
  std::snprintf(line, sizeof line, "  %5s  %-64s %5d %10s %10s %12s %5.1f%% %7.1f  %s\n", rank.c_str(), drv::describe_plan(c.plan).c_str(),
                c.plan.gpus(), format_duration(c.estimate.iteration).c_str(), format_duration(s.iteration).c_str(), rate.c_str(), 100 * s.mfu,
                static_cast<double>(s.memory.value()) / (1024.0 * 1024 * 1024), stall.c_str());
  return line;
}

}  // namespace

CLI::App* add_search_command(CLI::App& app, SearchCommandOptions& o) {
  auto* cmd = app.add_subcommand("search", "Find the best parallel plans for an experiment's model, cluster and global batch");
  cmd->add_option("experiment", o.experiment, "Experiment file (its model, cluster and global batch; its plan is compared)")->required();
  cmd->add_option("--gpus", o.gpus, "GPU counts to search, such as 512 or 256,512 (default: the experiment's plan's)");
  cmd->add_option("--top", o.top, "Plans to print (default 5)")->check(CLI::Range(1, 1000));
  cmd->add_option("--simulate", o.simulate, "Best estimates simulated in full (default 12)")->check(CLI::Range(1, 10000));
  cmd->add_option("--objective", o.objective, "time (iteration), tokens_per_s, or cost (GPU-seconds per token)");
  cmd->add_option("--headroom", o.headroom, "Share of GPU memory a plan must leave free (default 0.05)")->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--keep", o.keep, "Plan dimensions to hold at the experiment's values: tp, cp, pp, ep, schedule, micro_batch, zero, recompute, sequence_parallel (comma-separated)");
  add_experiment_options(*cmd, o.overrides, o.hardware, o.profile);
  cmd->add_flag("--json", o.json, "Print JSON");
  return cmd;
}

int run_search_command(const SearchCommandOptions& o) {
  drv::SearchOptions so;
  bool known = false;
  for (const auto& n : drv::kSearchObjectiveNames) {
    if (o.objective == n.name) so.objective = n.value, known = true;
  }
  if (!known) throw ConfigError("", "--objective", "expected time, tokens_per_s or cost; got \"" + o.objective + "\"");
  if (!o.gpus.empty()) so.gpus = parse_gpu_counts(o.gpus);
  if (!o.keep.empty()) {
    std::stringstream ss(o.keep);
    for (std::string dim; std::getline(ss, dim, ',');) {
      bool ok = false;
      for (const char* d : drv::kPlanDimensions) ok = ok || dim == d;
      if (!ok) throw ConfigError("", "--keep", "\"" + dim + "\" is not a plan dimension a search varies (tp, cp, pp, ep, schedule, micro_batch, zero, recompute, sequence_parallel)");
      so.keep.insert(dim);
    }
  }
  so.simulate = std::max(o.simulate, o.top);
  so.headroom = o.headroom;
  const drv::Experiment e = load_experiment_with_options(o.experiment, o.overrides, o.hardware, o.profile);
  const bool tty = !o.json && stderr_is_terminal();
  const drv::SearchResult r = drv::search_plans(e, so, [&](const std::string& what, double) {
    if (tty) std::cerr << "\r  " << what << std::string(20, ' ') << std::flush;
  });
  if (tty) std::cerr << "\r" << std::string(78, ' ') << "\r";
  const double rate = r.prefilter_seconds > 0 ? static_cast<double>(r.considered) / r.prefilter_seconds : 0;
  if (o.json) {
    nlohmann::ordered_json out;
    out["schema"] = 1;
    out["experiment"] = e.name;
    out["gpus"] = r.gpus;
    out["objective"] = o.objective;
    out["considered"] = r.considered;
    out["kept"] = r.kept;
    out["headroom"] = o.headroom;
    out["dropped"] = r.dropped;
    out["prefilter_s"] = r.prefilter_seconds;
    out["prefilter_plans_per_s"] = rate;
    out["simulate_s"] = r.simulate_seconds;
    out["rank_correlation"] = r.rank_correlation ? nlohmann::ordered_json(*r.rank_correlation) : nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
      nlohmann::ordered_json c = candidate_json(r.ranked[i]);
      c["rank"] = i + 1;
      ranked.push_back(c);
    }
    out["ranked"] = ranked;
    out["heuristic"] = r.heuristic ? candidate_json(*r.heuristic) : nlohmann::ordered_json(nullptr);
    out["given"] = r.given ? candidate_json(*r.given) : nlohmann::ordered_json(nullptr);
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::string counts;
  for (int n : r.gpus) counts += (counts.empty() ? "" : ",") + std::to_string(n);
  std::cout << "clustersim search: " << e.name << " (" << counts << " GPUs, global batch " << e.plan.global_batch << ", objective " << o.objective << ")\n";
  std::cout << "  plans: " << r.considered << " formed, " << r.kept << " divide and fit";
  for (const auto& [why, n] : r.dropped) std::cout << "; " << n << " " << why;
  std::cout << "\n  memory: plans leave " << fixed(100 * o.headroom, 0) << "% of GPU memory free (--headroom); tensor parallelism within a server\n";
  std::cout << "  pre-filter: " << fixed(r.prefilter_seconds, 2) << " s (" << fixed(rate, 0) << " plans/s); " << r.ranked.size()
            << " best estimates simulated in full in " << fixed(r.simulate_seconds, 1) << " s\n";
  std::cout << "   rank  plan                                                              GPUs   estimated  simulated  throughput/s   MFU  GiB/GPU  largest stall\n";
  for (std::size_t i = 0; i < r.ranked.size() && i < static_cast<std::size_t>(o.top); ++i) std::cout << row(std::to_string(i + 1), r.ranked[i]);
  if (r.ranked.empty()) {
    std::cout << "      -  no plan divides and fits (the reasons above): more GPUs (--gpus), less --headroom, or a smaller batch per GPU\n";
  }
  if (r.heuristic) std::cout << row("heur.", *r.heuristic);
  if (r.given) std::cout << row("yours", *r.given);
  std::cout << "  heur.: the published heuristic (TP within a server, PP across servers, the smallest model-parallel size that fits; SC21)\n";
  if (r.rank_correlation) {
    std::cout << "  estimate vs simulation: Spearman rank correlation " << fixed(*r.rank_correlation, 2) << " over the " << r.ranked.size()
              << " plans simulated\n";
  }
  return 0;
}

}  // namespace cs::cli
