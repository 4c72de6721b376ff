#include "apps/calibrate/cmd_measure.h"

#include <iostream>

#include "core/errors.h"
#include "core/unit_parse.h"

#ifdef CLUSTERSIM_HAVE_PROBE
#include "calibration/probe/plan.h"
#include "calibration/probe/probe.h"
#endif

namespace cs::calibrate {

std::string probe_description() {
#ifdef CLUSTERSIM_HAVE_PROBE
  return "probe: " + probe::probe_build_info();
#else
  return "probe: not built (no CUDA/NCCL at configure time): only --refit is available";
#endif
}

int run_measure_command(const Options& o) {
#ifndef CLUSTERSIM_HAVE_PROBE
  (void)o;
  std::cerr << "clustersim-calibrate was built without CUDA/NCCL: only --refit is available\n";
  return 2;
#else
  probe::ProbeOptions p;
  p.quick = o.quick;
  p.out = o.out.empty() ? "calibration-profile.json" : o.out;
  p.gpus = o.gpus;
  p.algos = o.algos;
  if (!o.sections.empty()) p.sections = probe::parse_sections(o.sections);  // InputError naming --sections
  if (!o.max_bytes.empty()) {
    try {
      p.max_bytes = parse_bytes(o.max_bytes).value();
    } catch (const UnitParseError& e) {
      throw InputError("", "--max-bytes", e.what());
    }
    if (p.max_bytes < 8) throw InputError("", "--max-bytes", "must be at least 8B");
  }
  p.time_limit_s = o.time_limit_s;
  if (o.mpi && !probe::probe_has_mpi()) {
    throw InputError("", "--mpi", "clustersim-calibrate was built without MPI (no MPI compiler at configure time)");
  }
  p.mpi = o.mpi;
  p.command = o.command;
  return probe::run_probe(p);
#endif
}

}  // namespace cs::calibrate
