// The hardware catalog: GPUs, NVLink generations, NICs, network switches and the wire latency of
// each class of link, read from configs/hardware/*.json. The files are compiled into the binary, so clustersim
// needs no data directory at run time; every value in them cites its public source
// (core/sourced_value.h, docs/hardware-catalog.md). What NCCL's protocols add on top of the
// wires (efficiency, step latencies) is the collective model's (sim/collectives/protocol_params.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/sourced_value.h"
#include "core/units.h"
#include "hardware/link_class.h"

namespace cs::hw {

// The roofline compute model's parameters for one GPU model (sim/compute): achieved fractions of
// peak, the fixed cost of a kernel, and the slowdown of compute beside communication.
struct RooflineParams {
  double gemm = 0;          // of the GEMM shape model's rate (MAMF x wave efficiency) sustained in training
  double attention = 0;     // of the tensor-core peak, fused attention
  double memory = 0;        // of HBM bandwidth, memory-bound kernels
  Duration kernel_launch{0};  // fixed cost per compute op (launch and scheduling gap)
  // Compute runs this many times slower while the GPU also runs communication kernels (NCCL
  // takes SMs and HBM bandwidth): 1 = no interference.
  double overlap_slowdown = 1;
};

// What the GEMM shape model (sim/compute/gemm_model.h) needs to know of a GPU: how many SMs share
// the output tiles, the tile its BLAS library computes per SM for large matrices, and the maximum
// achievable matmul rate (MAMF, mamf-finder's best over a sweep of shapes) per dtype.
struct GemmTile {
  int m = 0;  // rows of the output per tile
  int n = 0;  // columns
};
struct GemmStructure {
  int sms = 0;                                 // SMs (AMD: compute units)
  GemmTile tile;                               // "256x128"
  std::map<std::string, FlopRate> mamf;        // by dtype, like peak
  // The shape (m, n, k) the published MAMF was measured at; all zero when unknown (the rate is then
  // taken as the one of full waves).
  std::array<std::int64_t, 3> mamf_shape{};
};

struct GpuSpec {
  std::string name;                      // "H100-SXM"
  // Dense tensor-core peak by dtype: "bf16", "fp16", "fp8", "fp4", "tf32", "fp32", "fp64". Always
  // "bf16" or "fp16" (V100 has no BF16); a run in a precision the GPU lacks is a ConfigError.
  std::map<std::string, FlopRate> peak;
  Bytes hbm_capacity{0};
  Bandwidth hbm_bandwidth{0};
  std::string nvlink;                    // NVLink generation name, "" when the GPU has none (H100 PCIe, MI300X)
  Bandwidth pcie_bandwidth{0};           // host link, per direction
  double tdp_watts = 0;
  RooflineParams roofline;               // "efficiency" in configs/hardware/gpus.json
  GemmStructure gemm;                    // "gemm" in configs/hardware/gpus.json
};

struct NvlinkSpec {
  std::string name;               // "NVLink4"
  Bandwidth per_gpu_bandwidth{0}; // per direction, all links of one GPU together
  int links_per_gpu = 0;
  // In-switch reduction (NVLS) throughput of the node's NVSwitch fabric per attached GPU, in
  // bytes of input reduced per second; zero when the switch generation cannot reduce.
  Bandwidth switch_reduction_per_gpu{0};
};

// The link layer a NIC's port runs. It sets the fabric's routing unless the cluster names one:
// NCCL's IB transport asks for adaptive routing on an InfiniBand port and not on RoCE
// (src/transport/net_ib.cc: `ar = link_layer == IBV_LINK_LAYER_INFINIBAND`, overridable with
// NCCL_IB_ADAPTIVE_ROUTING), and NVIDIA's subnet manager enables AR by default (InfiniBand
// Cluster Bring-up Procedure, "Adaptive Routing": AR on in opensm.conf, routing engine ar_updn).
enum class LinkLayer : std::uint8_t { kInfiniBand, kEthernet, kOmniPath };
inline constexpr EnumName<LinkLayer> kLinkLayerNames[] = {
    {LinkLayer::kInfiniBand, "infiniband"}, {LinkLayer::kEthernet, "ethernet"}, {LinkLayer::kOmniPath, "omni_path"}};

// A network adapter. `bandwidth` is the port's data rate after line coding and FEC (what the
// standard names it: NDR 400 Gb/s, 400GbE); what of it carries payload depends on the packets of
// the fabric's technology: `packet_payload` bytes of data per packet (the MTU the transport uses)
// and `packet_overhead` bytes of headers, trailers and per-packet framing on the wire
// (docs/network-model.md, "Per-NIC achievable bandwidth"). Both are zero when the catalog has no
// packet format for the NIC; the collective model then falls back to its network class
// efficiency.
struct NicSpec {
  std::string name;         // "NDR-400G"
  Bandwidth bandwidth{0};   // per direction, after line coding
  Duration latency{0};      // one NIC traversal
  Bytes packet_payload{0};  // data bytes per packet
  Bytes packet_overhead{0}; // wire bytes per packet beyond the payload
  LinkLayer link_layer = LinkLayer::kEthernet;  // the catalog's entries all name theirs
  bool has_packet_format() const { return packet_payload.value() > 0; }
  // The fraction of `bandwidth` that carries payload, payload / (payload + overhead), for a
  // stream of full packets; 0 without a packet format.
  double packet_efficiency() const {
    if (!has_packet_format()) return 0;
    return static_cast<double>(packet_payload.value()) /
           static_cast<double>(packet_payload.value() + packet_overhead.value());
  }
};

// One port configuration of a switch model: `ports` ports of `speed` each (per direction).
struct SwitchPorts {
  Bandwidth speed{0};
  int ports = 0;
};

// A network switch model (leaf, spine or core) and the port configurations it offers, one at a
// time (split or breakout ports): Quantum-2 QM9700 is 64 x 400 Gb/s or 128 x 200 Gb/s. The radix
// per port speed is what the cluster loader checks a switch's cables against; a bill of materials
// or a cost model would pick switches from it too.
struct SwitchSpec {
  std::string name;         // "Quantum-2-QM9700"
  std::string description;  // vendor, product, technology
  std::vector<SwitchPorts> radix;  // fastest first, one entry per port speed
  // The most ports of `speed` or faster that one configuration offers; 0 when none is that fast.
  int max_ports_at(Bandwidth speed) const;
};

class Catalog {
 public:
  // The catalog compiled into the binary.
  static const Catalog& builtin();
  // Parses catalog documents (used by builtin() and by tests). Errors are ConfigErrors.
  static Catalog from_documents(const std::vector<std::pair<std::string, std::string>>& name_and_text);
  // The built-in catalog with "/json/pointer=value" overrides applied, each to the document that
  // holds the pointer's parent ("/gpus/H100-SXM/efficiency/gemm/value=0.8"); the values they set
  // are then the user's (SourcedFact kind "user"). A pointer no document holds is a ConfigError
  // at `file` and `where` (the experiment's JSON path, or the option).
  static Catalog builtin_with(const std::vector<std::string>& overrides, const std::string& file, const std::string& where);

