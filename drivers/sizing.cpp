#include "drivers/sizing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/config.h"
#include "core/errors.h"
#include "core/limits.h"
#include "cost/ownership.h"
#include "drivers/config_paths.h"
#include "drivers/experiment.h"
#include "drivers/plan_search.h"
#include "drivers/plan_space.h"
#include "drivers/training_run.h"
#include "results/cost_report.h"
#include "results/summary.h"
#include "sim/collectives/machine.h"
#include "workloads/layer_cost.h"

namespace cs::drv {
namespace fs = std::filesystem;
namespace {

constexpr double kBytesPerParameterState = 16;  // bf16 weights 2 + gradients 2 + fp32 Adam 12
constexpr int kMaxSimulatedPlans = 3;           // plans tried per finalist when the simulation refuses one

std::string days_text(double seconds) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(seconds >= 10 * 86400 ? 1 : 2);
  s << seconds / 86400 << " days";
  return s.str();
}


// The experiment of one candidate: the template's cluster with `servers` servers, the goal's model,
// plan template (dp = tp = pp = 1: the space sets them) and goal.
Experiment candidate_experiment(const SizingSpec& spec, std::size_t cluster, int servers) {
  nlohmann::json plan = spec.plan;
  plan["dp"] = 1;
  plan["tp"] = 1;
  plan["pp"] = 1;
  nlohmann::json doc = {{"name", spec.name},
                        {"cluster", spec.clusters[cluster]},
                        {"cluster_overrides", {"/servers/0/count=" + std::to_string(servers)}},
                        {"model", spec.model},
                        {"plan", plan}};
  const ConfigDocument d = ConfigDocument::from_json(doc, spec.file);
  Experiment e = parse_experiment(d.root(), spec.base_dir);
  e.goal = Experiment::Goal{spec.tokens, "/goal"};
  e.prices = spec.prices;
  e.price_overrides = spec.price_overrides;
  return e;
}

}  // namespace

SizingSpec load_sizing(const std::string& path) {
  const ConfigDocument doc = ConfigDocument::load(path);
  const ConfigNode root = doc.root();
  root.expect_only({"name", "description", "model", "goal", "deadline", "budget_usd", "plan", "candidates", "data"});
  SizingSpec s;
  s.file = path;
  s.base_dir = fs::path(path).parent_path().string();
  s.name = root.has("name") ? root.at("name").as_string() : fs::path(path).stem().string();
  if (auto d = root.find("description")) d->as_string();
  s.model = resolve_model(root.at("model").as_string(), s.base_dir, path, "/model");
  s.tokens = parse_goal(root.at("goal")).tokens;
  const ConfigNode deadline = root.at("deadline");
  deadline.expect_only({"days", "hours"});
  if (deadline.has("days") == deadline.has("hours")) deadline.fail("expected one of \"days\" or \"hours\"");
  const ConfigNode dn = deadline.has("days") ? deadline.at("days") : deadline.at("hours");
  const double dv = dn.as_number();
  const double seconds = dv * (deadline.has("days") ? 86400.0 : 3600.0);
  if (!(seconds > 0 && seconds <= 3650.0 * 86400)) dn.fail_expected("a positive deadline up to 10 years");
  s.deadline_s = seconds;
  if (auto b = root.find("budget_usd")) {
    const double v = b->as_number();
    if (!(v > 0 && v < 1e13)) b->fail_expected("a positive budget in US dollars");
    s.budget_usd = v;
  }
  const ConfigNode plan = root.at("plan");
  for (const char* fixed : {"dp", "tp", "pp"}) {
    if (plan.has(fixed)) plan.at(fixed).fail("the advisor chooses dp, tp and pp; leave them out");
  }
  s.plan = plan.json();
  const ConfigNode cand = root.at("candidates");
  cand.expect_only({"clusters", "gpus"});
  for (const ConfigNode& c : cand.at("clusters").elements()) {
    const std::string ref = c.as_string();
    const std::string file = resolve_config(ref, s.base_dir, "clusters");
    std::error_code ec;
    if (!fs::exists(file, ec)) c.fail("no cluster file \"" + ref + "\" and no bundled cluster of that name");
    s.cluster_refs.push_back(ref);
    s.clusters.push_back(file);
  }
  if (s.clusters.empty()) cand.at("clusters").fail_expected("at least one candidate cluster");
  if (auto g = cand.find("gpus")) {
    for (const ConfigNode& n : g->elements()) {
      const int v = static_cast<int>(n.as_int(1, limits().gpus));
      if (!s.gpus.empty() && v <= s.gpus.back()) n.fail_expected("GPU counts in increasing order");
      s.gpus.push_back(v);
    }
    if (s.gpus.empty()) g->fail_expected("at least one GPU count");
  } else {
    for (int n = 1; n <= 16384; n *= 2) s.gpus.push_back(n);
  }
  if (auto d = root.find("data")) {
    d->expect_only({"bytes_per_token"});
    const double b = d->at("bytes_per_token").as_number();
    if (!(b > 0 && b <= 1e6)) d->at("bytes_per_token").fail_expected("a positive size per token in bytes");
    s.bytes_per_token = b;
  }
  // The plan template, the model and every cluster are checked now (one server each), so that a
  // mistake is an input error before any search.
  for (std::size_t c = 0; c < s.clusters.size(); ++c) {
    const Experiment e = candidate_experiment(s, c, 1);
    (void)coll::load_machine(e.cluster, e.cluster_overrides, experiment_catalog(e));
    if (c == 0) (void)load_model(e);
  }
  return s;
}

