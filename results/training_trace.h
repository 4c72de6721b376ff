// The timeline of a training run as a Chrome/Perfetto trace (results/chrome_trace.h): one process
// per simulated rank, one track per stream, one span per op that took time.
#pragma once

#include <string>

#include "results/training_run.h"

namespace cs::results {

std::string training_trace_json(const TrainingRun& run);

}  // namespace cs::results
