// Capital, power and the amortized price against the published figures and formulas they come
// from (docs/cost-model.md): the "H100 Freakonomics" sheet's 1,024-H100 cluster and Epoch AI's
// energy formula.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cost/ownership.h"
#include "cost/run_energy.h"
#include "topology/cluster_loader.h"

namespace cs::cost {
namespace {

struct Rail1024 {
  topo::Cluster cluster = topo::load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json",
                                             {"/servers/0/count=128"});
  const PriceCatalog& prices = PriceCatalog::builtin();
  Ownership own = ownership(cluster, bill_of_materials(cluster, prices, hw::Catalog::builtin(), "rail"), prices);
};

TEST(Ownership, FreakonomicsCluster1024H100WithinTenPercentWithBreakdown) {
  // The sheet (2024-08): 128 nodes x $310,000 = $39,680,000; 48 switches x $36,000 = $1,728,000;
  // IB connectors and cables $2,621,440; facility and operations $6,400,000; total $50,429,440.
  // Its unit prices are the catalog's defaults, so this checks the counts read off the graph and
  // the arithmetic, not the prices (docs/cost-model.md, "What the checks prove").
  const Rail1024 r;
  const double published = 50'429'440;
  EXPECT_NEAR(r.own.capital.total().value(), published, 0.10 * published);
  EXPECT_DOUBLE_EQ(r.own.capital.servers.value(), 39'680'000);
  EXPECT_DOUBLE_EQ(r.own.capital.switches.value(), 1'728'000);
  EXPECT_DOUBLE_EQ(r.own.capital.cables.value(), 2'621'440);
  EXPECT_DOUBLE_EQ(r.own.capital.operations.value(), 6'400'000);
}

TEST(Ownership, CableCostsOfTheSheetsOtherRowsFromTheGraphsCounts) {
  // Held out from the per-link price (derived from the 1,024-GPU row): the sheet's $41.9M of cables
  // for 16,384 GPUs on two tiers, and $249.0M for 65,536 on three.
  const PriceCatalog& prices = PriceCatalog::builtin();
  const std::string dir = std::string(CS_SOURCE_DIR) + "/configs/clusters/";
  const topo::Cluster two = topo::load_cluster(dir + "h100-rail-512.json", {"/servers/0/count=2048"});
  const Ownership o2 = ownership(two, bill_of_materials(two, prices, hw::Catalog::builtin(), "two"), prices);
  EXPECT_NEAR(o2.capital.cables.value(), 41.9e6, 0.02 * 41.9e6);
  const topo::Cluster three = topo::load_cluster(dir + "h100-fat-tree-3tier.json", {"/servers/0/count=8192", "/fabric/radix=64"});
  const Ownership o3 = ownership(three, bill_of_materials(three, prices, hw::Catalog::builtin(), "three"), prices);
  EXPECT_NEAR(o3.capital.cables.value(), 249.0e6, 0.02 * 249.0e6);
}

TEST(Ownership, EnergyAndGpuHourEqualEpochFormula) {
  // Epoch AI: energy = server TDP x 0.75 x PUE x hours x $/kWh (here with the network's constant
  // draw added); $/GPU-hour = (capital / (life x 8,760 h) + energy cost per hour) / GPUs.
  const Rail1024 r;
  const Facility& f = r.prices.facility();
  const double servers_tdp = 128 * 10'200.0;
  const double network = 48 * 750.0 + 4096 * 17.0;
  const double it = servers_tdp * f.average_load + network;
  const double kwh_per_year = it * f.pue * 8760 / 1000;
  EXPECT_NEAR(to_kilowatt_hours(r.own.energy_per_year), kwh_per_year, 1e-6 * kwh_per_year);
  const double energy_cost = kwh_per_year * f.per_kwh.value();
  EXPECT_NEAR(r.own.energy_cost_per_year.value(), energy_cost, 1e-6 * energy_cost);
  const double per_gpu_hour = (50'429'440 / (f.amortization_years * 8760) + energy_cost / 8760) / 1024;
  EXPECT_NEAR(r.own.per_gpu_hour.value(), per_gpu_hour, 1e-9 * per_gpu_hour);
  // Full load, idle and cooling.
  EXPECT_DOUBLE_EQ(r.own.power.full().value(), servers_tdp + network);
  EXPECT_DOUBLE_EQ(r.own.power.idle().value(), servers_tdp + network - 1024 * (700.0 - 75.0));
  EXPECT_DOUBLE_EQ(r.own.facility_full.value(), (servers_tdp + network) * f.pue);
  EXPECT_FALSE(r.own.liquid_cooling);  // 700 W GPUs: air
  ASSERT_TRUE(r.own.cloud_per_gpu_hour.has_value());
  EXPECT_DOUBLE_EQ(r.own.cloud_per_gpu_hour->value(), 3.0);
}

TEST(RunEnergy, IterationEnergyIsIdlePlusComputeAboveIdle) {
  const Rail1024 r;
  const Duration t = duration_from_seconds(2.0), c = duration_from_seconds(1.5);
  const IterationEnergy e = iteration_energy(r.own, r.prices, t, c, 1024);
  EXPECT_NEAR(e.gpus.value(), 1024 * (75.0 * 2.0 + (700.0 - 75.0) * 1.5), 1e-6);
  EXPECT_NEAR(e.hosts.value(), 128 * (10'200.0 - 8 * 700.0) * 2.0, 1e-6);
  EXPECT_NEAR(e.network.value(), (48 * 750.0 + 4096 * 17.0) * 2.0, 1e-6);
  EXPECT_NEAR(e.facility.value(), e.it().value() * 1.3, 1e-6);
  EXPECT_NEAR(e.average_power.value(), e.facility.value() / 2.0, 1e-6);
  // All compute: the GPUs at TDP.
  const IterationEnergy busy = iteration_energy(r.own, r.prices, t, t, 1024);
  EXPECT_NEAR(busy.gpus.value(), 1024 * 700.0 * 2.0, 1e-6);
  // A job on a quarter of the GPUs: its GPUs, a quarter of the hosts and network.
  const IterationEnergy quarter = iteration_energy(r.own, r.prices, t, c, 256);
  EXPECT_NEAR(quarter.gpus.value(), e.gpus.value() / 4, 1e-6);
  EXPECT_NEAR(quarter.hosts.value(), e.hosts.value() / 4, 1e-6);
  EXPECT_NEAR(quarter.network.value(), e.network.value() / 4, 1e-6);
}

TEST(RunEnergy, GoalCostIsEnergyPlusAmortizedCapitalForTheTime) {
  const Rail1024 r;
  const Duration t = duration_from_seconds(2.0);
  const IterationEnergy e = iteration_energy(r.own, r.prices, t, t, 1024);
  const double tokens_per_s = 1e6, tokens = 1e12;
  const GoalCost g = goal_cost(r.own, r.prices, e, t, tokens_per_s, tokens, 1024);
  EXPECT_DOUBLE_EQ(g.seconds, 1e6);
  EXPECT_DOUBLE_EQ(g.iterations, 5e5);
  EXPECT_NEAR(g.energy.value(), e.facility.value() * 5e5, 1e-3);
  const double hours = 1e6 / 3600;
  EXPECT_NEAR(g.capital_cost.value(), 50'429'440 / (5 * 8760.0) * hours, 1e-6);
  EXPECT_NEAR(g.energy_cost.value(), g.energy.value() / 3.6e6 * 0.0826, 1e-6);
  ASSERT_TRUE(g.cloud_cost.has_value());
  EXPECT_NEAR(g.cloud_cost->value(), 1024 * hours * 3.0, 1e-6);
  EXPECT_NEAR(g.tokens_per_dollar(), tokens / g.cost().value(), 1e-9);
}

}  // namespace
}  // namespace cs::cost
