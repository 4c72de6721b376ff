// Which values a validation rests on, and how much: the change of every point's error when one
// assumed or fitted value moves by a factor (±10% in docs/validation.md), the others held. A point
// whose error does not move carries no information about that value; a value that moves no point
// is not validated by this table at all.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/sourced_value.h"
#include "drivers/training_records.h"
#include "drivers/training_validation.h"

namespace cs::drv {

struct SensitivityRow {
  SourcedFact fact;
  double factor = 1;  // as applied: the factor asked for, or less where it would leave the value's domain (feasible_factor)
  std::vector<double> error_change;  // per point: error with the value scaled minus error without, as a fraction
};

// Every assumed or fitted value the rows' runs rest on (the union of their assumptions), scaled by
// each factor.
std::vector<SensitivityRow> training_sensitivity(const std::vector<TrainingRecord>& records, const std::vector<std::size_t>& rows,
                                                 const std::vector<double>& factors, const Progress& progress = {});

// Every assumed or fitted value the records' machines' collectives rest on (the GPUs' compute
// values left out: a collective does not use them), scaled by each factor; the points of
// validate_nccl, in its order.
std::vector<SensitivityRow> nccl_sensitivity(const ConfigDocument& doc, const std::vector<double>& factors,
                                             const Progress& progress = {});

}  // namespace cs::drv
