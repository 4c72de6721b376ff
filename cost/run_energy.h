// The energy of a simulated training iteration and the time, energy and cost of a training goal.
// docs/cost-model.md, "Energy of a run".
//
// Power over the simulated timeline (T = the iteration, c = the mean compute time of a GPU in it,
// from the stall attribution's compute category):
//   GPUs      N x (P_idle x T + (TDP - P_idle) x c): a GPU draws its TDP while its compute stream
//             runs and its idle draw otherwise (waiting on the network, in the pipeline bubble).
//             Assumed two-level: communication kernels draw less than GEMMs and more than idle,
//             so the truth lies between this and TDP all the time.
//   hosts     per server, its maximum draw less its GPUs' TDP (CPUs, NVSwitches, NICs, fans), all
//             the time (assumed at full draw).
//   network   switches and transceivers, all the time.
//   facility  (GPUs + hosts + network) x PUE.
// A job on g of the cluster's N GPUs takes its GPUs' energy and the share g / N of the hosts'
// and the network's energy and of the capital (the rest of the cluster is free for other jobs).
// A goal of G tokens at the run's tokens/s: time = G / (tokens/s), iterations = time / T,
// energy = iterations x facility energy per iteration; cost = energy x $/kWh + the amortized
// capital of the cluster for that time (cost/ownership.h, per hour), or, when the catalog has a
// rent for the GPUs, GPUs x hours x rent (reported beside it).
#pragma once

#include <optional>

#include "core/units.h"
#include "cost/ownership.h"

namespace cs::cost {

struct IterationEnergy {
  Energy gpus{0};
  Energy hosts{0};
  Energy network{0};
  Energy it() const { return gpus + hosts + network; }
  Energy facility{0};         // it() x PUE
  Power average_power{0};     // facility energy / iteration time
};

// `mean_compute` is the mean over the job's GPUs of the compute stream's busy time in the
// iteration; `job_gpus` (1 .. the cluster's GPUs) how many GPUs the job runs on.
IterationEnergy iteration_energy(const Ownership& cluster, const PriceCatalog& prices, Duration iteration,
                                 Duration mean_compute, int job_gpus);

struct GoalCost {
  double tokens = 0;
  double seconds = 0;         // time to train
  double iterations = 0;
  Energy energy{0};           // facility energy
  Money energy_cost{0};
  Money capital_cost{0};      // amortized capital (and operations) for that time
  Money cost() const { return energy_cost + capital_cost; }
  std::optional<Money> cloud_cost;  // the job's GPUs x hours x rent
  double tokens_per_dollar() const { return tokens / cost().value(); }
  double tokens_per_joule() const { return tokens / energy.value(); }
};

GoalCost goal_cost(const Ownership& cluster, const PriceCatalog& prices, const IterationEnergy& per_iteration,
                   Duration iteration, double tokens_per_s, double tokens, int job_gpus);

}  // namespace cs::cost
