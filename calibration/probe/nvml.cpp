#include "calibration/probe/nvml.h"

#include <dlfcn.h>


namespace cs::probe {

namespace {

// NVML's ABI (nvml.h): results are ints (0 = NVML_SUCCESS), devices opaque pointers.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kErrorInvalidArgument = 2;
constexpr nvmlReturn_t kErrorNotSupported = 3;
constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kNvLinkDeviceTypeSwitch = 2;  // NVML_NVLINK_DEVICE_TYPE_SWITCH
constexpr unsigned kMaxNvLinks = 64;        // NVML_NVLINK_MAX_LINKS is 18 today; ask until refused

// nvmlPciInfo_t (version 2 and later; the layout nvmlDeviceGetNvLinkRemotePciInfo_v2 fills).
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*handle_by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*enforced_power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*nvlink_remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;
};

namespace {

template <class F>
void bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

Nvml& Nvml::instance() {
  static Nvml nvml;
  return nvml;
}

Nvml::Nvml() : api_(new Api) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    const char* err = dlerror();
    reason_ = std::string("cannot load libnvidia-ml.so.1") + (err != nullptr ? std::string(": ") + err : "");
    return;
  }
  Api& a = *api_;
  bind(lib_, a.init, "nvmlInit_v2");
  bind(lib_, a.shutdown, "nvmlShutdown");
  bind(lib_, a.error_string, "nvmlErrorString");
  bind(lib_, a.driver_version, "nvmlSystemGetDriverVersion");
  bind(lib_, a.handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(lib_, a.clock_info, "nvmlDeviceGetClockInfo");
  bind(lib_, a.max_clock_info, "nvmlDeviceGetMaxClockInfo");
  bind(lib_, a.enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  bind(lib_, a.clock_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a.clock_event_reasons == nullptr) bind(lib_, a.clock_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(lib_, a.nvlink_state, "nvmlDeviceGetNvLinkState");
  bind(lib_, a.nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  bind(lib_, a.nvlink_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
  if (a.init == nullptr || a.handle_by_pci == nullptr || a.clock_info == nullptr) {
    reason_ = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetClockInfo";
    return;
  }
  const nvmlReturn_t r = a.init();
  if (r != kSuccess) {
    reason_ = std::string("nvmlInit_v2 failed: ") + (a.error_string != nullptr ? a.error_string(r) : std::to_string(r));
    return;
  }
  available_ = true;
}

Nvml::~Nvml() {
  if (available_ && api_->shutdown != nullptr) (void)api_->shutdown();
  if (lib_ != nullptr) dlclose(lib_);
  delete api_;
}

void* Nvml::device_for(const std::string& pci_bus_id) const {
  if (!available_) return nullptr;
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_pci(pci_bus_id.c_str(), &dev) != kSuccess) return nullptr;
  return dev;
}

std::optional<unsigned> Nvml::sm_clock_mhz(void* dev) const {
  unsigned mhz = 0;
  if (!available_ || dev == nullptr || api_->clock_info(dev, kClockSm, &mhz) != kSuccess) return std::nullopt;
  return mhz;
}

std::optional<unsigned> Nvml::max_sm_clock_mhz(void* dev) const {
  unsigned mhz = 0;
  if (!available_ || dev == nullptr || api_->max_clock_info == nullptr ||
      api_->max_clock_info(dev, kClockSm, &mhz) != kSuccess) {
    return std::nullopt;
  }
  return mhz;
}

std::optional<unsigned> Nvml::max_memory_clock_mhz(void* dev) const {
  unsigned mhz = 0;
  if (!available_ || dev == nullptr || api_->max_clock_info == nullptr ||
      api_->max_clock_info(dev, kClockMem, &mhz) != kSuccess) {
    return std::nullopt;
  }
  return mhz;
}

std::optional<double> Nvml::power_limit_w(void* dev) const {
  unsigned mw = 0;
  if (!available_ || dev == nullptr || api_->enforced_power_limit == nullptr ||
      api_->enforced_power_limit(dev, &mw) != kSuccess) {
    return std::nullopt;
  }
  return static_cast<double>(mw) / 1000.0;
}

std::optional<std::uint64_t> Nvml::clock_event_reasons(void* dev) const {
  unsigned long long r = 0;
  if (!available_ || dev == nullptr || api_->clock_event_reasons == nullptr ||
      api_->clock_event_reasons(dev, &r) != kSuccess) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(r);
}

std::string Nvml::driver_version() const {
  char buf[96] = {};
  if (!available_ || api_->driver_version == nullptr || api_->driver_version(buf, sizeof buf) != kSuccess) return "";
  return buf;
}

std::optional<std::vector<Nvml::NvLinkEnd>> Nvml::nvlinks(void* dev) const {
  if (!available_ || dev == nullptr || api_->nvlink_state == nullptr || api_->nvlink_remote_pci == nullptr) {
    return std::nullopt;
  }
  std::vector<NvLinkEnd> ends;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    int active = 0;
    const nvmlReturn_t r = api_->nvlink_state(dev, link, &active);
    if (r == kErrorInvalidArgument || r == kErrorNotSupported) break;  // past the last link, or no NVLink
    if (r != kSuccess || active == 0) continue;
    nvmlPciInfo_t pci{};
    if (api_->nvlink_remote_pci(dev, link, &pci) != kSuccess) continue;
    NvLinkEnd end;
    end.remote = NvmlPci{pci.domain, pci.bus, pci.device};
    int type = -1;
    if (api_->nvlink_remote_type != nullptr && api_->nvlink_remote_type(dev, link, &type) == kSuccess) {
      end.is_switch = type == kNvLinkDeviceTypeSwitch;
    }
    ends.push_back(end);
  }
  return ends;
}

}  // namespace cs::probe
