// Replays a recorded or written workload (drivers/trace_workload.h) on an experiment's cluster:
// its machine, calibration profile and precision; the workload replaces the model and the plan.
// Rank r runs on the GPU the placement gives it (cluster GPU indices, in rank order, for the
// simulated then the mirrored ranks); by default GPU r, or, for a graph whose symmetries are
// written over a grid (`plan --emit-graph`), GPU grid_index[r]: the plan's placement.
#pragma once

#include <string>

#include "drivers/experiment.h"
#include "drivers/trace_workload.h"
#include "results/replay_run.h"

namespace cs::drv {

// `placement`: "" (the default above), or a list of GPU indices and ranges ("0-7,16-23"), one per
// rank; errors name --placement.
results::ReplayRun replay_trace(const Experiment& e, TraceWorkload workload, const std::string& placement);

}  // namespace cs::drv
