// Server templates: the devices and cables inside one server.
//
//   nvswitch  DGX/HGX-style: GPUs g0..g(n-1), each joined by one cable to one logical NVSwitch
//             vertex "<server>/nvswitch" (class nvlink, tier 0) with the NVLink generation's
//             per-GPU bandwidth per direction. The vertex's reduction_bandwidth is
//             n x switch_reduction_per_gpu (0 when the generation cannot reduce). PCIe as below.
//   pcie      no NVLink: GPUs reach each other through PCIe switches and the host.
//   mesh      no switch: GPUs joined point to point (DGX-1's hybrid cube-mesh of V100, an MI300X
//             platform's Infinity Fabric). Each pair {a, b} of the group's mesh list gets one cable
//             (class nvlink, tier 0) of  links x (per_gpu_bandwidth / links_per_gpu)  per direction:
//             a pair joined by m links is one cable of m times a link's rate, as NCCL's topology
//             merges the links between two GPUs into one (src/graph/topo.cc). A GPU's links add up
//             to at most links_per_gpu. PCIe as below.
//   single    one GPU and at most one NIC, cabled directly (class pcie); no switch, no host.
//
// PCIe (nvswitch, mesh and pcie templates): GPU i attaches to PCIe switch "<server>/pcie<j>" with
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

enum class ServerTemplate : std::uint8_t { kNvswitch, kPcie, kSingle, kMesh };
inline constexpr EnumName<ServerTemplate> kServerTemplateNames[] = {
    {ServerTemplate::kNvswitch, "nvswitch"}, {ServerTemplate::kPcie, "pcie"}, {ServerTemplate::kSingle, "single"},
    {ServerTemplate::kMesh, "mesh"}};

// One GPU pair of a mesh server: GPUs a and b (local indices) joined by `links` links.
struct MeshPair {
  int a = 0, b = 0;
  int links = 1;
  std::string origin;  // JSON path of the entry ("/servers/0/mesh/3"), or of the named layout
  bool listed = false; // origin is a list entry (errors then name its key: ".../gpus/1")
};

// The named mesh layouts a cluster file may give instead of a list of pairs.
//   full                   every pair of GPUs joined by one link (MI300X platform: 8 GPUs, 7
//                          links each)
//   dgx1-hybrid-cube-mesh  the DGX-1's 8 V100 (docs/cluster-format.md has the table and its
//                          sources): two fully connected quads {0..3}, {4..7} and the cross
//                          pairs i, i+4; the pairs 0-3, 1-2, 2-3, 0-4, 1-5, 4-7, 5-6, 6-7 have
//                          two links, the other 8 pairs one: 24 links, 6 per GPU
// Errors name `file` and `path` (the "mesh" key).
std::vector<MeshPair> named_mesh(const std::string& name, int gpus, const std::string& file,
                                 const std::string& path);
inline constexpr const char* kMeshLayoutNames[] = {"full", "dgx1-hybrid-cube-mesh"};
inline const char* to_string(ServerTemplate t) { return enum_name(kServerTemplateNames, t); }

// One group of identical servers, typed. The loader fills it from "/servers/<i>"; C++ callers
// may fill it directly and call validate_server_group before build_server.
struct ServerGroupSpec {
  std::string name = "node";  // name prefix: letters, digits, '_', '-'; not ending in a digit
  ServerTemplate kind = ServerTemplate::kNvswitch;
  int count = 1;
  hw::GpuSpec gpu;
  int gpus = 8;
  std::optional<hw::NvlinkSpec> nvlink;  // nvswitch and mesh templates (required there)
  std::vector<MeshPair> mesh;            // mesh template only: the GPU pairs and their links
  std::optional<hw::NicSpec> nic;        // required when nics > 0
  int nics = 0;
  int pcie_switches = 1;             // nvswitch and pcie templates
  Bandwidth pcie_bandwidth{0};       // per direction; the GPU's host link
  Duration nvlink_latency{0};        // GPU-NVSwitch and GPU-GPU (mesh) cables
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

// Cross-field checks of one group (template-specific counts, NVLink present for nvswitch and
// mesh, positive bandwidths; for mesh: pairs of distinct GPUs in range, each pair once, 1 or
// more links, at most links_per_gpu links per GPU, errors at the pair's origin). Throws ConfigError naming `file` and the offending key under
// spec.origin ("/servers/0/gpus").
void validate_server_group(const ServerGroupSpec& spec, const std::string& file);

// Adds server `server_index` of the group: devices and intra-server cables. The spec must be
// valid. Throws TopologyError (from ClusterBuilder) if a generated name is already taken.
ServerDevices build_server(ClusterBuilder& builder, const ServerGroupSpec& spec, int server_index);

// Devices and cables one server of the group adds (for sizing and tests).
std::size_t server_node_count(const ServerGroupSpec& spec);
std::size_t server_cable_count(const ServerGroupSpec& spec);

}  // namespace cs::topo
