#include "cost/ownership.h"

namespace cs::cost {

Ownership ownership(const topo::Cluster& cluster, BillOfMaterials bom, const PriceCatalog& prices) {
  Ownership o;
  const Facility& f = prices.facility();
  o.pue = f.pue;
  o.years = f.amortization_years;
  bool all_rented = !bom.server_lines.empty();
  Money rent_sum{0};
  for (const ServerLine& l : bom.server_lines) {
    o.capital.servers += l.unit_price * static_cast<double>(l.servers);
    o.power.servers_max += l.unit_power_max * static_cast<double>(l.servers);
    o.capital.operations += f.operations_per_server * (static_cast<double>(l.gpus) / l.price->gpus);
    if (l.price->cloud_per_gpu_hour) {
      rent_sum += *l.price->cloud_per_gpu_hour * static_cast<double>(l.gpus);
    } else {
      all_rented = false;
    }
  }
  for (topo::NodeId g : cluster.gpus()) {
    const hw::GpuSpec& spec = cluster.gpu_spec(g);
    const ServerPrice* p = prices.find_server(spec.name);
    o.power.gpus_max += watts(spec.tdp_watts);
    o.power.gpus_idle += p != nullptr ? p->gpu_idle : watts(0);
    o.max_gpu_tdp = std::max(o.max_gpu_tdp, watts(spec.tdp_watts));
  }
  if (bom.switch_price != nullptr) {
    o.capital.switches = bom.switch_price->price * static_cast<double>(bom.switches());
    o.power.switches = bom.switch_price->power * static_cast<double>(bom.switches());
  }
  if (bom.link_price != nullptr) {
    for (const CableTier& c : bom.cable_tiers) {
      const Money each = c.medium == Medium::kOptical ? bom.link_price->optical : bom.link_price->copper;
      o.capital.cables += each * static_cast<double>(c.cables);
    }
    o.power.optics = bom.link_price->transceiver * static_cast<double>(bom.transceivers());
  }
  o.training_it = o.power.servers_max * f.average_load + o.power.network();
  o.facility_full = o.power.full() * f.pue;
  o.cooling = o.power.full();
  o.liquid_cooling = o.max_gpu_tdp > f.liquid_cooling_above;
  o.energy_per_year = energy_over_seconds(o.training_it * f.pue, kHoursPerYear * 3600);
  o.energy_cost_per_year = f.per_kwh * to_kilowatt_hours(o.energy_per_year);
  o.per_hour = o.capital.total() / (f.amortization_years * kHoursPerYear) + o.energy_cost_per_year / kHoursPerYear;
  if (bom.gpus > 0) o.per_gpu_hour = o.per_hour / static_cast<double>(bom.gpus);
  if (all_rented && bom.gpus > 0) o.cloud_per_gpu_hour = rent_sum / static_cast<double>(bom.gpus);
  o.bom = std::move(bom);
  return o;
}

std::vector<SourcedFact> assumed_prices(const Ownership& o, const PriceCatalog& prices) {
  std::vector<std::string> paths = o.bom.price_paths;
  for (const char* f : {"/facility/pue", "/facility/usd_per_kwh", "/facility/amortization_years", "/facility/average_load",
                        "/facility/operations_per_server_usd"}) {
    paths.emplace_back(f);
  }
  return prices.judgements(paths);
}

}  // namespace cs::cost
