// clustersim-calibrate --synthetic GPU: a calibration profile generated from the hardware catalog
// instead of measured, marked "synthetic" in its provenance, so that users can see the format and
// exercise the commands that read profiles (docs/calibration.md, "Synthetic profiles").
#pragma once

#include "apps/calibrate/options.h"

namespace cs::calibrate {

int run_synthetic_command(const Options& o);

}  // namespace cs::calibrate
