#include "drivers/plan_search.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <cmath>
#include <limits>
#include <numeric>

#include "calibration/profile_model.h"
#include "core/errors.h"
#include "drivers/plan_space.h"
#include "drivers/training_run.h"
#include "sim/collectives/machine.h"

namespace cs::drv {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * static_cast<double>(i + j);  // average rank of a tie
    i = j + 1;
  }
  return r;
}

std::int64_t tokens_per_iteration(const wl::Model& m, const wl::ParallelPlan& p) {
  const bool tokens = m.family == wl::ModelFamily::kTransformer && m.transformer.input == wl::InputKind::kTokens;
  return std::int64_t{p.global_batch} * (tokens ? p.sequence_length : 1);
}

// The published heuristic: for model-parallel sizes M in increasing order, tp = min(M, GPUs per
// server), pp = M / tp, dp the rest; the first that divides and fits, with the base plan's
// micro-batch (else 1) and every other setting the base plan's, 1F1B.
std::optional<wl::ParallelPlan> heuristic_plan(const wl::Model& model, const wl::ParallelPlan& base, int gpus, int per_server,
                                               const hw::GpuSpec& gpu, double headroom) {
  for (int mp = 1; mp <= gpus; ++mp) {
    if (gpus % mp != 0) continue;
    const int tp = std::min(mp, per_server);
    if (mp % tp != 0) continue;
    for (int mb : {base.micro_batch, 1}) {
      wl::ParallelPlan p = base;
      p.tp = tp, p.pp = mp / tp, p.cp = 1, p.ep = 1, p.dp = gpus / mp;
      p.micro_batch = mb;
      p.layers_per_stage.clear();
      p.virtual_stages = 1;
      p.schedule = wl::PipelineSchedule::kOneFOneB;
      try {
        const wl::MemoryEstimate mem = wl::peak_memory(wl::estimate_memory(model, p, gpu));
        if (static_cast<double>(mem.total.value()) <= (1 - headroom) * static_cast<double>(mem.capacity.value())) return p;
      } catch (const ConfigError&) {
      }
    }
  }
  return std::nullopt;
}

SearchCandidate simulate(const Experiment& e, const wl::ParallelPlan& plan, PlanEstimator& estimator) {
  SearchCandidate c;
  c.plan = plan;
  c.estimate = estimator.estimate(plan);
  Experiment x = e;
  x.plan = plan;
  try {
    c.simulated = summarize_simulation(simulate_training(x));
  } catch (const InputError& err) {
    c.failure = err.message();
  }
  return c;
}

}  // namespace

SimulatedPlan summarize_simulation(const results::TrainingRun& run) {
  SimulatedPlan s;
  s.iteration = run.result.iteration;
  s.tokens_per_s = run.result.tokens_per_s;
  s.samples_per_s = run.result.samples_per_s;
  s.mfu = run.result.mfu;
  s.memory = run.result.memory.total;
  s.dominant_stall = run.result.largest_stall.stall;
  s.dominant_share = run.result.largest_stall.share;
  return s;
}

double objective_value(SearchObjective o, const wl::ParallelPlan& plan, Duration iteration, std::int64_t tokens) {
  const double t = to_seconds(iteration);
  switch (o) {
    case SearchObjective::kTime: return t;
    case SearchObjective::kTokensPerS: return -static_cast<double>(tokens) / t;
    case SearchObjective::kCost: return static_cast<double>(plan.gpus()) * t / static_cast<double>(tokens);
  }
  return t;
}

