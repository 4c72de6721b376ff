#include "apps/cmd_scale.h"

#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli_common.h"
#include "core/errors.h"
#include "core/limits.h"
#include "drivers/config_paths.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"
#include "results/findings.h"

namespace cs::cli {

CLI::App* add_scale_command(CLI::App& app, ScaleOptions& o) {
  auto* cmd = app.add_subcommand("scale", "Speedup and efficiency of an experiment at several GPU counts");
  cmd->add_option("experiment", o.experiment, "Experiment file")->required();
  cmd->add_option("--gpus", o.gpus, "GPU counts, increasing (default 1,2,4,8,16,32)");
  cmd->add_flag("--weak", o.weak, "Keep the batch per GPU (weak scaling); default: keep the global batch");
  add_experiment_options(*cmd, o.overrides, o.hardware, o.profile);
  cmd->add_flag("--json", o.json, "Print JSON");
  return cmd;
}

int print_scaling(const ScaleOptions& o, bool json) {
  drv::Experiment base = load_experiment_with_options(o.experiment, o.overrides, o.hardware, o.profile);
  const std::vector<int> counts = parse_gpu_counts(o.gpus);
  const int model_parallel = base.plan.tp * base.plan.pp * base.plan.cp;
  const int per_replica_batch = base.plan.global_batch / base.plan.dp;
  std::vector<results::ScalingPoint> points;
  std::vector<double> tokens_per_s;  // per point
  std::vector<Warning> warnings;     // of every point, each once
  for (int n : counts) {  // validate every point before simulating any
    if (n % model_parallel != 0) {
      throw ConfigError("", "--gpus", std::to_string(n) + " GPUs are not a multiple of tp x pp x cp = " + std::to_string(model_parallel));
    }
  }
  for (int n : counts) {
    drv::Experiment e = base;
    e.plan.dp = n / model_parallel;
    if (o.weak) {
      const std::int64_t batch = std::int64_t{per_replica_batch} * e.plan.dp;
      if (batch > (1 << 30)) throw ConfigError(base.file, "/plan/global_batch", "weak scaling to " + std::to_string(n) + " GPUs makes a global batch of " + std::to_string(batch) + " samples, more than 2^30");
      e.plan.global_batch = static_cast<int>(batch);
    }
    if (std::int64_t{e.plan.micro_batch} * e.plan.dp > e.plan.global_batch || e.plan.global_batch % (e.plan.micro_batch * e.plan.dp) != 0) {
      throw ConfigError(base.file, "/plan/global_batch", "the global batch " + std::to_string(e.plan.global_batch) +
                                                             " does not split over " + std::to_string(e.plan.dp) + " replicas of micro-batches of " +
                                                             std::to_string(e.plan.micro_batch) + " (try --weak)");
    }
    if (!json && stderr_is_terminal()) std::cerr << "\r  simulating " << n << " GPUs   " << std::flush;
    results::TrainingRun s = drv::simulate_training(e);
    add_warnings(warnings, s.warnings);
    points.push_back({n, s.result.iteration, s.result.samples_per_s, std::move(s.stalls)});
    tokens_per_s.push_back(s.result.tokens_per_s);
  }
  if (!json && stderr_is_terminal()) std::cerr << "\r" << std::string(40, ' ') << "\r";
  print_warnings(warnings);
  const results::ScalingStudy study = results::analyze_scaling(points);
  const results::ScalingFinding& f = study.finding;
  const auto gpus_at = [&](std::optional<std::size_t> i) { return i ? nlohmann::json(points[*i].gpus) : nlohmann::json(nullptr); };
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < points.size(); ++i) {
      const results::ScalingRow& row = study.rows[i];
      rows.push_back({{"gpus", points[i].gpus}, {"iteration_time_s", to_seconds(points[i].iteration)},
                      {"samples_per_s", points[i].samples_per_s}, {"tokens_per_s", tokens_per_s[i]},
                      {"speedup", row.speedup}, {"efficiency", row.efficiency},
                      {"dominant_stall", row.largest.stall ? results::to_string(*row.largest.stall) : ""},
                      {"dominant_stall_share", row.largest.share}});
    }
    nlohmann::json out = {{"experiment", base.name}, {"weak", o.weak}, {"points", rows}};
    out["stops_paying_at_gpus"] = gpus_at(study.stops_paying);
    out["efficiency_below_90pct_at_gpus"] = gpus_at(study.efficiency_below_90pct);
    list_warnings_in(out, warnings);
    out["finding"] = {{"kind", results::to_string(f.verdict)},
                      {"gpus", points[f.at].gpus},
                      {"against_gpus", points[f.against].gpus},
                      {"stall", f.grew ? nlohmann::json(results::to_string(*f.grew)) : nlohmann::json(nullptr)},
                      {"share_against", f.share_against},
                      {"share_at", f.share_at},
                      {"text", f.text}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  const int first = points.front().gpus;
  std::cout << "clustersim scale: " << base.name << " (" << (o.weak ? "weak" : "strong") << " scaling, against "
            << first << " GPU" << (first > 1 ? "s" : "") << ")\n";
  std::cout << "    GPUs    iteration     samples/s   speedup  efficiency  largest stall\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const results::LargestStall& largest = study.rows[i].largest;
    char line[200];
    const std::string stall =
        largest.share < 0.005 ? "-" : std::string(results::to_string(*largest.stall)) + " " + fixed(100 * largest.share, 0) + "%";
    std::snprintf(line, sizeof line, "  %6d %12s %13.1f %9.2f %10.0f%%  %s\n", points[i].gpus,
                  format_duration(points[i].iteration).c_str(), points[i].samples_per_s, study.rows[i].speedup,
                  100 * study.rows[i].efficiency, stall.c_str());
    std::cout << line;
  }
  std::cout << "  finding: " << f.text << "\n";
  return 0;
}

int run_scale_command(const ScaleOptions& o) { return print_scaling(o, o.json); }

}  // namespace cs::cli
