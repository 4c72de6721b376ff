#include "sim/compute/compute_model.h"

#include <algorithm>

#include "core/errors.h"

namespace cs::compute {

FlopRate ComputeModel::peak(const topo::GpuSpec& gpu) const {
  auto it = gpu.peak.find(dtype_);
  if (it == gpu.peak.end()) {
    throw ConfigError("", "/precision", "GPU " + gpu.name + " has no " + dtype_ + " peak in the catalog");
  }
  return it->second;
}

Duration ComputeModel::time(const topo::GpuSpec& gpu, tg::ComputeClass cls, Flops flops,
                            Bytes memory) const {
  const auto& eff = gpu.efficiency;
  Duration math{0};
  if (cls == tg::ComputeClass::kGemm || cls == tg::ComputeClass::kAttention) {
    const double e = cls == tg::ComputeClass::kGemm ? eff.gemm : eff.attention;
    if (flops.value() > 0) math = compute_time(flops, FlopRate{peak(gpu).value() * e});
  }
  Duration traffic{0};
  if (memory.value() > 0) traffic = transfer_time(memory, scale(gpu.hbm_bandwidth, eff.memory));
  return eff.kernel_launch + std::max(math, traffic);
}

}  // namespace cs::compute
