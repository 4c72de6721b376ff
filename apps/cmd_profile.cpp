#include "apps/cmd_profile.h"

#include <iostream>

#include "calibration/profile.h"
#include "drivers/synthetic_profile.h"

namespace cs::cli {

CLI::App* add_profile_command(CLI::App& app, ProfileOptions& o) {
  auto* profile = app.add_subcommand("profile", "Calibration profiles made without a GPU");
  profile->require_subcommand(1);
  auto* s = profile->add_subcommand(
      "synthetic", "Write a profile generated from the hardware catalog by the simulator's models (marked synthetic)");
  s->add_option("gpu", o.gpu, "A GPU of the hardware catalog (A100-SXM-80GB, H100-SXM, H200-SXM, B200)")->required();
  s->add_option("--gpus", o.gpus, "GPUs of the profile's one server")->check(CLI::Range(1, 1024));
  s->add_option("--out", o.out, "The profile to write");
  return profile;
}

int run_profile_synthetic(const ProfileOptions& o) {
  const std::string command = "clustersim profile synthetic " + o.gpu + " --gpus " + std::to_string(o.gpus) + " --out " + o.out;
  const cal::Profile p = drv::synthetic_profile(o.gpu, o.gpus, command, "gpu");
  cal::save_profile(p, o.out);
  std::ostream& summary = o.out == "-" ? std::cerr : std::cout;  // "--out -": the profile alone on stdout
  summary << "clustersim profile synthetic: wrote a " << p.inventory.gpus.front().catalog_gpu << " profile (" << p.gemm.size()
            << " GEMM, " << p.memory.size() << " memory, " << p.collectives.size() << " collective points; "
            << p.models.collectives.size() << " collective fits) to " << o.out << "\n";
  return 0;
}

}  // namespace cs::cli