SizingResult size_cluster(const SizingSpec& spec, const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto tell = [&](const std::string& what) {
    if (progress) progress(what);
  };
  SizingResult r;
  const cost::PriceCatalog prices = cost::PriceCatalog::load(spec.prices, spec.price_overrides);

  // 1. The paper estimates, on the first cluster's GPU.
  const Experiment first = candidate_experiment(spec, 0, 1);
  const wl::Model model = load_model(first);
  PaperEstimates& p = r.paper;
  p.parameters = wl::parameter_count(model);
  p.active_parameters = wl::active_parameter_count(model);
  p.tokens = spec.tokens;
  p.tokens_per_iteration = static_cast<double>(first.plan.global_batch) * first.plan.sequence_length;
  p.iterations = spec.tokens / p.tokens_per_iteration;
  p.flops_to_train = Flops{wl::model_flops(model, first.plan.global_batch, first.plan.sequence_length).value() * p.iterations};
  p.flops_6nd = Flops{6.0 * static_cast<double>(p.active_parameters) * spec.tokens};
  p.model_state = Bytes{static_cast<std::int64_t>(kBytesPerParameterState * static_cast<double>(p.parameters))};
  // Megatron's indexed datasets store token ids as uint16 below 65,500 vocabulary entries, int32 above
  // (megatron/core/datasets/indexed_dataset.py, DType.optimal_dtype).
  const double bytes_per_token = spec.bytes_per_token > 0 ? spec.bytes_per_token : (model.transformer.vocab < 65500 ? 2.0 : 4.0);
  p.data_volume = Bytes{static_cast<std::int64_t>(std::min(9e18, spec.tokens * bytes_per_token))};
  p.storage_read_rate = Bandwidth{static_cast<double>(p.data_volume.value()) / spec.deadline_s};
  {
    const coll::Machine m = coll::load_machine(first.cluster, first.cluster_overrides, experiment_catalog(first));
    const hw::GpuSpec& gpu = m.cluster.gpu_spec(m.cluster.gpus()[0]);
    p.gpu = gpu.name;
    const char* precision = enum_name(wl::kPrecisionNames, first.plan.precision);
    p.peak = gpu.peak.count(precision) ? gpu.peak.at(precision) : FlopRate{0};
    p.hbm = gpu.hbm_capacity;
  }
  p.gpus_for_memory = static_cast<int>(std::ceil(static_cast<double>(p.model_state.value()) / static_cast<double>(p.hbm.value())));
  p.gpus_for_deadline = p.peak.value() > 0 ? static_cast<int>(std::ceil(p.flops_to_train.value() / (spec.deadline_s * p.peak.value()))) : 0;
  const int bound = std::max({1, p.gpus_for_memory, p.gpus_for_deadline});

  // 2. Candidates: per cluster, counts from the bounds up.
  std::vector<std::vector<std::size_t>> per_cluster(spec.clusters.size());  // indices into r.candidates
  for (std::size_t c = 0; c < spec.clusters.size(); ++c) {
    int per_server = 0;
    {
      const Experiment one = candidate_experiment(spec, c, 1);
      const coll::Machine m = coll::load_machine(one.cluster, one.cluster_overrides, experiment_catalog(one));
      per_server = static_cast<int>(m.cluster.gpus().size());
    }
    int met = 0;
    for (int n : spec.gpus) {
      SizeCandidate cand;
      cand.cluster = spec.cluster_refs[c];
      cand.gpus = n;
      cand.servers = (n + per_server - 1) / per_server;
      if (n < bound) {
        cand.skipped = n < p.gpus_for_memory ? "below the memory bound" : "below the deadline bound";
        r.candidates.push_back(cand);
        continue;
      }
      if (met >= 2) break;
      tell("estimating " + cand.cluster + " with " + std::to_string(n) + " GPUs");
      const Experiment e = candidate_experiment(spec, c, cand.servers);
      const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, experiment_catalog(e));
      const hw::GpuSpec& gpu = machine.cluster.gpu_spec(machine.cluster.gpus()[0]);
      PlanEstimator estimator(machine, model);
      SearchResult tally;
      SearchOptions options;
      std::vector<SearchCandidate> plans = estimate_space(e, model, gpu, std::min(per_server, n), estimator, n, options, tally);
      std::stable_sort(plans.begin(), plans.end(), [](const SearchCandidate& a, const SearchCandidate& b) {
        return a.estimate.iteration < b.estimate.iteration;
      });
      if (plans.empty() || plans.front().estimate.iteration >= kMaxDuration) {
        cand.skipped = "no plan fits";
        if (!tally.dropped.empty()) {
          auto most = std::max_element(tally.dropped.begin(), tally.dropped.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
          cand.skipped += " (most dropped: " + most->first + ")";
        }
        r.candidates.push_back(cand);
        continue;
      }
      cand.estimated = true;
      plans.resize(std::min(plans.size(), static_cast<std::size_t>(kMaxSimulatedPlans)));
      cand.best_plans = std::move(plans);
      cand.plan = cand.best_plans.front().plan;
      cand.estimate = cand.best_plans.front().estimate;
      cand.time_to_train_s = to_seconds(cand.estimate.iteration) * p.iterations;
      cand.meets_deadline = cand.time_to_train_s <= spec.deadline_s;
      try {
        const cost::Ownership own = cost::ownership(
            machine.cluster, cost::bill_of_materials(machine.cluster, prices, hw::Catalog::builtin(), e.cluster), prices);
        // One server needs no fabric: its servers and their operations only, and their power (the
        // generators build a fabric as if full, which a single server would not buy or power).
        const bool alone = cand.servers == 1;
        const Money capital = alone ? own.capital.servers + own.capital.operations : own.capital.total();
        const Power power = alone ? own.power.servers_max : own.power.full();
        const double share = std::min(1.0, static_cast<double>(n) / static_cast<double>(own.bom.gpus));
        cand.capital = capital * share;
        cand.power_full = power * share;
      } catch (const ConfigError& err) {
        throw ConfigError(spec.file, "/candidates/clusters", "cannot price " + cand.cluster + ": " + err.message());
      }
      if (cand.meets_deadline) ++met;
      per_cluster[c].push_back(r.candidates.size());
      r.candidates.push_back(cand);
    }
  }

  // 3. Finalists: simulate per cluster the first count that meets the deadline (then the next).
  const auto simulate = [&](const SizeCandidate& cand, std::size_t cluster) {
    SizingFinalist f;
    f.candidate = cand;
    Experiment e = candidate_experiment(spec, cluster, cand.servers);
    for (const SearchCandidate& plan : cand.best_plans) {
      e.plan = plan.plan;
      tell("simulating " + cand.cluster + " with " + std::to_string(cand.gpus) + " GPUs: " + describe_plan(e.plan));
      try {
        const results::TrainingRun run = simulate_training(e);
        f.candidate.plan = e.plan;
        f.candidate.estimate = plan.estimate;
        f.failure.clear();
        f.simulated = summarize_simulation(run);
        f.capacity = run.result.memory.capacity;
        f.bytes_by_tier = results::bytes_by_tier(run);
        f.time_to_train_s = f.simulated.tokens_per_s > 0 ? spec.tokens / f.simulated.tokens_per_s : 0;
        f.meets_deadline = f.time_to_train_s <= spec.deadline_s;
        f.power_full = cand.power_full;
        if (run.energy) {
          f.average_power = run.energy->iteration.average_power;
          if (run.energy->goal) {
            f.energy = run.energy->goal->energy;
            f.cost_to_train = run.energy->goal->cost();
            f.cloud_cost = run.energy->goal->cloud_cost;
          }
        }
        f.within_budget = !spec.budget_usd || f.candidate.capital.value() <= *spec.budget_usd;
        return f;
      } catch (const InputError& err) {
        f.failure = err.message();
      }
    }
    return f;
  };
  for (std::size_t c = 0; c < spec.clusters.size(); ++c) {
    const std::vector<std::size_t>& idx = per_cluster[c];
    auto it = std::find_if(idx.begin(), idx.end(), [&](std::size_t i) { return r.candidates[i].meets_deadline; });
    for (int tries = 0; it != idx.end() && tries < 2; ++tries, ++it) {
      SizingFinalist f = simulate(r.candidates[*it], c);
      const bool ok = f.failure.empty() && f.meets_deadline;
      r.finalists.push_back(std::move(f));
      if (ok) break;
    }
  }
  // 4. The answer.
  for (std::size_t i = 0; i < r.finalists.size(); ++i) {
    const SizingFinalist& f = r.finalists[i];
    if (!f.failure.empty() || !f.meets_deadline) continue;
    const auto smaller = [&](const SizingFinalist& a, const SizingFinalist& b) {
      if (a.candidate.gpus != b.candidate.gpus) return a.candidate.gpus < b.candidate.gpus;
      return a.candidate.capital < b.candidate.capital;
    };
    const auto cheaper = [&](const SizingFinalist& a, const SizingFinalist& b) {
      if (a.candidate.capital != b.candidate.capital) return a.candidate.capital < b.candidate.capital;
      return a.time_to_train_s < b.time_to_train_s;
    };
    if (!r.smallest || smaller(f, r.finalists[*r.smallest])) r.smallest = i;
    if (!r.cheapest || cheaper(f, r.finalists[*r.cheapest])) r.cheapest = i;
  }
  std::ostringstream a;
  const std::string deadline = days_text(spec.deadline_s);
  if (r.smallest) {
    const SizingFinalist& s = r.finalists[*r.smallest];
    const int per_server = s.candidate.servers > 0 ? (s.candidate.gpus + s.candidate.servers - 1) / s.candidate.servers : 1;
    r.no_cluster_needed = s.candidate.servers == 1;
    if (r.no_cluster_needed) {
      a << "No cluster needed: " << (s.candidate.gpus == 1 ? std::string("one GPU") : std::to_string(s.candidate.gpus) + " GPUs of one server")
        << " (" << s.candidate.cluster << ") trains in " << days_text(s.time_to_train_s) << ", within the " << deadline << " deadline.";
    } else {
      a << "Smallest: " << s.candidate.gpus << " GPUs (" << s.candidate.servers << " servers of " << per_server << ") on "
        << s.candidate.cluster << ", " << days_text(s.time_to_train_s) << " (deadline " << deadline << "), capital "
        << results::format_money(s.candidate.capital) << ".";
    }
    if (r.cheapest && *r.cheapest != *r.smallest) {
      const SizingFinalist& c = r.finalists[*r.cheapest];
      a << " Cheapest: " << c.candidate.gpus << " GPUs on " << c.candidate.cluster << ", " << days_text(c.time_to_train_s)
        << ", capital " << results::format_money(c.candidate.capital) << ".";
    }
    if (spec.budget_usd && r.cheapest && !r.finalists[*r.cheapest].within_budget) {
      a << " Over the budget of " << results::format_money(dollars(*spec.budget_usd)) << " by "
        << results::format_money(r.finalists[*r.cheapest].candidate.capital - dollars(*spec.budget_usd)) << ".";
    }
  } else {
    const int largest = spec.gpus.back();
    a << "No candidate meets the " << deadline << " deadline.";
    // The fastest: a simulated finalist when one ran (it missed in full simulation), else the
    // fastest estimate (not simulated: at the largest sizes one full simulation can cost minutes).
    const SizingFinalist* best = nullptr;
    for (const SizingFinalist& f : r.finalists) {
      if (f.failure.empty() && (best == nullptr || f.time_to_train_s < best->time_to_train_s)) best = &f;
    }
    const SizeCandidate* estimate = nullptr;
    for (const SizeCandidate& c : r.candidates) {
      if (c.estimated && (estimate == nullptr || c.time_to_train_s < estimate->time_to_train_s)) estimate = &c;
    }
    a << std::fixed;
    a.precision(2);
    if (best != nullptr) {
      a << " The fastest simulated, " << best->candidate.gpus << " GPUs on " << best->candidate.cluster << ", needs "
        << days_text(best->time_to_train_s) << " (" << best->time_to_train_s / spec.deadline_s << "x the deadline).";
    } else if (estimate != nullptr) {
      a << " The fastest, " << estimate->gpus << " GPUs on " << estimate->cluster << ", needs "
        << days_text(estimate->time_to_train_s) << " by the plan search's estimate ("
        << estimate->time_to_train_s / spec.deadline_s << "x the deadline).";
    }
    if (p.gpus_for_deadline > largest) {
      a << " Even at the GPU's peak FLOP rate the deadline needs at least " << p.gpus_for_deadline
        << " GPUs, more than the largest candidate (" << largest << ").";
    } else if (p.gpus_for_memory > largest) {
      a << " The model states alone need at least " << p.gpus_for_memory << " GPUs' memory, more than the largest candidate ("
        << largest << ").";
    }
  }
  r.answer = a.str();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace cs::drv
