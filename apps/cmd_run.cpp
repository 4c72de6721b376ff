#include "apps/cmd_run.h"

#include "apps/cli_common.h"
#include "apps/cmd_cost.h"
#include "apps/cmd_import.h"

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>

#include "core/long_duration.h"
#include "core/output_file.h"
#include "core/errors.h"
#include "drivers/config_paths.h"
#include "drivers/experiment.h"
#include "drivers/trace_replay.h"
#include "drivers/training_run.h"
#include "results/cost_report.h"
#include "results/replay_report.h"
#include "results/summary.h"
#include "results/tables.h"
#include "results/training_trace.h"

namespace cs::cli {
namespace {

// "h200.json (measured): GEMM ops 97% measured or interpolated, nvlink from the profile".
std::string calibration_line(const nlohmann::json& c) {
  std::string line = c["profile"].get<std::string>() + " (" + c["kind"].get<std::string>() + ")";
  const auto& g = c["compute_ops"]["gemm"];
  const double from_profile = g["measured"].get<double>() + g["interpolated"].get<double>();
  const double total = from_profile + g["extrapolated"].get<double>() + g["nominal"].get<double>();
  if (total > 0) line += ": GEMM ops " + fixed(100 * from_profile / total, 0) + "% measured or interpolated";
  std::string classes;
  for (const auto& [name, v] : c["link_classes"].items()) {
    if (v["provenance"] == "measured") classes += (classes.empty() ? "" : ", ") + name;
  }
  line += classes.empty() ? "; link classes from the catalog" : "; " + classes + " from the profile";
  return line;
}


// Where the time goes: the mean over ranks of each stall category that took any time.
void print_stall_means(const std::vector<results::RankBreakdown>& stalls, Duration iteration, const char* heading) {
  std::cout << "  " << heading << ":\n";
  const double t = to_seconds(iteration);
  const auto means = results::mean_stall_seconds(stalls);
  for (int k = 0; k < results::kStallCount; ++k) {
    const double mean = means[static_cast<std::size_t>(k)];
    if (mean <= 0) continue;
    std::string label = results::to_string(static_cast<results::Stall>(k));
    label.resize(18, ' ');
    std::cout << "    " << label << format_duration(duration_from_seconds(mean)) << "  (" << fixed(100 * mean / t, 1) << "%)\n";
  }
}

// The assumed and fitted values the prediction rests on, one line per group of values:
// "  assumed          gpus/H100-SXM/efficiency: gemm 0.72, attention 0.5 (fitted: ...)".
void print_assumptions(const std::vector<SourcedFact>& facts) {
  if (facts.empty()) return;
  std::map<std::string, std::string> groups;  // parent path -> "key value (kind)", ...
  std::vector<std::string> order;
  int fitted = 0;
  for (const SourcedFact& f : facts) {
    const std::string parent = f.path.substr(1, f.path.rfind('/') - 1);
    std::string item = f.path.substr(f.path.rfind('/') + 1) + " " + f.value;
    if (f.kind == "fitted") {
      item += " (fitted)";
      ++fitted;
    }
    if (!groups.count(parent)) order.push_back(parent);
    std::string& line = groups[parent];
    line += (line.empty() ? "" : ", ") + item;
  }
  std::cout << "  rests on         " << facts.size() - static_cast<std::size_t>(fitted) << " assumed and " << fitted
            << " fitted values, not measured (--json \"assumptions\" says why each):\n";
  for (const std::string& g : order) std::cout << "                   " << g << ": " << groups[g] << "\n";
}


// Energy of the iteration and, with a goal, time, energy and cost to train (docs/cost-model.md).
void print_energy(const results::TrainingRun& s) {
  if (!s.energy) {
    std::cout << "  energy           not priced: " << s.energy_unavailable << "\n";
    return;
  }
  const results::RunEnergy& e = *s.energy;
  std::cout << "  energy           " << fixed(e.iteration.facility.value() / 1e3, 1) << " kJ per iteration (GPUs "
            << fixed(e.iteration.gpus.value() / 1e3, 1) << ", hosts " << fixed(e.iteration.hosts.value() / 1e3, 1)
            << ", network " << fixed(e.iteration.network.value() / 1e3, 1) << " kJ, x PUE " << e.pue << "), "
            << fixed(e.iteration.average_power.value() / 1e3, 1) << " kW average; " << results::format_money(e.cost_per_hour)
            << " per hour (amortized)\n";
  if (!e.goal) return;
  const cost::GoalCost& g = *e.goal;
  std::cout << "  goal             " << fixed(g.tokens / 1e9, 1) << "B tokens in " << fixed(g.seconds / 86400, 2) << " days, "
            << fixed(to_kilowatt_hours(g.energy) / 1e3, 1) << " MWh, " << results::format_money(g.cost()) << " (energy "
            << results::format_money(g.energy_cost) << ", capital " << results::format_money(g.capital_cost) << ")";
  if (g.cloud_cost) std::cout << "; rented " << results::format_money(*g.cloud_cost);
  std::cout << "; " << fixed(g.tokens_per_dollar(), 0) << " tokens per $\n";
}

// Failures and checkpoints over a long run (docs/availability.md): three lines.
void print_availability(const results::TrainingRun& s) {
  if (!s.availability) return;
  const results::AvailabilityReport& a = *s.availability;
  std::cout << "  availability     job MTBF " << format_long_duration(a.job_mtbf) << " (" << a.gpus << " GPUs, "
            << fixed(to_hours(a.mtbf_per_gpu), 0) << " h each); checkpoint ";
  if (a.checkpoint_bytes) std::cout << format_bytes(*a.checkpoint_bytes) << " saved in ";
  std::cout << format_long_duration(a.save_time) << (a.save_time_given ? " (given)" : "") << ", restart "
            << format_long_duration(a.restart_time) << "\n"
            << "                   interval " << format_long_duration(a.interval)
            << (a.interval_given ? " (given)" : " (simulated optimum)") << "; optimal: Young " << format_long_duration(a.young)
            << ", Daly " << format_long_duration(a.daly) << ", with restart " << format_long_duration(a.availability_optimal)
            << ", simulated " << format_long_duration(a.simulated_optimal) << "\n"
            << "                   ETTR " << fixed(a.ettr_simulated, 4) << " simulated (standard error " << std::setprecision(2)
            << a.ettr_standard_error << std::setprecision(6) << ", " << a.simulated_interruptions << " interruptions), "
            << fixed(a.ettr_first_order, 4) << " first-order";
  if (a.effective_time_to_train_s) {
    std::cout << "; goal in " << fixed(*a.effective_time_to_train_s / 86400, 2) << " days with failures, "
              << results::format_money(*a.effective_cost);
  }
  std::cout << "\n";
}

void print_table(const drv::Experiment& e, const results::TrainingRun& s) {
  const auto& r = s.result;
  const auto& p = e.plan;
  std::cout << "clustersim run: " << e.name << "\n"
            << "  model            " << s.model.name << "\n"
            << "  cluster          " << s.cluster.name() << " (" << r.gpus << " of " << s.cluster.gpus().size() << " GPUs)\n"
            << "  plan             dp " << p.dp << " x tp " << p.tp << " x pp " << p.pp << " x cp " << p.cp
            << ", micro-batch " << p.micro_batch << ", global batch " << p.global_batch << " (" << p.micro_batches()
            << " micro-batches)\n"
            << "  iteration        " << format_duration(r.iteration) << "\n"
            << "  throughput       " << fixed(r.samples_per_s, 1) << " samples/s";
  if (r.tokens_per_s > 0) std::cout << ", " << fixed(r.tokens_per_s, 0) << " tokens/s";
  std::cout << "\n"
            << "  TFLOP/s per GPU  " << fixed(r.tflops_per_gpu, 1) << " (with recomputation), " << fixed(r.model_tflops_per_gpu, 1)
            << " (model)\n";
  if (r.flop_conventions.size() > 2) {
    // The published conventions (docs/outputs.md): the first two are the lines above.
    std::cout << "  as published     ";
    for (std::size_t i = 2; i < r.flop_conventions.size(); ++i) {
      std::cout << (i > 2 ? ", " : "") << r.flop_conventions[i].convention << " " << fixed(r.flop_conventions[i].tflops_per_gpu, 1);
    }
    std::cout << " TFLOP/s per GPU\n";
  }
  std::cout << "  MFU              " << fixed(100 * r.mfu, 1) << "%\n"
            << "  memory per GPU   " << format_bytes(r.memory.total) << " of " << format_bytes(r.memory.capacity) << " (weights "
            << format_bytes(r.memory.weights) << ", gradients " << format_bytes(r.memory.gradients) << ", optimizer "
            << format_bytes(r.memory.optimizer_state);
  if (r.memory.gathered_weights.value() > 0) std::cout << ", gathered weights " << format_bytes(r.memory.gathered_weights);
  if (r.memory.gradient_buckets.value() > 0) std::cout << ", gradient buckets " << format_bytes(r.memory.gradient_buckets);
  std::cout << ", activations " << format_bytes(r.memory.activations);
  if (r.memory.fragmentation.value() > 0) std::cout << ", fragmentation " << format_bytes(r.memory.fragmentation);
  std::cout << ")\n";
  std::cout << "  finding          " << r.largest_stall.text << "\n";
  if (r.imbalance) std::cout << "  finding          " << r.imbalance->text << "\n";
  if (!s.calibration.is_null()) std::cout << "  calibration      " << calibration_line(s.calibration) << "\n";
  print_assumptions(s.assumptions);
  // Where the time goes, averaged over GPUs (per GPU in per_gpu.csv with --out).
  print_stall_means(s.stalls, r.iteration, "time per GPU (mean over GPUs)");
  print_energy(s);
  print_availability(s);
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  auto* cmd = app.add_subcommand("run", "Simulate one training iteration of an experiment (default: the built-in one)");
  cmd->add_option("experiment", o.experiment, "Experiment file (docs/experiment-format.md)");
  add_experiment_options(*cmd, o.overrides, o.hardware, o.profile);
  add_price_options(*cmd, o.prices, o.price_overrides);
  cmd->add_option("--train-tokens", o.train_tokens, "A training goal in tokens (replaces the experiment's \"goal\"): time, energy and cost to train");
  cmd->add_option("--out", o.out, "Write summary.json, per_gpu.csv, links.csv and trace.json to this folder (all or nothing)");
  cmd->add_flag("--force", o.force, "Replace the --out folder when it already holds files");
  cmd->add_flag("--json", o.json, "Print the summary as JSON");
  cmd->add_flag("--allow-oom", o.allow_oom, "Simulate even when the memory estimate exceeds the GPU");
  cmd->add_option("--model", o.model, "Replace the experiment's model: a file, a bundled name, or hf:PATH/config.json");
  cmd->add_option("--trace", o.trace.inputs, "Replay a recorded workload instead of the model and plan: Chakra traces (a prefix or the ranks' .et files) or a TaskGraph .json (docs/chakra.md)")
      ->expected(1, -1);
  cmd->add_option("--placement", o.placement, "With --trace: the cluster GPU of each rank, as indices and ranges (\"0-7,16-23\"); default: the first GPUs, or a grid-symmetric graph's grid_index");
  add_trace_options(*cmd, o.trace);
  return cmd;
}

namespace {

void print_replay_table(const drv::Experiment& e, const drv::TraceWorkload& w, const results::ReplayRun& s) {
  const tg::TaskGraph& g = s.graph;
  std::cout << "clustersim run: " << e.name << " (replay of " << (s.import.is_null() ? "a TaskGraph file" : "Chakra traces") << ")\n"
            << "  workload         " << g.size() << " ops on " << g.ranks() << " ranks";
  if (g.mirrored() > 0) std::cout << " (+" << g.mirrored() << " mirrored)";
  std::cout << ", issue order " << tg::to_string(g.issue_order()) << "\n";
  print_import_report(std::cout, w);
  std::cout << "  cluster          " << s.cluster.name() << " (" << g.all_ranks() << " of " << s.cluster.gpus().size() << " GPUs)\n"
            << "  iteration        " << format_duration(s.iteration) << "\n";
  print_stall_means(s.stalls, s.iteration, "time per rank (mean over simulated ranks)");
}

// `run EXPERIMENT --trace ...`: the trace replaces the experiment's model and plan.
int run_trace_command(const RunOptions& o, const drv::Experiment& e) {
  if (!o.model.empty() || o.train_tokens || o.allow_oom) {
    throw InputError("", "--trace", "--model, --train-tokens and --allow-oom apply to a model's training, not to a replayed trace");
  }
  std::optional<OutputFolder> folder;
  if (!o.out.empty()) folder.emplace(o.out, "--out", o.force, std::vector<std::string>{"summary.json", "per_rank.csv", "links.csv", "trace.json"});
  drv::TraceWorkload w = drv::load_trace_workload(o.trace);
  const drv::TraceWorkload shown{tg::TaskGraph(), w.files, w.report};
  const results::ReplayRun s = drv::replay_trace(e, std::move(w), o.placement);
  print_warnings(s.warnings);
  const nlohmann::json summary = results::replay_summary_json(e.name, s);
  if (folder) {
    folder->write("summary.json", summary.dump(2) + "\n");
    folder->write("per_rank.csv", results::replay_per_rank_csv(s));
    folder->write("links.csv", results::links_csv(s.cluster, s.links));
    folder->write("trace.json", results::replay_trace_json(s));
    folder->commit();
  }
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    print_replay_table(e, shown, s);
  }
  return 0;
}

}  // namespace

int run_experiment_command(const RunOptions& o) {
  drv::Experiment e = load_experiment_with_options(o.experiment, o.overrides, o.hardware, o.profile);
  if (!o.trace.inputs.empty()) return run_trace_command(o, e);
  if (o.trace.world || !o.trace.comm_groups.empty() || !o.trace.issue.empty() || o.trace.retime || o.trace.recorded_communication ||
      o.trace.control_dependencies || !o.placement.empty()) {
    throw InputError("", "--trace", "--world, --comm-groups, --issue, --retime, --recorded-communication, --control-dependencies and --placement need --trace");
  }
  e.allow_oom = e.allow_oom || o.allow_oom;
  e.prices = o.prices;
  e.price_overrides = o.price_overrides;
  if (o.train_tokens) {
    if (!(*o.train_tokens > 0 && *o.train_tokens <= 1e16)) {
      throw ConfigError("", "--train-tokens", "expected a positive number of tokens up to 1e16");
    }
    e.goal = drv::Experiment::Goal{*o.train_tokens, "--train-tokens"};
  }
  if (!o.model.empty()) e.model = drv::resolve_model(o.model, "", "", "--model");
  // The folder is checked and staged before the simulation (a refusal comes at once) and put in
  // place only when every file is written (core/output_file.h).
  std::optional<OutputFolder> folder;
  if (!o.out.empty()) folder.emplace(o.out, "--out", o.force, std::vector<std::string>{"summary.json", "per_gpu.csv", "links.csv", "trace.json"});
  const results::TrainingRun s = drv::simulate_training(e);
  print_warnings(s.warnings);
  const nlohmann::json summary = results::summary_json(e.name, e.plan, s);
  if (folder) {
    folder->write("summary.json", summary.dump(2) + "\n");
    folder->write("per_gpu.csv", results::per_gpu_csv(s));
    folder->write("links.csv", results::links_csv(s.cluster, s.links));
    folder->write("trace.json", results::training_trace_json(s));
    folder->commit();
  }
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    print_table(e, s);
  }
  return 0;
}

}  // namespace cs::cli
