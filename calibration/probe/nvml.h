// NVML, loaded at run time (dlopen of libnvidia-ml.so.1, which every NVIDIA driver installs), so
// the probe builds where the toolkit ships no NVML headers or stub library and runs where it
// does. The few functions used are declared here with NVML's ABI (as NCCL does in nvmlwrap.h).
//
// When NVML cannot be loaded, every query returns nothing: the inventory falls back to CUDA's
// attributes (the peak clocks, no power limit, no NVLink counts) and throttle detection is off
// (docs/calibration.md, "Limits").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cs::probe {

// Clock-event ("throttle") reason bits of nvmlDeviceGetCurrentClocksEventReasons.
inline constexpr std::uint64_t kNvmlReasonGpuIdle = 0x1;
inline constexpr std::uint64_t kNvmlReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kNvmlReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kNvmlReasonSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kNvmlReasonHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kNvmlReasonHwPowerBrakeSlowdown = 0x80;
// The reasons that mean power or thermal throttling.
inline constexpr std::uint64_t kNvmlThrottleReasons = kNvmlReasonSwPowerCap | kNvmlReasonHwSlowdown |
                                                     kNvmlReasonSwThermalSlowdown | kNvmlReasonHwThermalSlowdown |
                                                     kNvmlReasonHwPowerBrakeSlowdown;

struct NvmlPci {
  unsigned domain = 0, bus = 0, device = 0;
};

class Nvml {
 public:
  // Loaded and initialised on first use; never throws.
  static Nvml& instance();

  bool available() const { return available_; }
  const std::string& unavailable_reason() const { return reason_; }

  // The NVML device at a PCI bus id as cudaDeviceGetPCIBusId writes it ("0000:3B:00.0"); nullptr
  // when unknown.
  void* device_for(const std::string& pci_bus_id) const;

  std::optional<unsigned> sm_clock_mhz(void* dev) const;
  std::optional<unsigned> max_sm_clock_mhz(void* dev) const;
  std::optional<unsigned> max_memory_clock_mhz(void* dev) const;
  std::optional<double> power_limit_w(void* dev) const;  // the enforced limit
  std::optional<std::uint64_t> clock_event_reasons(void* dev) const;
  std::string driver_version() const;  // "" when unknown

  // Active NVLink links of `dev`: for each, the PCI location of the far end and whether it is an
  // NVSwitch. Empty when the GPU has no NVLink or NVML cannot tell.
  struct NvLinkEnd {
    NvmlPci remote;
    bool is_switch = false;
  };
  std::optional<std::vector<NvLinkEnd>> nvlinks(void* dev) const;

  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

 private:
  Nvml();
  struct Api;
  Api* api_ = nullptr;
  void* lib_ = nullptr;
  bool available_ = false;
  std::string reason_;
};

}  // namespace cs::probe
