// An experiment: a cluster, a model and a parallel plan, read from one JSON file
// (docs/experiment-format.md), and its simulation: one training iteration on the cluster.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "sim/report/stall_attribution.h"
#include "sim/runtime/executor.h"
#include "topology/cluster.h"
#include "workloads/memory.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"
#include "workloads/training_graph.h"

namespace cs::exp {

struct Experiment {
  std::string file;                    // what errors call the experiment
  std::string name;
  std::string cluster;                 // path or bundled name
  std::vector<std::string> cluster_overrides;
  std::string model;                   // path, bundled name or "hf:PATH"
  wl::ParallelPlan plan;
  bool allow_oom = false;
  bool symmetry = true;                // simulate one rank per pipeline stage (training_graph.h)
  struct Straggler {
    int rank = 0;                      // grid rank (= GPU index in rank order)
    double slowdown = 1;               // its compute takes this many times as long
  };
  std::vector<Straggler> stragglers;   // what-if; breaks symmetry, so it turns it off
  // A calibration profile (docs/calibration-profile.md): compute times, link efficiencies, step
  // latencies and the overlap slowdown come from it where it has them. Empty: the catalog.
  std::string profile;
  std::string profile_where;           // the file and JSON path (or option) that named it
};

// A configuration file named by path (tried beside `base_dir` unless it is empty, then as given) or, without a
// '/', by the name of a bundled file, configs/<kind>/<name>.json ("dgx-h100", "gpt-1.7b").
// Returns `ref` itself when nothing is found (the loader then reports the missing file).
std::string resolve_config(const std::string& ref, const std::string& base_dir, const char* kind);

// A model reference as an experiment or the command line writes it (a file, a bundled name, or
// "hf:PATH/config.json"), resolved against `base_dir`; `where` names the file and JSON path (or
// option) for the error when nothing is found.
std::string resolve_model(const std::string& ref, const std::string& base_dir, const std::string& file,
                          const std::string& where);

// A calibration profile named by path or by the name of a bundled one (configs/calibration/);
// ConfigError at `file`, `where` listing the bundled names when there is no such file.
std::string resolve_profile(const std::string& ref, const std::string& base_dir, const std::string& file,
                            const std::string& where);

// Parses an experiment document; `base_dir` resolves relative cluster and model paths.
Experiment parse_experiment(const ConfigDocument& doc, const std::string& base_dir);
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides = {});

struct IterationResult {
  Duration iteration{0};
  double samples_per_s = 0;
  double tokens_per_s = 0;             // transformers
  double tflops_per_gpu = 0;           // training FLOPs (recomputation counted, as Megatron's Eq. 3)
  double model_tflops_per_gpu = 0;     // model FLOPs (no recomputation)
  double mfu = 0;                      // model FLOPs / (peak x GPUs x time)
  int gpus = 0;
  wl::MemoryEstimate memory;           // the worst stage
  std::size_t ops = 0;
  int simulated_ranks = 0;
  std::string imbalance;               // a finding on load imbalance, or empty when balanced
  std::uint64_t events = 0;
};

// What one link carried during the iteration (links that carried nothing are left out).
struct LinkUse {
  topo::LinkId link;
  Bytes bytes{0};
  Duration busy{0};
  double utilization = 0;  // bytes / (usable capacity x iteration time)
};

struct Simulation {
  topo::Cluster cluster;
  wl::Model model;
  wl::TrainingGraph graph;
  std::vector<rt::OpRecord> records;
  std::vector<report::RankBreakdown> stalls;  // per rank, adds up to the iteration time
  std::vector<LinkUse> links;                 // sorted by utilization, highest first
  std::vector<wl::MemoryEstimate> stage_memory;  // per pipeline stage
  IterationResult result;
  // With a profile: what each quantity was taken from (docs/outputs.md, "calibration").
  nlohmann::json calibration;
};

// Loads everything the experiment names, checks memory (unless allow_oom), builds the
// TaskGraph, runs one iteration on the first plan.gpus() GPUs of the cluster in rank order.
Simulation simulate(const Experiment& e);

nlohmann::json summary_json(const Experiment& e, const Simulation& s);
// One row per rank: grid position, GPU, and seconds per stall category (docs/outputs.md).
std::string per_gpu_csv(const Simulation& s);
// One row per link that carried bytes (docs/outputs.md).
std::string links_csv(const Simulation& s);
// The simulated ranks' ops on one track per (rank, stream), Chrome/Perfetto trace JSON.
std::string trace_json(const Simulation& s);

}  // namespace cs::exp
