// clustersim-calibrate --refit PROFILE [--out FILE]: recomputes a profile's models from its points
// (no GPU needed) and records the time in provenance.refit.
#pragma once

#include "apps/calibrate/options.h"

namespace cs::calibrate {

// Throws InputError (ConfigError) naming the file and JSON path for a bad profile.
int run_refit_command(const Options& o);

}  // namespace cs::calibrate
