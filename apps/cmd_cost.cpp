#include "apps/cmd_cost.h"

#include <iostream>

#include "apps/cli_common.h"
#include "cost/ownership.h"
#include "results/cost_report.h"

namespace cs::cli {

void add_price_options(CLI::App& cmd, std::string& prices, std::vector<std::string>& price_overrides) {
  cmd.add_option("--prices", prices, "Price catalog file replacing the built-in one (configs/prices/prices.json's format)");
  cmd.add_option("--set-price", price_overrides,
                 "Override a price or power figure: /json/pointer=value, e.g. /facility/pue=1.2 (repeatable)");
}

CLI::App* add_cost_command(CLI::App& app, CostOptions& o) {
  auto* c = app.add_subcommand("cost", "Bill of materials, capital, power, cooling and $/GPU-hour of a cluster");
  c->add_option("cluster", o.cluster, "Cluster file, or a bundled example name")->required();
  c->add_option("--set", o.overrides, "Override a cluster value: /json/pointer=value (repeatable)");
  add_price_options(*c, o.prices, o.price_overrides);
  c->add_flag("--json", o.json, "Print JSON (schema 1, docs/cost-model.md) instead of the table");
  return c;
}

int run_cost_command(const CostOptions& o) {
  const cost::PriceCatalog prices = cost::PriceCatalog::load(o.prices, o.price_overrides);
  const coll::Machine machine = load_machine(o.cluster, o.overrides);
  cost::BillOfMaterials bom = cost::bill_of_materials(machine.cluster, prices, hw::Catalog::builtin(), o.cluster);
  const cost::Ownership own = cost::ownership(machine.cluster, std::move(bom), prices);
  print_warnings(machine.warnings);
  if (o.json) {
    nlohmann::json j = results::cost_json(own, prices);
    list_warnings_in(j, machine.warnings);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << results::cost_table(own, prices);
  }
  return 0;
}

}  // namespace cs::cli
