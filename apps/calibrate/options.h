// The command line of clustersim-calibrate, parsed (main.cpp) and handed to a command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cs::calibrate {

struct Options {
  // measuring
  bool quick = false;
  std::string out;  // "" : calibration-profile.json (measure), the input file itself (refit)
  int gpus = 0;
  bool algos = false;
  std::string sections;   // "gemm,memory,..." ; "" : all
  std::string max_bytes;  // "1GiB"; "" : no bound
  double time_limit_s = 0;
  bool mpi = false;
  // refitting
  std::string refit;  // profile to refit
  // --synthetic GPU, which moved to `clustersim profile synthetic` (an error pointing there)
  std::string synthetic;
  // the command line as typed, for the profile's provenance
  std::string command;
};

}  // namespace cs::calibrate
