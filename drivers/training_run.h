// The training driver: loads what an experiment names (machine, model, profile), checks the plan
// and its memory, builds the iteration's TaskGraph, runs it on the simulated cluster and gathers
// the results (results/training_run.h). The one function that wires the layers for training.
#pragma once

#include "drivers/experiment.h"
#include "results/training_run.h"
#include "topology/cluster.h"
#include "workloads/model.h"

namespace cs::drv {

// One iteration of `e` on the first plan.gpus() GPUs of the cluster in rank order. Input errors
// (exit 2) name the experiment's file and JSON path; an out-of-memory plan is one unless
// e.allow_oom.
results::TrainingRun simulate_training(const Experiment& e);

// The checks every subcommand that reads an experiment makes before using its plan (run, plan,
// scale): the plan fits the cluster, suits the model (wl::validate_plan) and names a precision
// the GPUs have. Throws ConfigError naming e.file and the plan's path.
void check_plan_fits(const Experiment& e, const topo::Cluster& cluster, const wl::Model& model);

}  // namespace cs::drv
