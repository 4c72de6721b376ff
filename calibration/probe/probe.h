// clustersim-calibrate's measuring side: runs the sections on this machine's GPUs and writes a
// calibration profile (docs/calibration.md; the file format is docs/calibration-profile.md).
// Built only where CUDA and NCCL are found (CLUSTERSIM_HAVE_PROBE); this header needs neither.
//
//   ProbeOptions o;  o.quick = true;  o.out = "h200.json";
//   int code = run_probe(o);   // 0 done (failed points are in the profile), 2 bad input or no
//                              // GPU, 1 internal error, 130 interrupted (the profile is saved)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cs::probe {

struct ProbeOptions {
  bool quick = false;                 // the ~3-minute subset (docs/calibration.md, "--quick")
  std::string out = "calibration-profile.json";
  int gpus = 0;                       // use CUDA devices 0 .. gpus-1; 0: all of them
  bool algos = false;                 // also force each NCCL algorithm (NCCL_ALGO) per collective
  std::vector<std::string> sections;  // plan.h's names, in run order; empty: all
  std::int64_t max_bytes = 0;         // bound on every byte sweep; 0: the plan's own bounds
  double time_limit_s = 0;            // per point; 0: 1 s with quick, else 5 s
  bool mpi = false;                   // one process per GPU under mpirun (CLUSTERSIM_HAVE_MPI only)
  std::string command;                // the command line, recorded in the profile
};

int run_probe(const ProbeOptions& options);

// "CUDA runtime 13.0, cuBLASLt 13.1.0, NCCL 2.28.9" of the libraries the probe was built against
// (compile-time versions), plus ", MPI" when built with MPI.
std::string probe_build_info();
bool probe_has_mpi();

}  // namespace cs::probe
