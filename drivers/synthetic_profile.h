// A calibration profile generated from the hardware catalog by the simulator's own models instead
// of measured on a GPU, marked "synthetic" in its provenance, so that users can see the format
// and exercise the commands that read profiles (docs/calibration.md, "Synthetic profiles").
// GEMMs and memory-bound kernels are timed by the catalog roofline (the kernel alone, as the probe
// times it: the compute model adds the launch overhead), collectives and copies by the flow model
// on one server (collectives also with ring, tree and NVLS forced, as `--algos` measures), each
// with seeded +-1% noise; then the profile's models are fitted as for a measured one. The fits
// give back the parameters the simulator ran with (tests/drivers/synthetic_fit_test.cpp). It lives with the drivers because it runs the simulator: the calibration
// tool itself knows nothing of the simulator's internals.
#pragma once

#include <string>

#include "calibration/profile.h"

namespace cs::drv {

// The noise of every synthetic timing: uniform in +-1% of the model's time.
inline constexpr double kSyntheticNoise = 0.01;

// `gpu`: a catalog GPU name (ConfigError at `where` otherwise); `gpus`: the GPUs of its one server;
// `command`: the command line, for the provenance; `noise`: the half-width of the relative noise
// (0: the models' times exactly, for tests of the fits).
cal::Profile synthetic_profile(const std::string& gpu, int gpus, const std::string& command, const std::string& where,
                               double noise = kSyntheticNoise);

}  // namespace cs::drv
