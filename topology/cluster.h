// The cluster: a directed graph of devices (GPUs, NICs, switches, hosts, storage) joined by links
// with a bandwidth and a latency. Immutable: topo::ClusterBuilder (topology/cluster_builder.h)
// adds the devices and links, and its build() computes the adjacency once; a Cluster has only
// const queries. Callers see NodeId, LinkId and plain structs.
//
// A cable is two directed links, one per direction, each with its own bandwidth.
// GPUs are numbered in rank order: servers in file order, GPUs in server order.
//
// The graph is one representation: the links in id order (LinkInfo) and, per direction, the
// adjacency in compressed sparse rows (Adjacency), each vertex's links in the order they were
// added. out_links and in_links are spans into it, and the router, the reachability check and
// the GPU diameter search all walk these arrays. Chosen by measurement on 32,768 GPUs
// (bench/bench_graph.cpp; docs/performance.md, "The cluster graph") over Boost.Graph's
// bidirectional compressed_sparse_row_graph: the two take the same memory (7.2 MiB), build in
// the same few milliseconds and search at the same speed, but Boost's in-edge rows hold forward
// edge positions, not LinkIds (in_links as a span would need 1.6 MiB more), its types would have
// to appear in this header, which the whole simulator includes, and its breadth_first_search is
// slower than the plain loop.
// Boost.Graph stays in topology/properties.cpp, for push-relabel max flow on its own flow graph.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
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

// How the fabric's switches spread a flow over equal-cost shortest paths (the cluster file's
// "fabric": {"routing": ...}; docs/network-model.md, "Routing: static ECMP and adaptive routing").
//   ecmp      static hash per connection: one path per flow label (topo::Router); the Ethernet /
//             RoCE default. Flows that hash onto one link collide.
//   adaptive  per-packet adaptive routing (InfiniBand AR, Spectrum-X): a flow's bytes split evenly
//             over the next hops of every switch (topo::adaptive_spread).
enum class Routing : std::uint8_t { kEcmp, kAdaptive };
inline constexpr EnumName<Routing> kRoutingNames[] = {{Routing::kEcmp, "ecmp"},
                                                      {Routing::kAdaptive, "adaptive"}};
inline const char* to_string(Routing r) { return enum_name(kRoutingNames, r); }

struct NodeInfo {
  std::string name;          // unique: "node3/gpu5", "rail2/leaf0", "spine7"
  NodeKind kind = NodeKind::kGpu;
  std::int32_t server = -1;  // index of the server the device is in; -1 for fabric devices
  std::int32_t local = -1;   // index within the server (GPU i, NIC i: the rail) or -1
  std::string model;         // catalog name ("H100-SXM", "NDR-400G") or ""
  std::string origin;        // JSON path of the config entry that created it, for errors
  // NVSwitch: in-switch reduction (NVLS) throughput of the whole switch, bytes of input per
  // second; 0 = none. The collective model splits it equally over the GPUs cabled to the switch.
  // Network switch: positive when it reduces in-network (SHARP, fabric in_network_reduction);
  // the collnet algorithm takes its aggregation at the ports' line rate.
  Bandwidth reduction_bandwidth{0};
  // NIC only: the fraction of its line rate that carries payload, from its catalog packet format
  // (hw::NicSpec::packet_efficiency); 0 when unknown. The collective model's network layout uses
  // it for the NIC's fabric links (docs/network-model.md, "Per-NIC achievable bandwidth").
  double packet_efficiency = 0;
};

struct LinkInfo {
  NodeId src, dst;
  Bandwidth bandwidth{0};     // line rate of this direction
  Duration latency{0};        // propagation + switching of one traversal
  hw::LinkClass link_class = hw::LinkClass::kNetwork;
  std::int8_t tier = 0;       // 0 inside a server; 1 endpoint-leaf; 2 leaf-spine; 3 spine-core
  LinkId reverse;             // the other direction of the cable, if any
};