  const GpuSpec& gpu(const std::string& name, const std::string& file, const std::string& path) const;
  const NvlinkSpec& nvlink(const std::string& name, const std::string& file, const std::string& path) const;
  const NicSpec& nic(const std::string& name, const std::string& file, const std::string& path) const;
  // The wire latency of one traversal of a link of this class, given to links that cluster files
  // generate without one (for the network: one switch hop). Zero when no document sets it.
  Duration wire_latency(LinkClass c) const { return wire_latency_[static_cast<int>(c)]; }

  // What a sourced value of the catalog says of itself, by its JSON path in its document
  // ("/gpus/H100-SXM/efficiency/gemm"); null when the catalog has no such value.
  const SourcedFact* fact(const std::string& path) const;

  const std::map<std::string, GpuSpec>& gpus() const { return gpus_; }
  const std::map<std::string, NvlinkSpec>& nvlinks() const { return nvlinks_; }
  const std::map<std::string, NicSpec>& nics() const { return nics_; }
  const std::map<std::string, SwitchSpec>& switches() const { return switches_; }

 private:
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, NvlinkSpec> nvlinks_;
  std::map<std::string, NicSpec> nics_;
  std::map<std::string, SwitchSpec> switches_;
  std::array<Duration, kLinkClassCount> wire_latency_{};
  std::map<std::string, SourcedFact> facts_;  // by path
};

// The catalog files compiled into the binary, (name, text) in name order
// (generated by cmake/EmbedFiles.cmake from configs/hardware/*.json).
const std::vector<std::pair<std::string, std::string>>& builtin_catalog_documents();

}  // namespace cs::hw
