#include "drivers/job_timing.h"

#include <algorithm>

#include "drivers/config_paths.h"
#include "workloads/plan_check.h"

namespace cs::drv {

JobTimer::JobTimer(const coll::Machine& machine, const ScheduleScenario& scenario, const std::vector<std::string>& classes,
                   std::shared_ptr<const cal::ProfileModel> profile)
    : machine_(machine) {
  for (const std::string& name : classes) {
    const JobClass& c = scenario.classes.at(name);
    Class k{load_model_reference(c.model), c.plan, nullptr};
    wl::ParallelPlan smallest = k.plan;
    smallest.dp = 1;
    wl::validate_plan(k.model, smallest, smallest.tp * smallest.pp, scenario.file, c.where + "/plan");
    if (smallest.tp * smallest.pp > static_cast<int>(machine.cluster.gpus().size())) {
      throw ConfigError(scenario.file, c.where + "/plan", "tp x pp = " + std::to_string(smallest.tp * smallest.pp) +
                                                              " GPUs, more than the cluster has");
    }
    classes_.push_back(std::move(k));
  }
  for (Class& k : classes_) k.estimator = std::make_unique<PlanEstimator>(machine_, k.model, profile);
}

JobTimer::~JobTimer() = default;

int JobTimer::unit(int cls) const { return classes_[static_cast<std::size_t>(cls)].plan.tp; }

std::optional<std::string> JobTimer::refuses(int cls, int gpus) {
  const wl::ParallelPlan& p = classes_[static_cast<std::size_t>(cls)].plan;
  if (gpus % (p.tp * p.pp) != 0) {
    return std::to_string(gpus) + " GPUs are not a multiple of tp x pp = " + std::to_string(p.tp * p.pp);
  }
  const std::int64_t batch = static_cast<std::int64_t>(p.global_batch) * (gpus / (p.tp * p.pp));
  if (batch > (std::int64_t{1} << 30)) return "a global batch of " + std::to_string(batch) + " samples (more than 2^30)";
  if (timing(cls, gpus).rest >= kMaxDuration / 2) {
    return "the plan estimate refuses this size (a collective the model cannot run, or an iteration beyond the clock)";
  }
  return std::nullopt;
}

const ClassTiming& JobTimer::timing(int cls, int gpus) {
  auto it = timings_.find({cls, gpus});
  if (it != timings_.end()) return it->second;
  Class& k = classes_[static_cast<std::size_t>(cls)];
  wl::ParallelPlan plan = k.plan;
  plan.dp = gpus / (plan.tp * plan.pp);
  plan.global_batch = k.plan.global_batch * plan.dp;
  const PlanEstimate e = k.estimator->estimate(plan);
  ClassTiming t;
  t.rest = e.iteration - e.exposed_dp;
  t.window = e.dp_window;
  t.dp_bytes = plan.dp > 1 ? e.dp_bytes : Bytes{0};
  t.tp = plan.tp;
  t.pp = plan.pp;
  return timings_.emplace(std::pair{cls, gpus}, t).first->second;
}

JobTraffic JobTimer::traffic(int cls, const std::vector<int>& gpus) {
  const ClassTiming& t = timing(cls, static_cast<int>(gpus.size()));
  JobTraffic out;
  const int dp = static_cast<int>(gpus.size()) / (t.tp * t.pp);
  if (dp < 2) return out;
  out.bytes = t.dp_bytes;
  const auto all = machine_.cluster.gpus();
  for (int p = 0; p < t.pp; ++p) {
    for (int r = 0; r < t.tp; ++r) {
      std::vector<topo::NodeId> group;
      for (int d = 0; d < dp; ++d) group.push_back(all[static_cast<std::size_t>(gpus[static_cast<std::size_t>(r + t.tp * p + t.tp * t.pp * d)])]);
      out.groups.push_back(std::move(group));
    }
  }
  return out;
}

Duration JobTimer::iteration(const ClassTiming& t, Duration allreduce) {
  return t.rest + std::max(Duration{0}, allreduce - t.window);
}

}  // namespace cs::drv
