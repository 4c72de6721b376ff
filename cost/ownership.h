// What a cluster costs to own and run: capital by category, power at full load and idle, facility
// power and cooling, yearly energy and the amortized price of a GPU-hour. docs/cost-model.md.
//
// Equations (inputs from the bill of materials and the price catalog):
//   capital            servers + switches + cables (optical: two transceivers and a fiber) +
//                      facility and operations over the life (per server, the Freakonomics sheet's
//                      line); hardware = the first three.
//   P_full (IT)        sum of servers' maximum draw + switches + transceivers.
//   P_idle (IT)        P_full - GPUs x (TDP - idle draw of a GPU): only the GPUs idle down (switches
//                      and optics draw nearly constant power; the host's share is kept, assumed).
//   P_train (IT)       servers' maximum x average_load (Epoch AI's 0.75 of server TDP) + network.
//   facility power     IT power x PUE; cooling load = IT power (all of it leaves as heat); liquid
//                      cooling where a GPU's TDP exceeds the catalog's threshold (about 1 kW).
//   energy per year    P_train x PUE x 8,760 h; its cost x $/kWh: Epoch AI's formula
//                      (server TDP x 0.75 x PUE x hours x $/kWh) with the network's draw added.
//   $/GPU-hour         (capital / (life years x 8,760 h) + energy cost per hour) / GPUs, the cluster
//                      used all the time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "cost/bill_of_materials.h"
#include "cost/price_catalog.h"
#include "hardware/catalog.h"

namespace cs::cost {

struct Capital {
  Money servers{0};
  Money switches{0};
  Money cables{0};
  Money operations{0};  // facility and operations over the life
  Money hardware() const { return servers + switches + cables; }
  Money total() const { return hardware() + operations; }
};

struct PowerDraw {
  Power servers_max{0};   // sum of the servers' maximum draw
  Power gpus_max{0};      // of which GPUs at TDP
  Power gpus_idle{0};     // the same GPUs idle
  Power switches{0};
  Power optics{0};        // transceivers
  Power network() const { return switches + optics; }
  Power full() const { return servers_max + network(); }
  Power idle() const { return full() - gpus_max + gpus_idle; }
};

struct Ownership {
  BillOfMaterials bom;
  Capital capital;
  PowerDraw power;
  Power training_it{0};        // average IT draw while training
  Power facility_full{0};      // full load x PUE
  Power cooling{0};            // heat to remove at full load (IT power)
  bool liquid_cooling = false;
  Power max_gpu_tdp{0};
  double pue = 1;
  double years = 0;
  Energy energy_per_year{0};   // at the training draw, through PUE
  Money energy_cost_per_year{0};
  Money per_hour{0};           // the whole cluster: amortized capital + energy
  Money per_gpu_hour{0};
  std::optional<Money> cloud_per_gpu_hour;  // when every server type has a rent in the catalog
};

// Prices `bom` (bill_of_materials of the same catalog).
Ownership ownership(const topo::Cluster& cluster, BillOfMaterials bom, const PriceCatalog& prices);

// The assumed (or fitted) catalog figures the ownership rests on: those of the bill of materials'
// prices and the facility's, in that order.
std::vector<SourcedFact> assumed_prices(const Ownership& o, const PriceCatalog& prices);

// Hours in a year (365 days), the amortization's unit.
inline constexpr double kHoursPerYear = 8760;

}  // namespace cs::cost
