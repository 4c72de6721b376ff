// Nominal (datasheet) per-GPU bandwidths of the link classes, from the hardware catalog: the
// denominators of the fitted link efficiencies (fit.h, fit_models).
#pragma once

#include <optional>
#include <string>

#include "calibration/fit.h"
#include "calibration/profile.h"

namespace cs::cal {

// From Catalog::builtin() and the catalog name of GPU 0 (inventory.gpus[0].catalog_gpu), per class
// the nominal bandwidth and the wire latency of one ring step's path (Catalog::wire_latency, the
// latency of one link of the class; the server is the one drivers/inventory_machine.h rebuilds):
//   "nvlink"  the GPU's NVLink generation's per_gpu_bandwidth (absent when the GPU has none);
//             path GPU -> NVSwitch -> GPU, 2 NVLink wires;
//   "pcie"    the GPU's pcie_bandwidth (host link, per direction); path GPU -> PCIe switch ->
//             host -> PCIe switch -> GPU, 4 PCIe wires: the step between GPUs under different
//             switches, the slowest step of a ring of more than two GPUs, which sets every step's
//             latency in the collective model (two GPUs under one switch cross 2 wires only).
// "network" is absent: the inventory does not name the NIC. A GPU not in the catalog (or an
// inventory without GPUs) gives empty maps, and every link efficiency stays 0.
NominalBandwidths nominal_from_catalog(const Inventory& inv);

// The same, plus "network" = the bandwidth of the catalog NIC `network_nic` (e.g. "NDR-400G"),
// taken as one NIC per GPU (rail-optimised nodes), with the path GPU -> PCIe switch -> NIC ->
// network switch -> NIC -> PCIe switch -> GPU: 4 PCIe wires, 2 NIC traversals, 2 network wires. An unknown NIC name is a ConfigError listing
// the known ones; std::nullopt behaves as the overload above.
NominalBandwidths nominal_from_catalog(const Inventory& inv, const std::optional<std::string>& network_nic);

}  // namespace cs::cal
