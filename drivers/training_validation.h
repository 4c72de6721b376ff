// Training throughput against published runs (validation tables of drivers/training_records.h):
// each row simulated once; a constant's effect on every row (a grid of its values), from which
// the constant is refitted on the table's fit rows, and each row is predicted by the value fitted
// on the other rows (leave-one-out: the table's honest out-of-sample error); and the sensitivity
// of every row's error to each assumed or fitted value the runs rest on.
//
// Refit and leave-one-out: the predicted TFLOP/s of row i at value v, P_i(v), is simulated on a
// grid of values and interpolated linearly between them; the fitted value minimises
// sum over the fitting rows of ln(P_i(v) / published_i)^2 (golden-section search on the
// interpolants), and is reported to two decimals.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/sourced_value.h"
#include "core/warning.h"
#include "drivers/nccl_validation.h"
#include "drivers/training_records.h"

namespace cs::drv {

struct TrainingRowResult {
  std::size_t row = 0;  // 0-based index in the table
  double predicted_tflops_per_gpu = 0;
  Duration iteration{0};
  std::vector<SourcedFact> assumptions;  // what the prediction rests on
  std::vector<Warning> warnings;         // the run's (results::TrainingRun::warnings)
  double error(const TrainingRecord& r) const {
    return (predicted_tflops_per_gpu - r.published_tflops_per_gpu) / r.published_tflops_per_gpu;
  }
};

// Called before each simulation with a line saying what runs (for progress on a terminal).
using Progress = std::function<void(const std::string&)>;

// `rows` of `records` simulated with `overrides` added to each experiment's.
std::vector<TrainingRowResult> simulate_rows(const std::vector<TrainingRecord>& records, const std::vector<std::size_t>& rows,
                                             const MachineOverrides& overrides = {}, const Progress& progress = {});

// P_i(v) on a grid of values of one sourced value (the catalog's or the protocol's), the values
// given as factors of the value in use (1 = as the file says).
struct ConstantGrid {
  SourcedFact fact;
  std::vector<double> factors;                 // ascending
  std::vector<std::vector<double>> predicted;  // [row][factor], TFLOP/s per GPU; rows as given
  double at(std::size_t row, double factor) const;  // linear between grid factors, clamped at the ends
};
ConstantGrid constant_grid(const std::vector<TrainingRecord>& records, const std::vector<std::size_t>& rows,
                           const SourcedFact& fact, const std::vector<double>& factors, const Progress& progress = {});

// The factor of the grid's constant that fits the rows `fit` (indices into the grid's rows), within
// the grid's range.
double fit_constant(const ConstantGrid& grid, const std::vector<double>& published, const std::vector<std::size_t>& fit);

struct LeaveOneOut {
  std::vector<double> fitted;     // per row: the factor fitted on the other rows
  std::vector<double> predicted;  // per row: its TFLOP/s at that factor
};
LeaveOneOut leave_one_out(const ConstantGrid& grid, const std::vector<double>& published);

// The constant the table's fit records name (one for the Megatron table); ConfigError when the
// records name several or none.
SourcedFact fitted_constant(const std::vector<TrainingRecord>& records);

}  // namespace cs::drv
