// Builds a Cluster (topology/cluster.h): the only way to add devices and links, or to change a
// link or a GPU's catalog entry. The server templates, the fabric generators and the cluster
// loader build through it; build() then computes the adjacency once and hands over an immutable
// Cluster.
//
// Ids are given in call order: node i is the i-th add_node, link i the i-th directed link
// (add_cable adds src->dst, then dst->src). A vertex's links keep that order in the Cluster's
// adjacency, so routes and every output follow from the order of the calls alone.
//
// While building, the builder keeps one index beside the node and link lists: each node's
// out-links as a chain through the links (4 bytes per node and per link), so find_link costs
// O(out-degree) as on the Cluster. It is dropped by build().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/units.h"
#include "hardware/catalog.h"
#include "hardware/link_class.h"
#include "topology/cluster.h"

namespace cs::topo {

class ClusterBuilder {
 public:
  explicit ClusterBuilder(std::string name = "cluster");

  // Names must be unique (TopologyError naming info.origin otherwise).
  NodeId add_node(NodeInfo info);
  // One directed link.
  LinkId add_link(NodeId src, NodeId dst, Bandwidth bw, Duration latency, hw::LinkClass cls, int tier);
  // A cable: two directed links with the same parameters; returns {src->dst, dst->src}.
  std::pair<LinkId, LinkId> add_cable(NodeId a, NodeId b, Bandwidth bw, Duration latency,
                                      hw::LinkClass cls, int tier);
  void set_link_bandwidth(LinkId id, Bandwidth bw);
  void set_link_latency(LinkId id, Duration latency);
  // Records the GPU's catalog entry (GPUs only). Specs are shared by name.
  void set_gpu_spec(NodeId gpu, const hw::GpuSpec& spec);
  // The fabric's routing (Cluster::routing); ECMP by default. `by_link_layer`: the NICs' link
  // layer chose it, not the cluster file (Cluster::routing_by_link_layer).
  void set_routing(Routing routing, bool by_link_layer = false) {
    cluster_.routing_ = routing;
    cluster_.routing_by_link_layer_ = by_link_layer;
  }

  // What has been added so far.
  std::size_t node_count() const { return cluster_.node_count(); }
  std::size_t link_count() const { return cluster_.link_count(); }
  const NodeInfo& node(NodeId id) const { return cluster_.node(id); }
  const LinkInfo& link(LinkId id) const { return cluster_.link(id); }
  std::optional<NodeId> find_node(std::string_view name) const { return cluster_.find_node(name); }
  // The directed link src->dst, if any (the first one added).
  std::optional<LinkId> find_link(NodeId src, NodeId dst) const;
  std::span<const NodeId> gpus() const { return cluster_.gpus(); }

  // The immutable cluster, its adjacency computed in O(V + E). The builder is spent.
  Cluster build() &&;

 private:
  Cluster cluster_;  // nodes, links, GPUs and specs as added; adjacency empty until build()
  // Out-links of each node, newest first: head_[node] and then next_[link], kNone-terminated.
  std::vector<std::uint32_t> head_, next_;
};

}  // namespace cs::topo
