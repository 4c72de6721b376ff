// A calibration profile generated from the hardware catalog by the simulator's own models instead
// of measured on a GPU, marked "synthetic" in its provenance, so that users can see the format
// and exercise the commands that read profiles (docs/calibration.md, "Synthetic profiles").
// GEMMs and memory-bound kernels are timed by the catalog roofline, collectives and copies by the
// flow model on one server, each with seeded +-1% noise; then the profile's models are fitted as
// for a measured one. It lives with the drivers because it runs the simulator: the calibration
// tool itself knows nothing of the simulator's internals.
#pragma once

#include <string>

#include "calibration/profile.h"

namespace cs::drv {

// `gpu`: a catalog GPU name (ConfigError at `where` otherwise); `gpus`: the GPUs of its one server;
// `command`: the command line, for the provenance.
cal::Profile synthetic_profile(const std::string& gpu, int gpus, const std::string& command, const std::string& where);

}  // namespace cs::drv
