// The jobs a scheduling scenario submits (docs/scheduling.md, "Job streams"): generated (Poisson
// arrivals, distributions of sizes and lengths) or read from a trace, either the project's own CSV
// or the Alibaba cluster-trace-gpu-v2023 pod list as published. Deterministic: the same spec and
// seed give the same jobs.
//
// clustersim CSV (header required, columns in any order; blank optional fields allowed):
//   id, arrival_s, gpus, duration_s | class + iterations, [gpu_milli], [priority], [user]
// Alibaba v2023 (openb_pod_list_*.csv): name, cpu_milli, memory_mib, num_gpu, gpu_milli,
//   gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time. A GPU job is a row with
//   num_gpu >= 1; it arrives at creation_time and runs deletion_time - scheduled_time (as given:
//   the time it held its GPUs in production); rows without GPUs or never scheduled are skipped and
//   counted; gpu_spec (allowed GPU models, "A|B") constrains placement on a node list; qos is the
//   user (the trace has no users).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/long_duration.h"
#include "drivers/schedule_config.h"

namespace cs::drv {

struct JobRequest {
  std::int64_t id = 0;
  std::string name;
  LongDuration arrival{0};
  int gpus = 1;
  int gpu_milli = 1000;       // < 1000: a share of one GPU (gpus = 1)
  LongDuration duration{0};   // a job of fixed length
  double iterations = 0;      // a job of a class
  int job_class = -1;         // index into JobStream::classes; -1: fixed length
  int priority = 0;
  int user = 0;               // index into JobStream::users
  std::vector<std::string> gpu_models;  // allowed GPU models; empty: any
};

struct JobStream {
  std::vector<JobRequest> jobs;       // in arrival order (stable for equal arrivals)
  std::vector<std::string> classes;   // class names, as the jobs refer to them
  std::vector<std::string> users;
  std::int64_t skipped = 0;           // trace rows that are not GPU jobs or never ran
};

JobStream make_jobs(const ScheduleScenario& scenario);

}  // namespace cs::drv
