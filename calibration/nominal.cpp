#include "calibration/nominal.h"

#include "hardware/catalog.h"

namespace cs::cal {

NominalBandwidths nominal_from_catalog(const Inventory& inv) { return nominal_from_catalog(inv, std::nullopt); }

NominalBandwidths nominal_from_catalog(const Inventory& inv, const std::optional<std::string>& network_nic) {
  const hw::Catalog& catalog = hw::Catalog::builtin();
  NominalBandwidths out;
  const Duration nvlink_wire = catalog.wire_latency(hw::LinkClass::kNvlink);
  const Duration pcie_wire = catalog.wire_latency(hw::LinkClass::kPcie);
  if (!inv.gpus.empty()) {
    const auto gpu = catalog.gpus().find(inv.gpus.front().catalog_gpu);
    if (gpu != catalog.gpus().end()) {
      if (!gpu->second.nvlink.empty()) {
        const auto nv = catalog.nvlinks().find(gpu->second.nvlink);
        if (nv != catalog.nvlinks().end() && nv->second.per_gpu_bandwidth.value() > 0) {
          out.per_class["nvlink"] = nv->second.per_gpu_bandwidth;
          out.ring_step_path_latency["nvlink"] = 2 * nvlink_wire;  // GPU -> NVSwitch -> GPU
        }
      }
      if (gpu->second.pcie_bandwidth.value() > 0) {
        out.per_class["pcie"] = gpu->second.pcie_bandwidth;
        out.ring_step_path_latency["pcie"] = 4 * pcie_wire;  // GPU -> PCIe switch -> host -> PCIe switch -> GPU
      }
    }
  }
  if (network_nic) {
    const hw::NicSpec& nic = catalog.nic(*network_nic, "", "--network-nic");
    if (nic.bandwidth.value() > 0) out.per_class["network"] = nic.bandwidth;
    // GPU -> PCIe switch -> NIC -> network switch -> NIC -> PCIe switch -> GPU; each NIC cable
    // is a PCIe wire plus the NIC's traversal.
    out.ring_step_path_latency["network"] = 4 * pcie_wire + 2 * nic.latency + 2 * catalog.wire_latency(hw::LinkClass::kNetwork);
  }
  return out;
}

}  // namespace cs::cal
