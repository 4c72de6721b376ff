// Server templates: the devices and cables inside one server.
//
//   nvswitch  DGX/HGX-style: GPUs g0..g(n-1), each joined by one cable to one logical NVSwitch
//             vertex "<server>/nvswitch" (class nvlink, tier 0) with the NVLink generation's
//             per-GPU bandwidth per direction. The vertex's reduction_bandwidth is
//             n x switch_reduction_per_gpu (0 when the generation cannot reduce). PCIe as below.
//   pcie      no NVLink: GPUs reach each other through PCIe switches and the host.
//   single    one GPU and at most one NIC, cabled directly (class pcie); no switch, no host.
//
// PCIe (nvswitch and pcie templates): GPU i attaches to PCIe switch "<server>/pcie<j>" with
// j = floor(i * P / n) (P switches, n GPUs); NIC m attaches to the PCIe switch of GPU
// floor(m * n / nics), so GPU i and NIC floor(i * nics / n) share a switch; every PCIe switch
// attaches to the host vertex "<server>/cpu". All these cables are class pcie, tier 0, with
// the group's PCIe bandwidth per direction (default: the GPU's). A NIC's PCIe cable also carries
// the NIC's own latency: latency = pcie latency + NIC latency, so a path pays it once per NIC.
//
// Names: server k (global index over all groups) is "<prefix><k>"; its devices are
// "<prefix><k>/gpu<i>", "/nic<m>", "/pcie<j>", "/nvswitch", "/cpu". NodeInfo::server = k,
// NodeInfo::local = the GPU or NIC index (a NIC's index is its rail), NodeInfo::origin = the
// group's JSON path. GPUs are added in index order, so ranks follow servers, then GPUs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/ids.h"
#include "core/units.h"
#include "hardware/catalog.h"
#include "topology/cluster.h"
#include "topology/cluster_builder.h"

namespace cs::topo {

enum class ServerTemplate : std::uint8_t { kNvswitch, kPcie, kSingle };
inline constexpr EnumName<ServerTemplate> kServerTemplateNames[] = {
    {ServerTemplate::kNvswitch, "nvswitch"}, {ServerTemplate::kPcie, "pcie"}, {ServerTemplate::kSingle, "single"}};
inline const char* to_string(ServerTemplate t) { return enum_name(kServerTemplateNames, t); }

// One group of identical servers, typed. The loader fills it from "/servers/<i>"; C++ callers
// may fill it directly and call validate_server_group before build_server.
struct ServerGroupSpec {
  std::string name = "node";  // name prefix: letters, digits, '_', '-'; not ending in a digit
  ServerTemplate kind = ServerTemplate::kNvswitch;
  int count = 1;
  hw::GpuSpec gpu;
  int gpus = 8;
  std::optional<hw::NvlinkSpec> nvlink;  // nvswitch template only (required there)
  std::optional<hw::NicSpec> nic;        // required when nics > 0
  int nics = 0;
  int pcie_switches = 1;             // nvswitch and pcie templates
  Bandwidth pcie_bandwidth{0};       // per direction; the GPU's host link
  Duration nvlink_latency{0};        // GPU-NVSwitch cables
  Duration pcie_latency{0};          // PCIe cables (a NIC's adds the NIC latency)
  std::string origin;                // JSON path of the group, "/servers/0"; errors name it
};

// The devices of one built server, for the fabric generators.
struct ServerDevices {
  int server = 0;              // global server index
  std::vector<NodeId> gpus;    // in local index order
  std::vector<NodeId> nics;    // nics[r] is the NIC of rail r
  Bandwidth nic_bandwidth{0};  // line rate of each NIC, per direction
};

// Cross-field checks of one group (template-specific counts, NVLink present for nvswitch,
// positive bandwidths). Throws ConfigError naming `file` and the offending key under
// spec.origin ("/servers/0/gpus").
void validate_server_group(const ServerGroupSpec& spec, const std::string& file);

// Adds server `server_index` of the group: devices and intra-server cables. The spec must be
// valid. Throws TopologyError (from ClusterBuilder) if a generated name is already taken.
ServerDevices build_server(ClusterBuilder& builder, const ServerGroupSpec& spec, int server_index);

// Devices and cables one server of the group adds (for sizing and tests).
std::size_t server_node_count(const ServerGroupSpec& spec);
std::size_t server_cable_count(const ServerGroupSpec& spec);

}  // namespace cs::topo
