// A shared cluster over time (docs/scheduling.md): jobs arrive, wait in a queue, are placed on
// GPUs all at once (gang scheduling), run while their neighbours' traffic shares the network,
// may be preempted or hit by GPU failures, and finish.
//
// Events, in time order (ties: failures and repairs, then finishes, then arrivals, each in the
// order they were created), then one scheduling pass per instant. A job's progress is measured in
// seconds of its ideal run (alone, packed, idle network): a job of a class advances at
// T_ideal / T_iter per second, T_iter from drivers/job_timing.h with the all-reduce time of its
// placement among the jobs running beside it (re-timed for every job whose network component
// changed when any job starts or stops); a job of fixed length advances at 1.
//
// Preemption and failures stop a job: it loses the progress since its last checkpoint (every
// `checkpoint.interval` of progress; all of it without checkpoints), pays `checkpoint.restart`
// when it next starts, and waits again in its original place (its arrival) in the queue. Saves
// are assumed asynchronous (no pause). Failures: each GPU fails after an exponential time of mean
// `mtbf_per_gpu` (a Poisson process of rate N / MTBF over the cluster) and is down for `repair`.
//
// A job that can never fit the cluster (more GPUs than it has, a share of several GPUs, a tensor-
// parallel group larger than a server, GPU models it lacks) is rejected at arrival with the reason.
#pragma once

#include "drivers/schedule_config.h"
#include "results/schedule_run.h"

namespace cs::drv {

results::ScheduleRun simulate_schedule(const ScheduleScenario& scenario);

}  // namespace cs::drv
