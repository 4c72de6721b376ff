#include "calibration/probe/inventory.h"

#include <algorithm>
#include <cstdio>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "calibration/probe/catalog_names.h"
#include "calibration/probe/cuda_check.h"
#include "calibration/probe/nvml.h"

extern char** environ;

namespace cs::probe {

namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  CS_CUDA(cudaDeviceGetAttribute(&v, attr, device));
  return v;
}

std::string uuid_string(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

NvmlPci pci_of(const DeviceInfo& d) {
  NvmlPci p;
  p.domain = static_cast<unsigned>(attribute(cudaDevAttrPciDomainId, d.cuda_device));
  p.bus = static_cast<unsigned>(attribute(cudaDevAttrPciBusId, d.cuda_device));
  p.device = static_cast<unsigned>(attribute(cudaDevAttrPciDeviceId, d.cuda_device));
  return p;
}

}  // namespace

std::string cublas_version_string(std::size_t code) {
  return std::to_string(code / 10000) + "." + std::to_string((code / 100) % 100) + "." + std::to_string(code % 100);
}

std::string nccl_version_string(int code) {
  if (code >= 20900) {
    return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." + std::to_string(code % 100);
  }
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 100) + "." + std::to_string(code % 100);
}

std::vector<DeviceInfo> describe_devices(int count) {
  Nvml& nvml = Nvml::instance();
  std::vector<DeviceInfo> out;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    CS_CUDA(cudaGetDeviceProperties(&prop, d));
    DeviceInfo info;
    info.cuda_device = d;
    info.name = prop.name;
    char bus[32] = {};
    CS_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    info.pci_bus_id = bus;
    info.nvml = nvml.device_for(info.pci_bus_id);
    info.sm_count = prop.multiProcessorCount;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.total_memory = prop.totalGlobalMem;
    info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    out.push_back(std::move(info));
  }
  return out;
}

std::map<std::string, std::string> nccl_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("NCCL_", 0) != 0) continue;
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

cal::Inventory collect_inventory(const std::vector<DeviceInfo>& devices, const std::map<std::string, std::string>& env) {
  const Nvml& nvml = Nvml::instance();
  cal::Inventory inv;
  inv.nodes = 1;
  inv.environment = env;

  int driver = 0, runtime = 0;
  CS_CUDA(cudaDriverGetVersion(&driver));
  CS_CUDA(cudaRuntimeGetVersion(&runtime));
  inv.driver_version = nvml.driver_version();
  if (inv.driver_version.empty()) {
    inv.driver_version = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10);
  }
  inv.cuda_runtime_version = std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10);
  inv.cublas_version = cublas_version_string(cublasLtGetVersion());
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) inv.nccl_version = nccl_version_string(nccl);

  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i];
    cudaDeviceProp prop{};
    CS_CUDA(cudaGetDeviceProperties(&prop, d.cuda_device));
    cal::GpuInventory g;
    g.index = static_cast<int>(i);
    g.node = 0;
    g.name = d.name;
    g.uuid = uuid_string(prop.uuid);
    g.sm_count = d.sm_count;
    g.compute_capability = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    g.memory = Bytes{static_cast<std::int64_t>(d.total_memory)};
    g.l2 = Bytes{static_cast<std::int64_t>(d.l2_bytes)};
    g.sm_clock_mhz = static_cast<int>(
        nvml.max_sm_clock_mhz(d.nvml).value_or(static_cast<unsigned>(attribute(cudaDevAttrClockRate, d.cuda_device) / 1000)));
    g.memory_clock_mhz = static_cast<int>(nvml.max_memory_clock_mhz(d.nvml).value_or(
        static_cast<unsigned>(attribute(cudaDevAttrMemoryClockRate, d.cuda_device) / 1000)));
    g.power_limit_w = nvml.power_limit_w(d.nvml).value_or(0.0);
    g.catalog_gpu = catalog_gpu_for(d.name);
    inv.gpus.push_back(std::move(g));
  }

  const std::size_t n = devices.size();
  inv.peer_access.assign(n, std::vector<bool>(n, false));
  inv.nvlink.assign(n, std::vector<int>(n, 0));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      int can = 0;
      CS_CUDA(cudaDeviceCanAccessPeer(&can, devices[i].cuda_device, devices[j].cuda_device));
      inv.peer_access[i][j] = can != 0;
    }
  }

  // NVLink: links to another GPU count for that pair; links to NVSwitches (or to a far end that is
  // none of our GPUs) join every pair of GPUs that both have some: min of their switch links.
  std::vector<NvmlPci> pci;
  for (const DeviceInfo& d : devices) pci.push_back(pci_of(d));
  std::vector<int> switch_links(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto ends = nvml.nvlinks(devices[i].nvml);
    if (!ends) continue;
    for (const auto& end : *ends) {
      bool gpu = false;
      for (std::size_t j = 0; j < n && !end.is_switch; ++j) {
        if (j != i && pci[j].domain == end.remote.domain && pci[j].bus == end.remote.bus &&
            pci[j].device == end.remote.device) {
          ++inv.nvlink[i][j];
          gpu = true;
          break;
        }
      }
      if (!gpu) ++switch_links[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j && switch_links[i] > 0 && switch_links[j] > 0) {
        inv.nvlink[i][j] += std::min(switch_links[i], switch_links[j]);
      }
    }
  }
  return inv;
}

std::vector<std::vector<std::string>> link_classes(const std::vector<DeviceInfo>& devices, const cal::Inventory& inv) {
  const std::size_t n = devices.size();
  const bool nvml = Nvml::instance().available();
  std::vector<std::vector<std::string>> cls(n, std::vector<std::string>(n, "pcie"));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      if (inv.nvlink[i][j] > 0) {
        cls[i][j] = "nvlink";
      } else if (!nvml && inv.peer_access[i][j]) {
        int atomics = 0;
        CS_CUDA(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, devices[i].cuda_device,
                                          devices[j].cuda_device));
        if (atomics != 0) cls[i][j] = "nvlink";
      }
    }
  }
  return cls;
}

}  // namespace cs::probe
