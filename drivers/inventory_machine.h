// The machine a calibration profile was measured on, rebuilt from the hardware catalog with the
// built-in protocol parameters: `nodes` servers of `gpus_per_node` GPUs of the catalog type, on
// the GPU's NVLink generation through an NVSwitch (the catalog's PCIe host link when the GPU has
// no NVLink), one NIC per GPU on one non-blocking switch when there is more than one node. Used to simulate a profile's measured
// points (`clustersim validate profile`) and to generate synthetic profiles.
#pragma once

#include <string>

#include "calibration/profile.h"
#include "sim/collectives/machine.h"

namespace cs::drv {

// Throws ConfigError (file `origin`, path `where`) for a GPU the catalog does not know.
coll::Machine inventory_machine(const std::string& catalog_gpu, int gpus_per_node, int nodes, const std::string& nic,
                                const std::string& origin, const std::string& where);
// From a profile's inventory: its GPU 0's catalog name, its node count, and its GPUs split evenly.
coll::Machine inventory_machine(const cal::Inventory& inv, const std::string& nic, const std::string& origin);

}  // namespace cs::drv
