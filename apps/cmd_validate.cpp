#include "apps/cmd_validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "apps/cli_common.h"
#include "core/config.h"
#include "core/errors.h"
#include "sim/experiment/experiment.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::cli {
namespace {

// The zoo model of a row: "gpt-1.7b" ... "gpt-1t".
std::string model_name(double params_billion) {
  if (params_billion >= 1000) return "gpt-1t";
  char buf[32];
  std::snprintf(buf, sizeof buf, "gpt-%gb", params_billion);
  return buf;
}

std::vector<std::size_t> parse_rows(const std::string& text, std::size_t count) {
  std::vector<std::size_t> rows;
  if (text.empty()) {
    for (std::size_t i = 0; i < count; ++i) rows.push_back(i);
    return rows;
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || static_cast<std::size_t>(v) > count) {
      throw ConfigError("", "--rows", "expected row numbers from 1 to " + std::to_string(count) + "; got \"" + text + "\"");
    }
    rows.push_back(static_cast<std::size_t>(v - 1));
  }
  return rows;
}

}  // namespace

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& o) {
  auto* v = app.add_subcommand("validate", "Compare predictions with published measurements");
  v->require_subcommand(1);
  auto* m = v->add_subcommand("megatron", "Megatron-LM SC21 Table 1: GPT 1.7B to 1T on 32 to 3,072 A100s");
  m->add_option("--rows", o.rows, "Only these rows (1-based, comma-separated)");
  m->add_flag("--json", o.json, "Print a JSON array");
  auto* pr = v->add_subcommand("profile", "A calibration profile: every measured collective, GEMM and memory-bound point, simulated");
  pr->add_option("profile", o.profile, "The profile (docs/calibration-profile.md)")->required();
  pr->add_option("--nic", o.nic, "NIC of the rebuilt cluster for multi-node points (default NDR-400G)");
  pr->add_flag("--json", o.json, "Print JSON: groups and every point");
  return v;
}

int run_validate_megatron(const ValidateOptions& o) {
  const std::string file = std::string(CS_CONFIG_DIR) + "/validation/megatron-sc21-table1.json";
  const ConfigDocument doc = ConfigDocument::load(file);
  const auto records = doc.root().at("records").elements();
  const std::vector<std::size_t> rows = parse_rows(o.rows, records.size());
  nlohmann::json out = nlohmann::json::array();
  std::vector<double> errors;
  if (!o.json) {
    std::cout << "clustersim validate megatron: Narayanan et al., SC21, Table 1 (A100 SuperPOD, sequence 2048, full recomputation,\n"
                 "  the paper's micro-batches, DDP and interleaving from its run_table_1.sh; TFLOP/s per GPU as the paper's Eq. 3)\n"
                 "   row   params   GPUs   TP  PP  DP  mb  v  batch   published  predicted   error\n";
  }
  for (std::size_t i : rows) {
    const ConfigNode cfg = records[i].at("config");
    exp::Experiment e;
    e.file = file;
    e.name = "megatron row " + std::to_string(i + 1);
    const double params = cfg.at("params_billion").as_number();
    const auto gpus = cfg.at("num_gpus").as_int(1, 1 << 20);
    e.cluster = std::string(CS_CONFIG_DIR) + "/clusters/a100-superpod.json";
    e.cluster_overrides = {"/servers/0/count=" + std::to_string((gpus + 7) / 8)};
    e.model = std::string(CS_CONFIG_DIR) + "/models/" + model_name(params) + ".json";
    e.plan.tp = static_cast<int>(cfg.at("tp").as_int(1, 1024));
    e.plan.pp = static_cast<int>(cfg.at("pp").as_int(1, 1024));
    e.plan.dp = static_cast<int>(cfg.at("dp").as_int(1, 1 << 20));
    e.plan.global_batch = static_cast<int>(cfg.at("global_batch").as_int(1, 1 << 24));
    e.plan.sequence_length = static_cast<int>(cfg.at("seq_len").as_int(1, 1 << 20));
    e.plan.recompute = wl::Recompute::kFull;
    // Megatron-LM as the paper ran it (2021; examples/sc21/run_table_1.sh): fp16 with 16-bit
    // gradients, no flash attention, scatter/gather across pipeline cuts; per row the
    // micro-batch, the DDP flavour (torch: buckets reduced during the backward pass; local:
    // after it) and the layers per virtual pipeline stage of the interleaved schedule.
    const ConfigNode script = records[i].at("script");
    script.expect_only({"micro_batch", "ddp", "layers_per_virtual_stage"});
    e.plan.micro_batch = static_cast<int>(script.at("micro_batch").as_int(1, 1 << 20));
    e.plan.dp_overlap = script.at("ddp").as_choice({"local", "torch"}) == 1;
    e.plan.grad_reduce_bytes = 2;
    if (auto v = script.find("layers_per_virtual_stage")) {
      const auto layers = cfg.at("layers").as_int(1, 1 << 20);
      const auto per = v->as_int(1, 1 << 20);
      if (layers % (e.plan.pp * per) != 0) v->fail("must divide the layers per pipeline stage");
      e.plan.schedule = wl::PipelineSchedule::kInterleaved;
      e.plan.virtual_stages = static_cast<int>(layers / (e.plan.pp * per));
    }
    if (!o.json && stderr_is_terminal()) std::cerr << "\r  simulating row " << i + 1 << "   " << std::flush;
    const exp::Simulation s = exp::simulate(e);
    const double published = records[i].at("measured").at("tflops_per_gpu").as_number();
    const double predicted = s.result.tflops_per_gpu;
    const double error = (predicted - published) / published;
    errors.push_back(std::fabs(error));
    out.push_back({{"row", i + 1},
                   {"params_billion", params},
                   {"gpus", gpus},
                   {"published_tflops_per_gpu", published},
                   {"predicted_tflops_per_gpu", predicted},
                   {"error_pct", 100 * error},
                   {"iteration_time_s", to_seconds(s.result.iteration)}});
    if (!o.json) {
      if (stderr_is_terminal()) std::cerr << "\r" << std::string(30, ' ') << "\r";
      char line[200];
      std::snprintf(line, sizeof line, "  %4zu %8.1fB %6lld %4d %3d %3d %3d %2d %6d %11.0f %10.1f %+7.1f%%\n", i + 1, params,
                    static_cast<long long>(gpus), e.plan.tp, e.plan.pp, e.plan.dp, e.plan.micro_batch, e.plan.virtual_stages,
                    e.plan.global_batch, published, predicted, 100 * error);
      std::cout << line;
    }
  }
  if (o.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::vector<double> sorted = errors;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 ? sorted[sorted.size() / 2] : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    std::printf("  median |error| %.1f%%, worst %.1f%%\n", 100 * median, 100 * sorted.back());
  }
  return 0;
}

}  // namespace cs::cli
