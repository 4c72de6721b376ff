// The hardware catalog's name (configs/hardware/gpus.json) of a GPU as CUDA names it. An explicit
// table of the names CUDA reports for the catalog's parts, not a fuzzy match: a PCIe or NVL
// variant, or a memory size the catalog does not hold, is not the catalog's part, and gives "".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cs::probe {

// "NVIDIA H200" -> "H200-SXM"; "" when the device is not in the catalog.
std::string catalog_gpu_for(std::string_view cuda_device_name);

// The whole table (CUDA name, catalog name), for tests and the documentation.
const std::vector<std::pair<std::string, std::string>>& catalog_gpu_table();

}  // namespace cs::probe
