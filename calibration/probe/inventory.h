// What the machine is: every GPU used (name, UUID, multiprocessors, compute capability, memory, L2,
// clocks, power limit, the catalog's name for it), the software versions (driver, CUDA runtime,
// cuBLASLt, NCCL), which GPU pairs have peer access and how many NVLink links join them, and every
// NCCL_* environment variable. From CUDA and NVML (nvml.h; without NVML: CUDA's peak clocks, no
// power limit, no NVLink counts).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "calibration/profile.h"

namespace cs::probe {

// One CUDA device the run uses, with what the probe needs at hand.
struct DeviceInfo {
  int cuda_device = 0;
  std::string name;
  std::string pci_bus_id;  // "0000:3B:00.0"
  void* nvml = nullptr;    // NVML device, nullptr without NVML
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::size_t total_memory = 0;
  std::size_t l2_bytes = 0;
};

// Describes CUDA devices 0 .. count-1. Throws ProbeError.
std::vector<DeviceInfo> describe_devices(int count);

// Every NCCL_* variable of the environment, as the user set it.
std::map<std::string, std::string> nccl_environment();

// The inventory of `devices` (one node). Throws ProbeError.
cal::Inventory collect_inventory(const std::vector<DeviceInfo>& devices, const std::map<std::string, std::string>& env);

// The link class of the d2d path i -> j: "nvlink" when NVML counts NVLink links between them (or,
// without NVML, when CUDA reports native peer atomics, which only NVLink offers), else "pcie".
std::vector<std::vector<std::string>> link_classes(const std::vector<DeviceInfo>& devices, const cal::Inventory& inv);

// "13.1.0" from cuBLAS's 130100; "2.28.9" from NCCL's 22809 (and 2.8.4 from the old 2804).
std::string cublas_version_string(std::size_t code);
std::string nccl_version_string(int code);

}  // namespace cs::probe
