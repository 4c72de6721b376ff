#include "apps/calibrate/cmd_refit.h"

#include <iostream>

#include "calibration/fit.h"
#include "calibration/nominal.h"
#include "calibration/profile.h"

namespace cs::calibrate {

int run_refit_command(const Options& o) {
  cal::Profile p = cal::load_profile(o.refit);
  p.models = cal::fit_models(p, cal::nominal_from_catalog(p.inventory));
  p.provenance.refit = cal::utc_timestamp();
  const std::string out = o.out.empty() ? o.refit : o.out;
  cal::save_profile(p, out);
  const std::size_t points = p.gemm.size() + p.memory.size() + p.launch.size() + p.overlap.size() + p.links.size() +
                             p.collectives.size();
  std::cout << "clustersim-calibrate: refitted " << o.refit << " (" << points << " points: "
            << p.models.collectives.size() << " collective fits, " << p.models.gemm.size() << " GEMM models"
            << (p.models.memory ? ", a memory model" : "") << ") into " << out << "\n";
  return 0;
}

}  // namespace cs::calibrate
