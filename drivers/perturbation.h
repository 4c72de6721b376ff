// What-ifs on one sourced value: the overrides that set a catalog or protocol value to a multiple
// of itself (sensitivity tables, refits). A value of the hardware catalog (configs/hardware) is
// changed through the experiment's hardware overrides; a protocol value (configs/collectives) through
// the cluster file's "link_classes" or "collective_model" section, merged into what the cluster
// file already says.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sourced_value.h"

namespace cs::drv {

struct Perturbation {
  std::vector<std::string> cluster_overrides;   // to append to the experiment's
  std::vector<std::string> hardware_overrides;  // likewise
};

// `fact`'s value (a number, a duration or a bandwidth, as written) set to `value`, written in the
// value's own kind of unit. `cluster_document`: the cluster file as the experiment loads it (after
// its overrides), whose protocol sections the new value is merged into.
Perturbation set_value(const SourcedFact& fact, const std::string& value, const nlohmann::json& cluster_document);
// `fact`'s value times `factor`.
Perturbation scaled(const SourcedFact& fact, double factor, const nlohmann::json& cluster_document);
// `fact`'s value times `factor`, as it would be written ("0.648", "13200000ps", "302500000000B/s").
std::string scaled_value(const SourcedFact& fact, double factor);
// `factor`, or less where the scaled value would leave the value's domain: an efficiency (a path
// ending in "/efficiency" or inside ".../efficiency/") is a fraction of a peak or a line rate, at
// most 1, so 0.92 x 1.1 becomes 0.92 x (1 / 0.92).
double feasible_factor(const SourcedFact& fact, double factor);

}  // namespace cs::drv
