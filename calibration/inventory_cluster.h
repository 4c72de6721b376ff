// The cluster a calibration profile was measured on, rebuilt from the hardware catalog: `nodes`
// servers of `gpus_per_node` GPUs of the catalog type, on the GPU's NVLink generation through an
// NVSwitch (the catalog's PCIe host link when the GPU has no NVLink), one NIC per GPU on one
// non-blocking switch when there is more than one node. Used to simulate a profile's measured
// points (`clustersim validate profile`) and to generate synthetic profiles.
#pragma once

#include <string>

#include "calibration/profile.h"
#include "topology/cluster.h"

namespace cs::cal {

// Throws ConfigError (file `origin`, path `where`) for a GPU the catalog does not know.
topo::Cluster inventory_cluster(const std::string& catalog_gpu, int gpus_per_node, int nodes, const std::string& nic,
                                const std::string& origin, const std::string& where);
// From a profile's inventory: its GPU 0's catalog name, its node count, and its GPUs split evenly.
topo::Cluster inventory_cluster(const Inventory& inv, const std::string& nic, const std::string& origin);

}  // namespace cs::cal
