// The hardware catalog: GPUs, NVLink generations, NICs and the per-link-class network model,
// read from configs/hardware/*.json. The files are compiled into the binary, so clustersim needs
// no data directory at run time; every value in them cites its public source.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/units.h"

namespace cs::topo {

// Achieved fractions of peak for the roofline compute model (sim/compute), per GPU model.
struct ComputeEfficiency {
  double gemm = 0;          // of the tensor-core peak, large matrix multiplies
  double attention = 0;     // of the tensor-core peak, fused attention
  double memory = 0;        // of HBM bandwidth, memory-bound kernels
  Duration kernel_launch{0};  // fixed cost per compute op (launch and scheduling gap)
  // Compute runs this many times slower while the GPU also runs communication kernels (NCCL
  // takes SMs and HBM bandwidth): 1 = no interference.
  double overlap_slowdown = 1;
};

struct GpuSpec {
  std::string name;                      // "H100-SXM"
  std::map<std::string, FlopRate> peak;  // dense tensor-core peak by dtype: "bf16", "fp16", "fp8", "tf32", "fp32", "fp64"
  Bytes hbm_capacity{0};
  Bandwidth hbm_bandwidth{0};
  std::string nvlink;                    // NVLink generation name, "" when the GPU has none
  Bandwidth pcie_bandwidth{0};           // host link, per direction
  double tdp_watts = 0;
  ComputeEfficiency efficiency;
};

struct NvlinkSpec {
  std::string name;               // "NVLink4"
  Bandwidth per_gpu_bandwidth{0}; // per direction, all links of one GPU together
  int links_per_gpu = 0;
  // In-switch reduction (NVLS) throughput of the node's NVSwitch fabric per attached GPU, in
  // bytes of input reduced per second; zero when the switch generation cannot reduce.
  Bandwidth switch_reduction_per_gpu{0};
};

struct NicSpec {
  std::string name;         // "NDR-400G"
  Bandwidth bandwidth{0};   // per direction
  Duration latency{0};      // one NIC traversal
};

// The link-class model: one protocol efficiency factor and one per-step software latency per
// class of link (see docs/network-model.md).
enum class LinkClass : std::uint8_t { kNvlink = 0, kPcie = 1, kNetwork = 2 };
inline constexpr int kLinkClassCount = 3;
const char* to_string(LinkClass c);

struct LinkClassParams {
  double efficiency = 1.0;     // achievable fraction of line rate (protocol overhead)
  Duration step_latency{0};    // latency of one algorithm step over this class, Simple protocol
  Duration ll_step_latency{0}; // the same with the LL (low-latency) protocol
};

// Parameters of the collective model that belong to no link class.
struct CollectiveModelParams {
  Duration launch_latency{0};  // fixed cost of one collective (kernel launch, NCCL setup)
  double ll_wire_factor = 2.0; // LL puts this many wire bytes per data byte (8-byte lines, 4 of data)
};

class Catalog {
 public:
  // The catalog compiled into the binary.
  static const Catalog& builtin();
  // Parses catalog documents (used by builtin() and by tests). Errors are ConfigErrors.
  static Catalog from_documents(const std::vector<std::pair<std::string, std::string>>& name_and_text);

  const GpuSpec& gpu(const std::string& name, const std::string& file, const std::string& path) const;
  const NvlinkSpec& nvlink(const std::string& name, const std::string& file, const std::string& path) const;
  const NicSpec& nic(const std::string& name, const std::string& file, const std::string& path) const;
  const LinkClassParams& link_class(LinkClass c) const { return link_classes_[static_cast<int>(c)]; }
  const CollectiveModelParams& collective_model() const { return collective_model_; }

  const std::map<std::string, GpuSpec>& gpus() const { return gpus_; }
  const std::map<std::string, NvlinkSpec>& nvlinks() const { return nvlinks_; }
  const std::map<std::string, NicSpec>& nics() const { return nics_; }

 private:
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, NvlinkSpec> nvlinks_;
  std::map<std::string, NicSpec> nics_;
  LinkClassParams link_classes_[kLinkClassCount];
  CollectiveModelParams collective_model_;
};

}  // namespace cs::topo
