// The writers of `clustersim cost` (docs/cost-model.md, "Output"): a table for people and a JSON
// document (schema 1) for scripts, from the ownership of a cluster.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cost/ownership.h"
#include "cost/price_catalog.h"

namespace cs::results {

inline constexpr int kCostSchema = 1;

// "$1.23M", "$45.6k", "$7.89": money for tables.
std::string format_money(Money m);

nlohmann::json cost_json(const cost::Ownership& o, const cost::PriceCatalog& prices);
std::string cost_table(const cost::Ownership& o, const cost::PriceCatalog& prices);

}  // namespace cs::results
