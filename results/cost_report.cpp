#include "results/cost_report.h"

#include <cstdio>
#include <sstream>

#include "results/summary.h"

namespace cs::results {
namespace {

const char* medium_name(cost::Medium m) { return m == cost::Medium::kOptical ? "optical" : "copper"; }

}  // namespace

std::string format_money(Money m) {
  char buf[64];
  const double v = m.value();
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "$%.2fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "$%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "$%.2f", v);
  }
  return buf;
}

namespace {

std::string kw(Power p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f kW", p.value() / 1e3);
  return buf;
}

std::string fixed_gbps(Bandwidth b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f Gb/s", b.value() * 8 / 1e9);
  return buf;
}

}  // namespace

nlohmann::json cost_json(const cost::Ownership& o, const cost::PriceCatalog& prices) {
  const cost::BillOfMaterials& b = o.bom;
  nlohmann::json servers = nlohmann::json::array();
  for (const cost::ServerLine& l : b.server_lines) {
    servers.push_back({{"gpu", l.gpu}, {"servers", l.servers}, {"gpus", l.gpus}, {"unit_price_usd", l.unit_price.value()},
                       {"unit_power_max_w", l.unit_power_max.value()}});
  }
  nlohmann::json switches = nlohmann::json::array();
  for (const cost::SwitchTier& t : b.switch_tiers) {
    switches.push_back({{"tier", t.tier}, {"graph_switches", t.graph_switches}, {"ports", t.ports},
                        {"switches", t.switches}, {"radix", t.radix}});
  }
  nlohmann::json cables = nlohmann::json::array();
  for (const cost::CableTier& c : b.cable_tiers) {
    cables.push_back({{"tier", c.tier}, {"cables", c.cables}, {"medium", medium_name(c.medium)},
                      {"transceivers", c.transceivers}});
  }
  nlohmann::json j = {
      {"schema", kCostSchema},
      {"cluster", b.cluster},
      {"price_catalog", prices.file()},
      {"bom",
       {{"gpus", b.gpus},
        {"servers", b.servers},
        {"nics", b.nics},
        {"server_lines", servers},
        {"port_speed_gbps", b.port_speed.value() * 8 / 1e9},
        {"switch_model", b.switch_price != nullptr ? nlohmann::json(b.switch_price->name) : nlohmann::json(nullptr)},
        {"switch_tiers", switches},
        {"switches", b.switches()},
        {"cable_tiers", cables},
        {"cables", b.cables()},
        {"transceivers", b.transceivers()}}},
      {"capital_usd",
       {{"servers", o.capital.servers.value()},
        {"switches", o.capital.switches.value()},
        {"cables", o.capital.cables.value()},
        {"operations", o.capital.operations.value()},
        {"hardware", o.capital.hardware().value()},
        {"total", o.capital.total().value()},
        {"per_gpu", b.gpus > 0 ? o.capital.total().value() / b.gpus : 0.0}}},
      {"power_w",
       {{"full_load", o.power.full().value()},
        {"idle", o.power.idle().value()},
        {"training_average", o.training_it.value()},
        {"servers_max", o.power.servers_max.value()},
        {"gpus_max", o.power.gpus_max.value()},
        {"switches", o.power.switches.value()},
        {"optics", o.power.optics.value()},
        {"facility_full_load", o.facility_full.value()}}},
      {"cooling", {{"heat_w", o.cooling.value()}, {"method", o.liquid_cooling ? "liquid" : "air"},
                   {"max_gpu_tdp_w", o.max_gpu_tdp.value()}}},
      {"facility", {{"pue", o.pue}, {"amortization_years", o.years}}},
      {"energy_per_year_kwh", to_kilowatt_hours(o.energy_per_year)},
      {"energy_cost_per_year_usd", o.energy_cost_per_year.value()},
      {"cost_per_hour_usd", o.per_hour.value()},
      {"cost_per_gpu_hour_usd", o.per_gpu_hour.value()},
      {"cloud_per_gpu_hour_usd", o.cloud_per_gpu_hour ? nlohmann::json(o.cloud_per_gpu_hour->value()) : nlohmann::json(nullptr)},
      {"assumptions", assumptions_json(cost::assumed_prices(o, prices))}};
  return j;
}

std::string cost_table(const cost::Ownership& o, const cost::PriceCatalog& prices) {
  const cost::BillOfMaterials& b = o.bom;
  std::ostringstream s;
  s << "cluster " << b.cluster << ": " << b.gpus << " GPUs in " << b.servers << " servers, " << b.nics << " NICs\n\n";
  s << "bill of materials\n";
  for (const cost::ServerLine& l : b.server_lines) {
    s << "  servers      " << l.servers << " x " << l.gpu << " (" << l.gpus << " GPUs) at " << format_money(l.unit_price) << "\n";
  }
  if (b.switch_price != nullptr) {
    for (const cost::SwitchTier& t : b.switch_tiers) {
      s << "  " << t.tier << (t.tier == "leaf" ? "         " : "        ") << t.switches << " x " << b.switch_price->name
        << " (" << t.ports << " ports at " << fixed_gbps(b.port_speed) << ", radix " << t.radix << "; "
        << t.graph_switches << " in the graph)\n";
    }
  }
  for (const cost::CableTier& c : b.cable_tiers) {
    s << "  cables       " << c.tier << ": " << c.cables << " " << medium_name(c.medium);
    if (c.transceivers > 0) s << " (" << c.transceivers << " transceivers)";
    s << "\n";
  }
  s << "\ncapital\n";
  s << "  servers                  " << format_money(o.capital.servers) << "\n";
  s << "  switches                 " << format_money(o.capital.switches) << "\n";
  s << "  cables and optics        " << format_money(o.capital.cables) << "\n";
  s << "  facility and operations  " << format_money(o.capital.operations) << " (over " << o.years << " years)\n";
  s << "  total                    " << format_money(o.capital.total());
  if (b.gpus > 0) s << " (" << format_money(o.capital.total() / static_cast<double>(b.gpus)) << " per GPU)";
  s << "\n\npower\n";
  s << "  full load (IT)           " << kw(o.power.full()) << " (servers " << kw(o.power.servers_max) << ", switches "
    << kw(o.power.switches) << ", optics " << kw(o.power.optics) << ")\n";
  s << "  idle (IT)                " << kw(o.power.idle()) << "\n";
  s << "  training average (IT)    " << kw(o.training_it) << "\n";
  s << "  facility at full load    " << kw(o.facility_full) << " (PUE " << o.pue << ")\n";
  s << "  cooling                  " << kw(o.cooling) << " of heat, " << (o.liquid_cooling ? "liquid" : "air")
    << " (GPU TDP " << o.max_gpu_tdp.value() << " W)\n";
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.0f MWh", to_kilowatt_hours(o.energy_per_year) / 1e3);
  s << "  energy per year          " << buf << ", " << format_money(o.energy_cost_per_year) << "\n";
  s << "\nper hour                   " << format_money(o.per_hour) << " (" << format_money(o.per_gpu_hour) << " per GPU-hour, amortized)\n";
  if (o.cloud_per_gpu_hour) s << "cloud rent                 " << format_money(*o.cloud_per_gpu_hour) << " per GPU-hour\n";
  for (const SourcedFact& f : cost::assumed_prices(o, prices)) {
    s << "rests on: " << f.path << " = " << f.value << " (" << f.status << ")\n";
  }
  return s.str();
}

}  // namespace cs::results
