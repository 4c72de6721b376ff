// What a multi-job scheduling run produced (drivers/cluster_scheduler.h): every job's life, the
// cluster's state after every change, and the network links the jobs' traffic loaded. Times are
// seconds from the first arrival as LongDuration (traces span months: beyond the simulated clock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/long_duration.h"
#include "core/units.h"
#include "core/warning.h"

namespace cs::results {

enum class JobStatus : std::uint8_t { kCompleted, kRejected };

struct JobRecord {
  std::int64_t id = 0;
  std::string name;
  std::string job_class;        // "" for a job of fixed duration
  std::string user;
  int priority = 0;
  int gpus = 0;
  int gpu_milli = 1000;          // < 1000: a share of one GPU
  JobStatus status = JobStatus::kCompleted;
  std::string reason;            // why rejected
  LongDuration arrival{0};
  LongDuration first_start{0};   // first time it ran
  LongDuration finish{0};
  LongDuration ideal{0};         // its run time alone on the best placement (packed, idle network)
  LongDuration alone{0};         // its run time alone on the placements it got (idle network)
  LongDuration lost{0};          // progress lost to preemptions and failures, plus restarts
  double gpu_seconds = 0;         // GPUs held x time (shares count their share)
  int starts = 0;                // 1 + restarts
  int preemptions = 0;
  int failures = 0;
  int servers = 0;               // of its (last) placement
  int leaf_groups = 0;
  std::int32_t first_gpu = -1;   // lowest GPU index of its (last) placement
  LongDuration wait() const { return first_start - arrival; }
  LongDuration jct() const { return finish - arrival; }
};

// The cluster after an event: jobs running and waiting, GPUs allocated (in GPU-thousandths, so
// that shared GPUs count their share), GPUs down, and fragmentation: free GPUs on servers where
// no waiting job could use any (docs/scheduling.md, "Results").
struct ScheduleSample {
  LongDuration time{0};
  std::int32_t running = 0, waiting = 0;
  std::int64_t allocated_milli = 0;
  std::int32_t down = 0;
  std::int32_t fragmented = 0;
};

// A network link the jobs' traffic loaded over the run.
struct ScheduleLink {
  std::string src, dst;
  int tier = 0;
  double bytes = 0;               // carried over the run (may exceed 2^63 over months)
  Bandwidth capacity{0};
  LongDuration busy_shared{0};    // time two or more running jobs' traffic crossed it
  int max_jobs = 0;               // most running jobs on it at once
};

struct ScheduleRun {
  std::string scenario, cluster, policy, placement;
  bool preemption = false, interference = false, network = false;
  int gpus = 0, servers = 0, leaf_groups = 0;
  std::int64_t skipped = 0;       // trace rows that are not GPU jobs or have no duration
  std::vector<JobRecord> jobs;    // in arrival order
  std::vector<ScheduleSample> timeline;
  std::vector<ScheduleLink> links;  // tier >= 1, in link order
  std::vector<std::string> users;
  std::uint64_t joint_runs = 0;   // joint network simulations (interference)
  std::vector<Warning> warnings;
  std::vector<std::string> assumptions;
};

}  // namespace cs::results
