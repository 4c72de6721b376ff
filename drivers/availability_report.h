// The availability a run reports (results/availability.h), built from the experiment's
// "availability" object (drivers/availability_spec.h), the job's GPUs, its checkpoint
// (drivers/checkpoint.h) and the model of failures and checkpoints (drivers/availability.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/warning.h"
#include "cost/run_energy.h"
#include "drivers/availability_spec.h"
#include "results/availability.h"
#include "topology/cluster.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

// A cluster without storage and a spec without "save_time" is a ConfigError at `file` and the
// spec's path. Legal but odd values (a per-GPU MTBF far from published ones, an interval shorter
// than the save or longer than the job's MTBF, an ETTR below one half) add warnings.
// Built before the iteration is simulated, so that an input error comes at once.
results::AvailabilityReport availability_report(const AvailabilitySpec& spec, const std::string& file,
                                                const topo::Cluster& cluster, const wl::Model& model,
                                                const wl::ParallelPlan& plan, std::vector<Warning>& warnings);
// With a training goal: the time to train / ETTR and the cost scaled alike (the time failures cost
// is priced as training time), listed as an assumption.
void add_goal_effect(results::AvailabilityReport& r, const cost::GoalCost& goal, const AvailabilitySpec& spec,
                     const std::string& file);

}  // namespace cs::drv