std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 3) return std::nullopt;
  const std::vector<double> ra = ranks_of(a), rb = ranks_of(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n - 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

std::vector<SearchCandidate> estimate_space(const Experiment& e, const wl::Model& model, const hw::GpuSpec& gpu, int per_server,
                                            PlanEstimator& estimator, int gpus, const SearchOptions& o, SearchResult& tally,
                                            const std::function<void(const std::string&, double)>& progress) {
  SpaceOptions space_options;
  space_options.per_server = per_server;
  space_options.keep = o.keep;
  space_options.headroom = o.headroom;
  space_options.framework = e.framework;
  PlanSpace space = enumerate_plans(model, e.plan, gpus, gpu, space_options);
  tally.considered += space.considered;
  for (const auto& [why, n] : space.dropped) tally.dropped[why] += n;
  std::vector<SearchCandidate> out;
  out.reserve(space.plans.size());
  for (std::size_t i = 0; i < space.plans.size(); ++i) {
    if (progress && i % 1024 == 0) {
      progress("estimating " + std::to_string(i) + " of " + std::to_string(space.plans.size()) + " plans",
               static_cast<double>(i) / static_cast<double>(space.plans.size()));
    }
    SearchCandidate c;
    c.plan = std::move(space.plans[i]);
    c.estimate = estimator.estimate(c.plan);
    out.push_back(std::move(c));
  }
  return out;
}

SearchResult search_plans(const Experiment& e, const SearchOptions& o, const std::function<void(const std::string&, double)>& progress) {
  const auto tell = [&](const std::string& what, double f) {
    if (progress) progress(what, f);
  };
  const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, experiment_catalog(e));
  const wl::Model model = load_model(e);
  std::shared_ptr<const cal::ProfileModel> profile;
  if (!e.profile.empty()) profile = std::make_shared<const cal::ProfileModel>(cal::load_profile(e.profile));
  const topo::Cluster& cluster = machine.cluster;
  const hw::GpuSpec& gpu = cluster.gpu_spec(cluster.gpus()[0]);
  int per_server = 0;
  for (topo::NodeId g : cluster.gpus()) per_server += cluster.node(g).server == cluster.node(cluster.gpus()[0]).server ? 1 : 0;

  SearchResult r;
  r.gpus = o.gpus.empty() ? std::vector<int>{e.plan.gpus()} : o.gpus;
  for (int n : r.gpus) {
    if (n > static_cast<int>(cluster.gpus().size())) {
      throw ConfigError("", "--gpus", std::to_string(n) + " GPUs are more than the cluster's " + std::to_string(cluster.gpus().size()) + " (" + e.cluster + ")");
    }
  }
  const std::int64_t tokens = tokens_per_iteration(model, e.plan);
  PlanEstimator estimator(machine, model, profile);

  // Pre-filter: enumerate, check, estimate.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<SearchCandidate> kept;
  for (std::size_t g = 0; g < r.gpus.size(); ++g) {
    tell("enumerating plans on " + std::to_string(r.gpus[g]) + " GPUs", static_cast<double>(g) / static_cast<double>(r.gpus.size()));
    std::vector<SearchCandidate> some = estimate_space(e, model, gpu, std::max(per_server, 1), estimator, r.gpus[g], o, r, tell);
    for (SearchCandidate& c : some) kept.push_back(std::move(c));
  }
  r.kept = kept.size();
  r.prefilter_seconds = seconds_since(t0);
  const auto estimated = [&](const SearchCandidate& c) { return objective_value(o.objective, c.plan, c.estimate.iteration, tokens); };
  std::stable_sort(kept.begin(), kept.end(), [&](const SearchCandidate& a, const SearchCandidate& b) { return estimated(a) < estimated(b); });

  // The best estimates, simulated in full.
  const auto t1 = std::chrono::steady_clock::now();
  const std::size_t n = std::min(kept.size(), static_cast<std::size_t>(std::max(o.simulate, 1)));
  for (std::size_t i = 0; i < n; ++i) {
    tell("simulating " + std::to_string(i + 1) + " of " + std::to_string(n) + " best estimates", static_cast<double>(i) / static_cast<double>(n));
    r.ranked.push_back(simulate(e, kept[i].plan, estimator));
  }
  const auto simulated = [&](const SearchCandidate& c) {
    return c.simulated ? objective_value(o.objective, c.plan, c.simulated->iteration, tokens) : std::numeric_limits<double>::infinity();
  };
  std::vector<double> est, sim;
  for (const SearchCandidate& c : r.ranked) {
    if (!c.simulated) continue;
    est.push_back(estimated(c));
    sim.push_back(simulated(c));
  }
  r.rank_correlation = spearman(est, sim);
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [&](const SearchCandidate& a, const SearchCandidate& b) { return simulated(a) < simulated(b); });

  // For comparison: the published heuristic and the experiment's own plan, on the first GPU count
  // (a plan already simulated is not simulated again).
  const auto simulated_already = [&](const wl::ParallelPlan& p, const std::string& what) {
    for (const SearchCandidate& c : r.ranked) {
      if (describe_plan(c.plan) == describe_plan(p) && c.plan.layers_per_stage == p.layers_per_stage) return c;
    }
    if (r.heuristic && describe_plan(r.heuristic->plan) == describe_plan(p) && r.heuristic->plan.layers_per_stage == p.layers_per_stage) {
      return *r.heuristic;
    }
    tell("simulating " + what, 1);
    return simulate(e, p, estimator);
  };
  if (auto h = heuristic_plan(model, e.plan, r.gpus.front(), std::max(per_server, 1), gpu, o.headroom)) {
    r.heuristic = simulated_already(*h, "the heuristic plan");
  }
  if (e.plan.gpus() == r.gpus.front()) r.given = simulated_already(e.plan, "the experiment's plan");
  r.simulate_seconds = seconds_since(t1);
  return r;
}

}  // namespace cs::drv
