#include "calibration/probe/catalog_names.h"

namespace cs::probe {

const std::vector<std::pair<std::string, std::string>>& catalog_gpu_table() {
  // cudaDeviceProp::name of each part, as the driver reports it.
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM"},  // H100 SXM5 (HGX / DGX H100)
      {"NVIDIA H100 SXM5 80GB", "H100-SXM"},  // the same part under some drivers
      {"NVIDIA H200", "H200-SXM"},            // H200 SXM (HGX H200); the PCIe card is "NVIDIA H200 NVL"
      {"NVIDIA B200", "B200"},
  };
  return table;
}

std::string catalog_gpu_for(std::string_view cuda_device_name) {
  for (const auto& [cuda, catalog] : catalog_gpu_table()) {
    if (cuda == cuda_device_name) return catalog;
  }
  return "";
}

}  // namespace cs::probe