// What a path's step latency reads of each of its links: its latency and class. A cluster has
// few distinct pairs (one per link type and tier), so Cluster keeps each pair once and a 4-byte
// index per link (link_timing): the collectives' preparation reads it for every link of millions
// of paths, where a LinkInfo (32 bytes) per link would not stay in cache on a large cluster.
struct LinkTiming {
  Duration latency{0};
  hw::LinkClass link_class = hw::LinkClass::kNetwork;
};

// Adjacency of one direction in compressed sparse rows: the links of vertex v are the slots k in
// [begin[v], begin[v + 1]), in the order they were added; link[k] is the link and node[k] its far
// end (the destination of an out-link, the source of an in-link). O(V + E) memory: 4 bytes per
// vertex and 8 per link.
struct Adjacency {
  std::vector<std::uint32_t> begin;  // vertex count + 1 offsets into node and link
  std::vector<std::uint32_t> node;   // far end of each slot (a NodeId's value)
  std::vector<LinkId> link;
};

class ClusterBuilder;

class Cluster {
 public:
  Cluster(Cluster&&) noexcept = default;
  Cluster& operator=(Cluster&&) noexcept = default;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const std::string& name() const { return name_; }
  std::size_t node_count() const { return nodes_.size(); }
  std::size_t link_count() const { return links_.size(); }
  const NodeInfo& node(NodeId id) const { return nodes_.at(id.value); }
  const LinkInfo& link(LinkId id) const { return links_.at(id.value); }
  // link(id)'s latency and class, from the compact table (LinkTiming).
  const LinkTiming& link_timing(LinkId id) const { return timings_[timing_of_.at(id.value)]; }
  // Where link_timing(id)'s index lies, for a caller that prefetches it (topo::Router's walk).
  const std::uint32_t* link_timing_slot(LinkId id) const { return timing_of_.data() + id.value; }
  std::optional<NodeId> find_node(std::string_view name) const;
  // The directed link src->dst, if any (the first one added). O(out-degree of src).
  std::optional<LinkId> find_link(NodeId src, NodeId dst) const;
  // A device's links in the order they were added: spans into out_adjacency().link and
  // in_adjacency().link.
  std::span<const LinkId> out_links(NodeId id) const { return row(out_, id); }
  std::span<const LinkId> in_links(NodeId id) const { return row(in_, id); }
  const Adjacency& out_adjacency() const { return out_; }
  const Adjacency& in_adjacency() const { return in_; }
  // GPUs in rank order.
  std::span<const NodeId> gpus() const { return gpus_; }
  const hw::GpuSpec& gpu_spec(NodeId gpu) const;
  // How the fabric spreads flows over equal-cost paths (ClusterBuilder::set_routing: the cluster
  // file's "routing", else adaptive where every server NIC runs InfiniBand and ECMP otherwise,
  // docs/cluster-format.md). The routes themselves are computed by the caller's choice of
  // topo::Router or topo::adaptive_spread; the cluster only records which the fabric has.
  Routing routing() const { return routing_; }
  // Whether routing() is the NICs' link layer's default rather than the file's choice.
  bool routing_by_link_layer() const { return routing_by_link_layer_; }

 private:
  friend class ClusterBuilder;
  explicit Cluster(std::string name);
  std::span<const LinkId> row(const Adjacency& a, NodeId id) const;

  std::string name_;
  std::vector<NodeInfo> nodes_;
  std::vector<LinkInfo> links_;
  std::vector<LinkTiming> timings_;        // each distinct (latency, class) once, by first link
  std::vector<std::uint32_t> timing_of_;  // per link: its entry in timings_ (build)
  Adjacency out_, in_;  // filled by ClusterBuilder::build
  std::vector<NodeId> gpus_;
  Routing routing_ = Routing::kEcmp;
  bool routing_by_link_layer_ = false;
  std::vector<const hw::GpuSpec*> gpu_specs_;  // per node; null except for GPUs
  std::vector<std::unique_ptr<hw::GpuSpec>> owned_specs_;
  std::unordered_map<std::string, NodeId> by_name_;
};

}  // namespace cs::topo
