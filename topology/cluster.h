// The cluster: a directed graph of devices (GPUs, NICs, switches, hosts, storage) joined by links
// with a bandwidth and a latency. Internally a Boost.Graph adjacency_list; Boost stays inside
// topology/ and callers see only NodeId, LinkId and plain structs.
//
// A cable is two directed links, one per direction, each with its own bandwidth.
// GPUs are numbered in rank order: servers in file order, GPUs in server order.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/ids.h"
#include "core/units.h"
#include "hardware/catalog.h"
#include "hardware/link_class.h"

namespace cs::topo {

enum class NodeKind : std::uint8_t {
  kGpu,
  kNic,
  kNvSwitch,
  kPcieSwitch,
  kLeafSwitch,
  kSpineSwitch,
  kCoreSwitch,
  kHost,
  kStorage,
};
inline constexpr int kNodeKindCount = 9;
inline constexpr EnumName<NodeKind> kNodeKindNames[] = {
    {NodeKind::kGpu, "gpu"},           {NodeKind::kNic, "nic"},
    {NodeKind::kNvSwitch, "nvswitch"}, {NodeKind::kPcieSwitch, "pcie_switch"},
    {NodeKind::kLeafSwitch, "leaf_switch"}, {NodeKind::kSpineSwitch, "spine_switch"},
    {NodeKind::kCoreSwitch, "core_switch"}, {NodeKind::kHost, "host"},
    {NodeKind::kStorage, "storage"}};
inline const char* to_string(NodeKind k) { return enum_name(kNodeKindNames, k); }
bool is_switch(NodeKind k);

struct NodeInfo {
  std::string name;          // unique: "node3/gpu5", "rail2/leaf0", "spine7"
  NodeKind kind = NodeKind::kGpu;
  std::int32_t server = -1;  // index of the server the device is in; -1 for fabric devices
  std::int32_t local = -1;   // index within the server (GPU i, NIC i: the rail) or -1
  std::string model;         // catalog name ("H100-SXM", "NDR-400G") or ""
  std::string origin;        // JSON path of the config entry that created it, for errors
  // NVSwitch only: in-switch reduction (NVLS) throughput, bytes of input per second; 0 = none.
  Bandwidth reduction_bandwidth{0};
};

struct LinkInfo {
  NodeId src, dst;
  Bandwidth bandwidth{0};     // line rate of this direction
  Duration latency{0};        // propagation + switching of one traversal
  hw::LinkClass link_class = hw::LinkClass::kNetwork;
  std::int8_t tier = 0;       // 0 inside a server; 1 endpoint-leaf; 2 leaf-spine; 3 spine-core
  LinkId reverse;             // the other direction of the cable, if any
};

class Cluster {
 public:
  explicit Cluster(std::string name = "cluster");
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // ---- building ----
  // Names must be unique (TopologyError naming info.origin otherwise).
  NodeId add_node(NodeInfo info);
  // One directed link.
  LinkId add_link(NodeId src, NodeId dst, Bandwidth bw, Duration latency, hw::LinkClass cls, int tier);
  // A cable: two directed links with the same parameters; returns {src->dst, dst->src}.
  std::pair<LinkId, LinkId> add_cable(NodeId a, NodeId b, Bandwidth bw, Duration latency,
                                      hw::LinkClass cls, int tier);
  void set_link_bandwidth(LinkId id, Bandwidth bw);
  void set_link_latency(LinkId id, Duration latency);
  // Records the GPU's catalog entry (GPUs only).
  void set_gpu_spec(NodeId gpu, const hw::GpuSpec& spec);

  // ---- queries ----
  const std::string& name() const;
  std::size_t node_count() const;
  std::size_t link_count() const;
  const NodeInfo& node(NodeId id) const;
  const LinkInfo& link(LinkId id) const;
  std::optional<NodeId> find_node(std::string_view name) const;
  // The directed link src->dst, if any (the first one added).
  std::optional<LinkId> find_link(NodeId src, NodeId dst) const;
  std::span<const LinkId> out_links(NodeId id) const;
  std::span<const LinkId> in_links(NodeId id) const;
  // GPUs in rank order.
  std::span<const NodeId> gpus() const;
  const hw::GpuSpec& gpu_spec(NodeId gpu) const;

  // The Boost.Graph view, for algorithms inside topology/ only (see cluster_graph.h).
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs::topo
