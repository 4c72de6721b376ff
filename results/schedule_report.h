// Metrics and writers of a scheduling run (docs/scheduling.md, "Results"). Over completed jobs:
//   JCT = finish - arrival;  wait = first start - arrival;  slowdown = JCT / ideal run
//   (ideal: alone on the packed placement, idle network; a job of fixed length: its length)
//   network slowdown = (finish - first start - restarts and lost work) / alone run on its placement
//   makespan = last finish - first arrival
//   GPU utilization = time average of allocated GPUs (shares count their share) / GPUs
//   fragmentation = time average of whole free GPUs on servers where no waiting job could use
//   them (fewer than the smallest waiting job's per-server need), over the time jobs wait
//   per-user share = a user's GPU-seconds / all GPU-seconds
// Quantiles interpolate linearly between order statistics (core/statistics.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/schedule_run.h"
#include "results/serving_report.h"

namespace cs::results {

struct ScheduleMetrics {
  std::int64_t jobs = 0, completed = 0, rejected = 0, preemptions = 0, failures = 0;
  LatencyStats jct, wait, slowdown;   // seconds; slowdown a ratio
  double makespan_s = 0;
  double gpu_utilization = 0;
  double fragmentation = 0;           // GPUs, mean while jobs wait
  double lost_gpu_hours = 0;          // progress lost to preemptions and failures, and restarts
  std::vector<double> user_share;     // per ScheduleRun::users
  std::vector<double> tier_bytes;     // per link tier (index = tier)
  std::vector<double> tier_utilization;  // bytes / (capacity x makespan), mean over the tier's links that carried any
};

ScheduleMetrics schedule_metrics(const ScheduleRun& run);

// summary.json of `clustersim schedule` (schema "clustersim-schedule", version 1).
nlohmann::json schedule_summary_json(const ScheduleRun& run, const ScheduleMetrics& m);
// One row per job: id, name, class, user, priority, gpus, gpu_milli, status, arrival_s, start_s,
// finish_s, wait_s, jct_s, ideal_s, alone_s, slowdown, servers, leaf_groups, first_gpu, starts,
// preemptions, failures, lost_s, gpu_seconds, reason.
std::string schedule_jobs_csv(const ScheduleRun& run);
// The cluster after every change: time_s, running, waiting, allocated_gpus, down_gpus, fragmented_gpus.
std::string schedule_timeline_csv(const ScheduleRun& run);
// Network links the jobs loaded: src, dst, tier, bytes, utilization, shared_s, max_jobs; the most
// shared first.
std::string schedule_links_csv(const ScheduleRun& run, const ScheduleMetrics& m);
// Perfetto: a span per job on a track per first GPU, and counters of waiting jobs and allocated GPUs.
std::string schedule_trace_json(const ScheduleRun& run);
// The table `clustersim schedule` prints.
std::string schedule_table(const ScheduleRun& run, const ScheduleMetrics& m);

}  // namespace cs::results
