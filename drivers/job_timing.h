// How long an iteration of a training job of a class takes where it landed (docs/scheduling.md,
// "Job classes and their iteration time").
//
// A class is a model and a parallel plan; a job of g GPUs runs it with dp = g / (tp pp) data-
// parallel replicas and a global batch of dp times the class's per-replica batch (weak scaling,
// as cluster traces' jobs keep their per-GPU batch). The fast estimate of the plan search
// (drivers/plan_estimate.h, on the cluster's first g GPUs) gives everything but the data-parallel
// gradient reduction; that reduction is timed where the job runs, alone or beside its
// neighbours (drivers/job_network.h):
//   T_iter = T_rest + max(0, T_allreduce - W)
//   T_rest = pipeline (compute, tensor- and pipeline-parallel communication, bubble) + optimizer
//   W      = the backward the bucketed all-reduce overlaps (DDP's overlap, Li et al., VLDB 2020)
// Ranks are ordered tp, pp, dp (innermost first): the data-parallel group of tensor rank t and
// stage p holds ranks t + tp p + tp pp d, d = 0..dp-1, and reduces that stage's gradients.
// Assumed: every stage reduces as many bytes as the largest (the estimate's); the tensor- and
// pipeline-parallel traffic stays where the packed placement puts it (inside servers, and
// between neighbouring stages) and does not contend with other jobs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibration/profile_model.h"
#include "core/units.h"
#include "drivers/job_network.h"
#include "drivers/plan_estimate.h"
#include "drivers/schedule_config.h"
#include "sim/collectives/machine.h"
#include "workloads/model.h"

namespace cs::drv {

struct ClassTiming {
  Duration rest{0};
  Duration window{0};
  Bytes dp_bytes{0};
  int tp = 1, pp = 1;
};

class JobTimer {
 public:
  // `classes` in the order jobs refer to them (JobStream::classes). Each class's plan is checked
  // against its model at its smallest size (tp x pp GPUs): a ConfigError at the class's path.
  JobTimer(const coll::Machine& machine, const ScheduleScenario& scenario, const std::vector<std::string>& classes,
           std::shared_ptr<const cal::ProfileModel> profile);
  ~JobTimer();

  int unit(int cls) const;  // GPUs per tensor-parallel group
  // Why a job of `gpus` GPUs of the class cannot run, if it cannot (it times the class at that
  // size to find out).
  std::optional<std::string> refuses(int cls, int gpus);
  const ClassTiming& timing(int cls, int gpus);
  // The job's gradient all-reduces on `gpus` (pool GPU indices in rank order).
  JobTraffic traffic(int cls, const std::vector<int>& gpus);
  static Duration iteration(const ClassTiming& t, Duration allreduce);

 private:
  struct Class {
    wl::Model model;
    wl::ParallelPlan plan;  // global_batch per data-parallel replica
    std::unique_ptr<PlanEstimator> estimator;
  };
  const coll::Machine& machine_;
  std::vector<Class> classes_;
  std::map<std::pair<int, int>, ClassTiming> timings_;
};

}  // namespace cs::drv
