// `clustersim size GOAL.json`: the sizing advisor (docs/sizing.md). Given a model, tokens to train
// (or a dataset and epochs), a deadline, optionally a budget, and candidate clusters (cluster files
// whose server count is scaled) and GPU counts, it answers with the smallest and the cheapest
// configurations that meet the deadline, or says that no cluster is needed, or which bound no
// candidate meets and by how much.
//
// Method:
//   1. The paper estimates (shown): parameters, FLOPs to train (model FLOPs per token x tokens;
//      6 N D beside it), model-state memory at 16 bytes per parameter (bf16 weights and gradients,
//      fp32 Adam: Megatron/ZeRO's 2 + 2 + 12), data volume and the storage read rate the deadline
//      needs, and two lower bounds on the GPU count: memory (model states fully sharded over the
//      GPUs' HBM, activations left out) and deadline (FLOPs at the GPU's dense peak, MFU 1).
//   2. For each candidate cluster and GPU count at or above both bounds, ascending: every plan of
//      the plan search's space (drivers/plan_space.h) that fits, ranked by the fast estimate
//      (drivers/plan_estimate.h); the best estimate gives the estimated time to train. A cluster's
//      counts stop after the first that meets the deadline (and one more, which may be cheaper to
//      run); counts whose servers exceed what the template can hold are skipped.
//   3. Finalists: per cluster, the first count that meets the deadline by estimate is simulated in
//      full (drv::simulate_training with the goal, as `run`); if the simulation misses the deadline,
//      the next count is tried (up to two more). Each finalist carries its plan, time to train,
//      capital cost (cost/ownership.h), cost to train, power and the stall that limits it.
//   4. The smallest finalist (fewest GPUs, then capital) and the cheapest (capital, then time).
//      When the smallest fits in one server: "no cluster needed".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "drivers/plan_estimate.h"
#include "drivers/plan_search.h"
#include "results/stall_attribution.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

struct SizingSpec {
  std::string file;
  std::string name;
  std::string model;                // resolved
  nlohmann::json plan;              // the plan template ("training"), dp/tp/pp set per candidate
  double tokens = 0;
  double deadline_s = 0;
  std::optional<double> budget_usd;  // capital
  std::vector<std::string> clusters;  // resolved files
  std::vector<std::string> cluster_refs;  // as written
  std::vector<int> gpus;            // candidate counts, ascending
  double bytes_per_token = 0;       // 0: from the model's vocabulary (2 or 4 bytes per token id)
  std::string base_dir;
  std::string prices;               // --prices
  std::vector<std::string> price_overrides;  // --set-price
};

// Reads and checks GOAL.json (docs/sizing.md); ConfigErrors name the file and JSON path.
SizingSpec load_sizing(const std::string& path);

struct PaperEstimates {
  std::int64_t parameters = 0;
  std::int64_t active_parameters = 0;
  double tokens = 0;
  double tokens_per_iteration = 0;
  double iterations = 0;
  Flops flops_to_train{0};        // model FLOPs (no recomputation)
  Flops flops_6nd{0};             // 6 x active parameters x tokens
  Bytes model_state{0};           // 16 bytes per parameter
  Bytes data_volume{0};           // tokens x bytes per token
  Bandwidth storage_read_rate{0};  // data volume / deadline
  std::string gpu;                // the first candidate cluster's GPU
  FlopRate peak{0};
  Bytes hbm{0};
  int gpus_for_memory = 0;        // ceil(model state / HBM)
  int gpus_for_deadline = 0;      // ceil(FLOPs / (deadline x peak))
};

struct SizeCandidate {
  std::string cluster;            // as written in the goal file
  int gpus = 0;
  int servers = 0;
  bool estimated = false;         // a plan fits and was estimated
  std::string skipped;            // why not (below a bound, too many servers, no plan fits)
  wl::ParallelPlan plan;          // the best estimate's (best_plans.front())
  PlanEstimate estimate;
  // The best few plans by estimate, best first: what a finalist simulates, in order, until one runs.
  std::vector<SearchCandidate> best_plans;
  double time_to_train_s = 0;     // estimated
  bool meets_deadline = false;
  Money capital{0};               // the cluster of this size (its share of one server below a server)
  Power power_full{0};            // its IT power at full load (the same share)
};

struct SizingFinalist {
  SizeCandidate candidate;
  std::string failure;            // the full simulation refused every plan tried
  SimulatedPlan simulated;        // iteration, throughput, MFU, memory, dominant stall
  Bytes capacity{0};
  double time_to_train_s = 0;
  bool meets_deadline = false;
  Energy energy{0};
  Money cost_to_train{0};          // amortized capital + energy
  std::optional<Money> cloud_cost;
  Power power_full{0};             // IT power at full load
  Power average_power{0};          // facility power while training (simulated timeline)
  std::array<std::int64_t, 4> bytes_by_tier{};  // per iteration
  bool within_budget = true;
};

struct SizingResult {
  PaperEstimates paper;
  std::vector<SizeCandidate> candidates;
  std::vector<SizingFinalist> finalists;
  std::optional<std::size_t> smallest, cheapest;  // into finalists
  bool no_cluster_needed = false;
  std::string answer;     // one or two sentences
  double seconds = 0;
};

SizingResult size_cluster(const SizingSpec& spec, const std::function<void(const std::string&)>& progress = {});

}  // namespace cs::drv
