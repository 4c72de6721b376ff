// What one simulated training iteration produced, as the results layer reads it: the cluster
// (for names), the model and its TaskGraph, the timeline of every op, where each rank's time went,
// what each link carried, memory per pipeline stage and the headline numbers. The drivers
// (drivers/training_run.h) fill it; the writers (summary.h, tables.h, training_trace.h) and the
// findings (findings.h) read it, knowing nothing of how the numbers were produced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sourced_value.h"
#include "core/units.h"
#include "core/warning.h"
#include "cost/run_energy.h"
#include "results/availability.h"
#include "results/findings.h"
#include "results/link_use.h"
#include "results/stall_attribution.h"
#include "taskgraph/timeline.h"
#include "topology/cluster.h"
#include "workloads/memory.h"
#include "workloads/model.h"
#include "workloads/training_graph.h"

namespace cs::results {

struct IterationResult {
  Duration iteration{0};
  double samples_per_s = 0;
  double tokens_per_s = 0;             // transformers
  double tflops_per_gpu = 0;           // training FLOPs (recomputation counted, as Megatron's Eq. 3)
  double model_tflops_per_gpu = 0;     // model FLOPs (no recomputation)
  double mfu = 0;                      // model FLOPs / (peak x GPUs x time)
  // The same time in every FLOP convention that applies (workloads/flop_conventions.h), to compare
  // with a published number in its own convention: TFLOP/s per GPU and the fraction of peak.
  struct ConventionRate {
    std::string convention;
    double tflops_per_gpu = 0;
    double fraction_of_peak = 0;
  };
  std::vector<ConventionRate> flop_conventions;
  int gpus = 0;
  wl::MemoryEstimate memory;           // the worst stage
  std::size_t ops = 0;
  int simulated_ranks = 0;
  LargestStall largest_stall;          // the finding on where the time goes (findings.h)
  std::optional<LoadImbalance> imbalance;  // the finding on load imbalance, when it explains idle time
  std::uint64_t events = 0;
  // The network ran on a quotient (sim/collectives/network_fold.h: the same times and link loads):
  // of a rotation of rotated_blocks leaf blocks, else (rotated_blocks 0) of the fabric's twin
  // switches; false when the fabric or a transfer does not allow it. Not outputs.
  bool network_folded = false;
  std::uint32_t rotated_blocks = 0;
};

// The energy of the iteration and, with a goal, the time, energy and cost to train
// (cost/run_energy.h), on the cluster's bill of materials priced by the price catalog.
struct RunEnergy {
  cost::IterationEnergy iteration;
  double pue = 1;
  Money cost_per_hour{0};                // the job's share of the cluster, amortized capital + energy
  std::optional<cost::GoalCost> goal;
  std::vector<SourcedFact> assumptions;  // the price catalog's assumed figures it rests on
};

struct TrainingRun {
  topo::Cluster cluster;
  wl::Model model;
  wl::TrainingGraph graph;
  tg::Timeline timeline;
  std::vector<RankBreakdown> stalls;          // per rank, adds up to the iteration time
  std::vector<LinkUse> links;                 // sorted by utilization, highest first
  std::vector<wl::MemoryEstimate> stage_memory;  // per pipeline stage
  IterationResult result;
  // With a calibration profile: what each quantity was taken from (docs/outputs.md, "calibration").
  nlohmann::json calibration;
  // The assumed and fitted values the prediction rests on (drivers/assumptions.h).
  std::vector<SourcedFact> assumptions;
  // Inputs that are legal but implausible: the cluster file's (coll::Machine::warnings), then the
  // plan's (drivers/plan_warnings.h). Printed by the front ends, listed in summary.json.
  std::vector<Warning> warnings;
  // Energy and cost; empty, with the reason in energy_unavailable, when the price catalog does not
  // price the cluster (a GPU or a link speed it has no figure for).
  std::optional<RunEnergy> energy;
  std::string energy_unavailable;
  // With the experiment's "availability": failures, checkpoints and the ETTR (results/availability.h).
  std::optional<AvailabilityReport> availability;
};

}  // namespace cs::results
