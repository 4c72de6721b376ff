// `clustersim search`: the best parallel plans for an experiment's model, cluster and global
// batch (docs/plan-search.md). Every plan of the space (drivers/plan_space.h) that divides and
// fits is ranked by the fast estimate (drivers/plan_estimate.h); the best `simulate` of them are
// then simulated in full, with the network (drv::simulate_training, as `run`), and ranked by that.
// The published heuristic (Narayanan et al., SC21, Sec. 3 takeaways: tensor parallelism up to the
// GPUs of a server, pipeline parallelism across servers, the smallest model-parallel size that
// fits, data parallelism for the rest) and the experiment's own plan are simulated beside them.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/experiment.h"
#include "drivers/plan_estimate.h"
#include "results/stall_attribution.h"
#include "results/training_run.h"
#include "workloads/memory.h"

namespace cs::drv {

enum class SearchObjective { kTime, kTokensPerS, kCost };
inline constexpr EnumName<SearchObjective> kSearchObjectiveNames[] = {
    {SearchObjective::kTime, "time"}, {SearchObjective::kTokensPerS, "tokens_per_s"}, {SearchObjective::kCost, "cost"}};

struct SearchOptions {
  std::vector<int> gpus;   // GPU counts to search; empty: the experiment's plan's
  int simulate = 12;       // candidates simulated in full, best estimates first
  SearchObjective objective = SearchObjective::kTime;
  std::set<std::string> keep;  // plan dimensions held at the experiment's values (plan_space.h)
  double headroom = 0.05;       // memory a plan must leave free (plan_space.h, SpaceOptions)
};

struct SimulatedPlan {
  Duration iteration{0};
  double tokens_per_s = 0, samples_per_s = 0, mfu = 0;
  Bytes memory{0};
  std::optional<results::Stall> dominant_stall;
  double dominant_share = 0;
};

// The headline numbers of a full simulation that the search and the sizing advisor rank by.
SimulatedPlan summarize_simulation(const results::TrainingRun& run);

struct SearchCandidate {
  wl::ParallelPlan plan;
  PlanEstimate estimate;
  std::optional<SimulatedPlan> simulated;
  std::string failure;  // why the full simulation refused it (empty when it ran)
};

struct SearchResult {
  std::size_t considered = 0, kept = 0;
  std::map<std::string, std::size_t> dropped;
  double prefilter_seconds = 0;  // enumerating, checking memory and estimating the kept plans
  double simulate_seconds = 0;
  std::vector<SearchCandidate> ranked;  // simulated in full, best first by the objective
  std::optional<double> rank_correlation;  // Spearman, estimate vs simulation, over `ranked`
  std::optional<SearchCandidate> heuristic;  // the published heuristic's plan, simulated
  std::optional<SearchCandidate> given;      // the experiment's own plan, simulated
  std::vector<int> gpus;
};

// The objective's value of a plan (lower is better): seconds per iteration; minus tokens (or
// samples) per second; GPU-seconds per token (or sample).
double objective_value(SearchObjective o, const wl::ParallelPlan& plan, Duration iteration, std::int64_t tokens_per_iteration);

// Spearman's rank correlation of two equally long series (average ranks for ties); nothing
// for fewer than 3 values or a constant series.
std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b);

// The pre-filter on one GPU count: every plan of the space (plan_space.h) that divides and fits,
// with its fast estimate, in the space's order; what was considered and dropped is added to
// `tally`. `per_server` is the GPUs of one server (tensor parallelism's limit).
std::vector<SearchCandidate> estimate_space(const Experiment& e, const wl::Model& model, const hw::GpuSpec& gpu, int per_server,
                                            PlanEstimator& estimator, int gpus, const SearchOptions& o, SearchResult& tally,
                                            const std::function<void(const std::string&, double)>& progress = {});

// The search. `progress` (may be empty) is told "what" and a fraction done.
SearchResult search_plans(const Experiment& e, const SearchOptions& o,
                          const std::function<void(const std::string&, double)>& progress = {});

}  // namespace cs::drv
