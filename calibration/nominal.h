// Nominal (datasheet) per-GPU bandwidths of the link classes, from the hardware catalog: the
// denominators of the fitted link efficiencies (fit.h, fit_models).
#pragma once

#include <optional>
#include <string>

#include "calibration/fit.h"
#include "calibration/profile.h"

namespace cs::cal {

// From Catalog::builtin() and the catalog name of GPU 0 (inventory.gpus[0].catalog_gpu):
//   "nvlink"  the GPU's NVLink generation's per_gpu_bandwidth (absent when the GPU has none);
//   "pcie"    the GPU's pcie_bandwidth (host link, per direction).
// "network" is absent: the inventory does not name the NIC. A GPU not in the catalog (or an
// inventory without GPUs) gives an empty map, and every link efficiency stays 0.
NominalBandwidths nominal_from_catalog(const Inventory& inv);

// The same, plus "network" = the bandwidth of the catalog NIC `network_nic` (e.g. "NDR-400G"),
// taken as one NIC per GPU (rail-optimised nodes). An unknown NIC name is a ConfigError listing
// the known ones; std::nullopt behaves as the overload above.
NominalBandwidths nominal_from_catalog(const Inventory& inv, const std::optional<std::string>& network_nic);

}  // namespace cs::cal
