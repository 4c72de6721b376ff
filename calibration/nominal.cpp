#include "calibration/nominal.h"

#include "hardware/catalog.h"

namespace cs::cal {

NominalBandwidths nominal_from_catalog(const Inventory& inv) { return nominal_from_catalog(inv, std::nullopt); }

NominalBandwidths nominal_from_catalog(const Inventory& inv, const std::optional<std::string>& network_nic) {
  const hw::Catalog& catalog = hw::Catalog::builtin();
  NominalBandwidths out;
  if (!inv.gpus.empty()) {
    const auto gpu = catalog.gpus().find(inv.gpus.front().catalog_gpu);
    if (gpu != catalog.gpus().end()) {
      if (!gpu->second.nvlink.empty()) {
        const auto nv = catalog.nvlinks().find(gpu->second.nvlink);
        if (nv != catalog.nvlinks().end() && nv->second.per_gpu_bandwidth.value() > 0) {
          out.per_class["nvlink"] = nv->second.per_gpu_bandwidth;
        }
      }
      if (gpu->second.pcie_bandwidth.value() > 0) out.per_class["pcie"] = gpu->second.pcie_bandwidth;
    }
  }
  if (network_nic) {
    const hw::NicSpec& nic = catalog.nic(*network_nic, "", "--network-nic");
    if (nic.bandwidth.value() > 0) out.per_class["network"] = nic.bandwidth;
  }
  return out;
}

}  // namespace cs::cal
