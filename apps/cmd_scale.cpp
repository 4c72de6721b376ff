#include "apps/cmd_scale.h"

#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli_common.h"
#include "core/errors.h"
#include "drivers/config_paths.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"

namespace cs::cli {
namespace {


std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1) throw ConfigError("", "--gpus", "expected a comma-separated list of GPU counts such as 8,16,32; got \"" + text + "\"");
    if (!out.empty() && n <= out.back()) throw ConfigError("", "--gpus", "GPU counts must increase: \"" + text + "\"");
    out.push_back(n);
  }
  if (out.empty()) throw ConfigError("", "--gpus", "expected at least one GPU count");
  return out;
}

struct Point {
  int gpus = 0;
  results::IterationResult result;
  double speedup = 0, efficiency = 0;
  std::string dominant_stall;
  double dominant_share = 0;
};

}  // namespace

CLI::App* add_scale_command(CLI::App& app, ScaleOptions& o) {
  auto* cmd = app.add_subcommand("scale", "Speedup and efficiency of an experiment at several GPU counts");
  cmd->add_option("experiment", o.experiment, "Experiment file")->required();
  cmd->add_option("--gpus", o.gpus, "GPU counts, increasing (default 1,2,4,8,16,32)");
  cmd->add_flag("--weak", o.weak, "Keep the batch per GPU (weak scaling); default: keep the global batch");
  cmd->add_option("--profile", o.profile, "Take compute and network parameters from a calibration profile");
  cmd->add_option("--set", o.overrides, "Override an experiment value: /json/pointer=value (repeatable)");
  cmd->add_flag("--json", o.json, "Print JSON");
  return cmd;
}

int print_scaling(const ScaleOptions& o, bool json) {
  drv::Experiment base = drv::load_experiment(o.experiment, o.overrides);
  if (!o.profile.empty()) {
    base.profile = drv::resolve_profile(o.profile, "", "", "--profile");
    base.profile_where = "--profile";
  }
  const std::vector<int> counts = parse_counts(o.gpus);
  const int model_parallel = base.plan.tp * base.plan.pp * base.plan.cp;
  const int per_replica_batch = base.plan.global_batch / base.plan.dp;
  std::vector<Point> points;
  for (int n : counts) {  // validate every point before simulating any
    if (n % model_parallel != 0) {
      throw ConfigError("", "--gpus", std::to_string(n) + " GPUs are not a multiple of tp x pp x cp = " + std::to_string(model_parallel));
    }
  }
  for (int n : counts) {
    drv::Experiment e = base;
    e.plan.dp = n / model_parallel;
    if (o.weak) e.plan.global_batch = per_replica_batch * e.plan.dp;
    if (e.plan.global_batch % (e.plan.micro_batch * e.plan.dp) != 0) {
      throw ConfigError(base.file, "/plan/global_batch", "the global batch " + std::to_string(e.plan.global_batch) +
                                                             " does not split over " + std::to_string(e.plan.dp) + " replicas of micro-batches of " +
                                                             std::to_string(e.plan.micro_batch) + " (try --weak)");
    }
    if (!json && stderr_is_terminal()) std::cerr << "\r  simulating " << n << " GPUs   " << std::flush;
    const results::TrainingRun s = drv::simulate_training(e);
    Point p;
    p.gpus = n;
    p.result = s.result;
    // The largest non-compute category, mean over GPUs.
    const auto means = results::mean_stall_seconds(s.stalls);
    for (int k = 1; k < results::kStallCount; ++k) {
      const double share = means[static_cast<std::size_t>(k)] / to_seconds(s.result.iteration);
      if (share > p.dominant_share) {
        p.dominant_share = share;
        p.dominant_stall = results::to_string(static_cast<results::Stall>(k));
      }
    }
    points.push_back(p);
  }
  if (!json && stderr_is_terminal()) std::cerr << "\r" << std::string(40, ' ') << "\r";
  const Point& first = points.front();
  for (Point& p : points) {
    p.speedup = p.result.samples_per_s / first.result.samples_per_s;
    p.efficiency = p.speedup / (static_cast<double>(p.gpus) / first.gpus);
  }
  // Where adding GPUs stops paying: the first point whose throughput does not grow (stop), else
  // the first whose efficiency falls below 90% (falls).
  const Point* stop = nullptr;
  const Point* falls = nullptr;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (!stop && points[i].result.samples_per_s <= points[i - 1].result.samples_per_s) stop = &points[i];
    if (!falls && points[i].efficiency < 0.9) falls = &points[i];
  }
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Point& p : points) {
      rows.push_back({{"gpus", p.gpus}, {"iteration_time_s", to_seconds(p.result.iteration)}, {"samples_per_s", p.result.samples_per_s},
                      {"tokens_per_s", p.result.tokens_per_s}, {"speedup", p.speedup}, {"efficiency", p.efficiency},
                      {"dominant_stall", p.dominant_stall}, {"dominant_stall_share", p.dominant_share}});
    }
    nlohmann::json out = {{"experiment", base.name}, {"weak", o.weak}, {"points", rows}};
    out["stops_paying_at_gpus"] = stop ? nlohmann::json(stop->gpus) : nlohmann::json(nullptr);
    out["efficiency_below_90pct_at_gpus"] = falls ? nlohmann::json(falls->gpus) : nlohmann::json(nullptr);
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "clustersim scale: " << base.name << " (" << (o.weak ? "weak" : "strong") << " scaling, against "
            << first.gpus << " GPU" << (first.gpus > 1 ? "s" : "") << ")\n";
  std::cout << "    GPUs    iteration     samples/s   speedup  efficiency  largest stall\n";
  for (const Point& p : points) {
    char line[200];
    const std::string stall = p.dominant_share < 0.005 ? "-" : p.dominant_stall + " " + fixed(100 * p.dominant_share, 0) + "%";
    std::snprintf(line, sizeof line, "  %6d %12s %13.1f %9.2f %10.0f%%  %s\n", p.gpus, format_duration(p.result.iteration).c_str(),
                  p.result.samples_per_s, p.speedup, 100 * p.efficiency, stall.c_str());
    std::cout << line;
  }
  if (stop) {
    std::cout << "  finding: adding GPUs stops paying at " << stop->gpus << " GPUs (throughput no longer grows): "
              << stop->dominant_stall << " takes " << fixed(100 * stop->dominant_share, 0) << "% of each iteration\n";
  } else if (falls) {
    std::cout << "  finding: scaling efficiency falls to " << fixed(100 * falls->efficiency, 0) << "% at " << falls->gpus << " GPUs, where "
              << falls->dominant_stall << " takes " << fixed(100 * falls->dominant_share, 0) << "% of each iteration (" << fixed(100 * points.back().efficiency, 0)
              << "% at " << points.back().gpus << ")\n";
  } else {
    std::cout << "  finding: scaling holds up to " << points.back().gpus << " GPUs (efficiency "
              << fixed(100 * points.back().efficiency, 0) << "%)\n";
  }
  return 0;
}

int run_scale_command(const ScaleOptions& o) { return print_scaling(o, o.json); }

}  // namespace cs::cli
