// clustersim-calibrate [--quick] [--out FILE] ...: measures this machine (calibration/probe).
#pragma once

#include <string>

#include "apps/calibrate/options.h"

namespace cs::calibrate {

// Exit code: 0 done, 2 bad input / no GPU / built without the probe, 1 internal error,
// 130 interrupted (the profile so far is saved).
int run_measure_command(const Options& o);

// One line about the probe this binary carries, for --version.
std::string probe_description();

}  // namespace cs::calibrate
