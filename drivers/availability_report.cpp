#include "drivers/availability_report.h"

#include <cstdio>

#include "core/errors.h"
#include "drivers/availability.h"
#include "drivers/checkpoint.h"

namespace cs::drv {
namespace {

SourcedFact assumed(const std::string& path, const std::string& file, const std::string& value, const std::string& why) {
  return SourcedFact{path, file, value, "assumed", "assumed: " + why, "docs/availability.md"};
}

void odd_values(const results::AvailabilityReport& r, const AvailabilitySpec& spec, const std::string& file,
                std::vector<Warning>& warnings) {
  const double gpu_h = to_hours(r.mtbf_per_gpu);
  if (gpu_h < 1000 || gpu_h > 1e6) {
    add_warning(warnings, {file, spec.where, "a per-GPU MTBF of " + format_long_duration(r.mtbf_per_gpu) +
                                                 " is far from published ones (Llama 3 405B: about 45,600 h counting every "
                                                 "interruption, arXiv 2407.21783)"});
  }
  if (r.interval_given && r.interval < r.save_time) {
    add_warning(warnings, {file, spec.where + "/checkpoint_interval",
                           "the interval (" + format_long_duration(r.interval) + ") is shorter than a save (" +
                               format_long_duration(r.save_time) + "): the job saves more than it trains"});
  }
  if (r.interval_given && r.interval > r.job_mtbf) {
    add_warning(warnings, {file, spec.where + "/checkpoint_interval",
                           "the interval (" + format_long_duration(r.interval) + ") is longer than the job's MTBF (" +
                               format_long_duration(r.job_mtbf) + "): most intervals never complete"});
  }
  if (r.ettr_simulated < 0.5) {
    char ettr[32];
    std::snprintf(ettr, sizeof ettr, "%.2f", r.ettr_simulated);
    add_warning(warnings, {file, spec.where, "the job keeps only " + std::string(ettr) + " of its time (ETTR): it fails every " +
                                                 format_long_duration(r.job_mtbf) + ", saves take " +
                                                 format_long_duration(r.save_time) + " and restarts " +
                                                 format_long_duration(r.restart_time)});
  }
}

}  // namespace

results::AvailabilityReport availability_report(const AvailabilitySpec& spec, const std::string& file,
                                                const topo::Cluster& cluster, const wl::Model& model,
                                                const wl::ParallelPlan& plan, std::vector<Warning>& warnings) {
  results::AvailabilityReport r;
  const int gpus = plan.gpus();
  FailureProcess failures;
  if (spec.mtbf_per_gpu) {
    failures = failures_from_gpu_mtbf(*spec.mtbf_per_gpu, gpus);
    r.failure_source = "mtbf_per_gpu";
  } else {
    const int observed = spec.observed_gpus > 0 ? spec.observed_gpus : gpus;
    failures = failures_from_observation(spec.interruptions, spec.window, observed, gpus);
    r.failure_source = std::to_string(spec.interruptions) + " interruptions in " + format_long_duration(spec.window) + " on " +
                       std::to_string(observed) + " GPUs";
  }
  r.mtbf_per_gpu = failures.mtbf_per_gpu;
  r.gpus = gpus;
  r.job_mtbf = failures.job_mtbf();
  r.assumptions.push_back(assumed(spec.where, file, format_long_duration(r.job_mtbf) + " job MTBF",
                                  "failures independent and memoryless (exponential), every GPU at the same rate"));

  if (spec.save_time) {
    r.save_time = *spec.save_time;
    r.save_time_given = true;
  } else {
    const std::optional<CheckpointWrite> w = checkpoint_write(cluster, model, plan);
    if (!w) {
      throw ConfigError(file, spec.where, "the cluster has no storage device to save checkpoints to (no device of kind \"storage\" "
                                          "with a link into it): give \"save_time\"");
    }
    r.checkpoint_bytes = w->size;
    r.writers = w->writers;
    r.write_bandwidth = w->bandwidth;
    r.save_time = w->save_time;
    r.assumptions.push_back(assumed(spec.where + "/save_time", file, format_long_duration(r.save_time),
                                    "derived from the links into the storage devices and the writers' uplinks; the storage "
                                    "absorbs writes at link rate (no disk or file-system limit) and the save blocks training"));
  }
  r.restart_time = spec.restart_time.value_or(kDefaultRestartTime);
  if (!spec.restart_time) {
    r.assumptions.push_back(assumed(spec.where + "/restart_time", file, format_long_duration(r.restart_time),
                                    "no restart_time given: the time from a failure to training again (reschedule, reload "
                                    "the checkpoint, warm up), the reference example's value"));
  }

  r.young = young_interval(r.save_time, r.job_mtbf);
  r.daly = daly_interval(r.save_time, r.job_mtbf);
  r.availability_optimal = availability_optimal_interval(r.save_time, r.restart_time, r.job_mtbf);
  r.seed = spec.seed;
  const FailureSample sample(r.job_mtbf, kSimulatedInterruptions, spec.seed);
  const IntervalSearch best = optimal_interval(sample, r.save_time, r.restart_time);
  r.simulated_optimal = best.interval;
  r.interval_given = spec.checkpoint_interval.has_value();
  r.interval = spec.checkpoint_interval.value_or(best.interval);
  const CheckpointPolicy policy{r.interval, r.save_time, r.restart_time};
  const EttrSimulation sim = r.interval_given ? sample.run(policy) : best.at_best;
  r.ettr_first_order = first_order_ettr(policy, r.job_mtbf);
  r.ettr_renewal = renewal_ettr(policy, r.job_mtbf);
  r.ettr_simulated = sim.ettr;
  r.ettr_standard_error = sim.standard_error;
  r.simulated_interruptions = sim.interruptions;
  r.simulated_time = sim.wall;
  r.lost_work = sim.lost;
  odd_values(r, spec, file, warnings);
  return r;
}

void add_goal_effect(results::AvailabilityReport& r, const cost::GoalCost& goal, const AvailabilitySpec& spec,
                     const std::string& file) {
  if (!(r.ettr_simulated > 0)) return;
  r.effective_time_to_train_s = goal.seconds / r.ettr_simulated;
  r.effective_cost = goal.cost() / r.ettr_simulated;
  r.assumptions.push_back(assumed(spec.where, file, "cost / ETTR",
                                  "the time lost to failures costs what training time costs (capital and energy alike)"));
}

}  // namespace cs::drv
