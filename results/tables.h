// The CSV tables of a training run (docs/outputs.md).
#pragma once

#include <string>

#include "results/training_run.h"

namespace cs::results {

// per_gpu.csv: one row per simulated rank: grid position, GPU, seconds per stall category, total
// and the memory of its pipeline stage by category.
std::string per_gpu_csv(const TrainingRun& run);

}  // namespace cs::results
