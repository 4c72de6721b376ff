#include "cost/run_energy.h"

namespace cs::cost {

IterationEnergy iteration_energy(const Ownership& cluster, const PriceCatalog& prices, Duration iteration,
                                 Duration mean_compute, int job_gpus) {
  IterationEnergy e;
  const double gpus = static_cast<double>(cluster.bom.gpus);
  const double share = gpus > 0 ? job_gpus / gpus : 0;
  const PowerDraw& p = cluster.power;
  // Mean per GPU: idle draw all the time, the rest of its TDP while computing.
  const Power idle_per_gpu = gpus > 0 ? p.gpus_idle / gpus : watts(0);
  const Power tdp_per_gpu = gpus > 0 ? p.gpus_max / gpus : watts(0);
  e.gpus = (energy_over(idle_per_gpu, iteration) + energy_over(tdp_per_gpu - idle_per_gpu, mean_compute)) *
           static_cast<double>(job_gpus);
  e.hosts = energy_over(p.servers_max - p.gpus_max, iteration) * share;
  e.network = energy_over(p.network(), iteration) * share;
  e.facility = e.it() * prices.facility().pue;
  if (iteration.count() > 0) e.average_power = average_power(e.facility, iteration);
  return e;
}

GoalCost goal_cost(const Ownership& cluster, const PriceCatalog& prices, const IterationEnergy& per_iteration,
                   Duration iteration, double tokens_per_s, double tokens, int job_gpus) {
  GoalCost g;
  g.tokens = tokens;
  if (!(tokens_per_s > 0) || iteration.count() <= 0) return g;
  g.seconds = tokens / tokens_per_s;
  g.iterations = g.seconds / to_seconds(iteration);
  g.energy = per_iteration.facility * g.iterations;
  g.energy_cost = prices.facility().per_kwh * to_kilowatt_hours(g.energy);
  const double hours = g.seconds / 3600;
  const double share = cluster.bom.gpus > 0 ? static_cast<double>(job_gpus) / cluster.bom.gpus : 0;
  g.capital_cost = cluster.capital.total() / (cluster.years * kHoursPerYear) * (hours * share);
  if (cluster.cloud_per_gpu_hour) {
    g.cloud_cost = *cluster.cloud_per_gpu_hour * (hours * static_cast<double>(job_gpus));
  }
  return g;
}

}  // namespace cs::cost
