#include "topology/cluster_builder.h"

#include "core/errors.h"

namespace cs::topo {
namespace {

constexpr std::uint32_t kNone = UINT32_MAX;

// Compressed sparse rows of one direction by a counting sort of the links over their `from`
// end; links are visited in id order, so each row keeps the order they were added.
Adjacency compress(std::size_t vertices, std::span<const LinkInfo> links, bool out) {
  Adjacency a;
  a.begin.assign(vertices + 1, 0);
  for (const LinkInfo& l : links) ++a.begin[(out ? l.src : l.dst).value + 1];
  for (std::size_t v = 0; v < vertices; ++v) a.begin[v + 1] += a.begin[v];
  a.node.resize(links.size());
  a.link.resize(links.size());
  std::vector<std::uint32_t> next(a.begin.begin(), a.begin.end() - 1);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const LinkInfo& l = links[i];
    const std::uint32_t k = next[(out ? l.src : l.dst).value]++;
    a.node[k] = (out ? l.dst : l.src).value;
    a.link[k] = LinkId{static_cast<std::uint32_t>(i)};
  }
  return a;
}

}  // namespace

ClusterBuilder::ClusterBuilder(std::string name) : cluster_(std::move(name)) {}

NodeId ClusterBuilder::add_node(NodeInfo info) {
  Cluster& c = cluster_;
  const NodeId id{static_cast<std::uint32_t>(c.nodes_.size())};
  if (!c.by_name_.emplace(info.name, id).second) {
    throw TopologyError("", info.origin, "duplicate device name \"" + info.name + "\"");
  }
  if (info.kind == NodeKind::kGpu) c.gpus_.push_back(id);
  c.nodes_.push_back(std::move(info));
  c.gpu_specs_.push_back(nullptr);
  head_.push_back(kNone);
  return id;
}

LinkId ClusterBuilder::add_link(NodeId src, NodeId dst, Bandwidth bw, Duration latency, hw::LinkClass cls,
                                int tier) {
  Cluster& c = cluster_;
  if (src.value >= c.nodes_.size() || dst.value >= c.nodes_.size()) {
    throw InternalError("add_link: unknown endpoint");
  }
  if (src == dst) throw TopologyError("", c.nodes_[src.value].origin, "a link from a device to itself");
  const LinkId id{static_cast<std::uint32_t>(c.links_.size())};
  LinkInfo info;
  info.src = src;
  info.dst = dst;
  info.bandwidth = bw;
  info.latency = latency;
  info.link_class = cls;
  info.tier = static_cast<std::int8_t>(tier);
  c.links_.push_back(info);
  next_.push_back(head_[src.value]);
  head_[src.value] = id.value;
  return id;
}

std::pair<LinkId, LinkId> ClusterBuilder::add_cable(NodeId a, NodeId b, Bandwidth bw, Duration latency,
                                                    hw::LinkClass cls, int tier) {
  const LinkId ab = add_link(a, b, bw, latency, cls, tier);
  const LinkId ba = add_link(b, a, bw, latency, cls, tier);
  cluster_.links_[ab.value].reverse = ba;
  cluster_.links_[ba.value].reverse = ab;
  return {ab, ba};
}

void ClusterBuilder::set_link_bandwidth(LinkId id, Bandwidth bw) { cluster_.links_.at(id.value).bandwidth = bw; }
void ClusterBuilder::set_link_latency(LinkId id, Duration latency) {
  cluster_.links_.at(id.value).latency = latency;
}

void ClusterBuilder::set_gpu_spec(NodeId gpu, const hw::GpuSpec& spec) {
  Cluster& c = cluster_;
  if (c.nodes_.at(gpu.value).kind != NodeKind::kGpu) throw InternalError("set_gpu_spec: not a GPU");
  // Specs are shared by name: most clusters have one or two GPU models.
  for (const auto& owned : c.owned_specs_) {
    if (owned->name == spec.name) {
      c.gpu_specs_[gpu.value] = owned.get();
      return;
    }
  }
  c.owned_specs_.push_back(std::make_unique<hw::GpuSpec>(spec));
  c.gpu_specs_[gpu.value] = c.owned_specs_.back().get();
}

std::optional<LinkId> ClusterBuilder::find_link(NodeId src, NodeId dst) const {
  // The chain runs newest first: the last match is the first link added.
  std::optional<LinkId> first;
  for (std::uint32_t l = head_.at(src.value); l != kNone; l = next_[l]) {
    if (cluster_.links_[l].dst == dst) first = LinkId{l};
  }
  return first;
}

Cluster ClusterBuilder::build() && {
  Cluster& c = cluster_;
  head_ = {};
  next_ = {};
  c.out_ = compress(c.nodes_.size(), c.links_, /*out=*/true);
  c.in_ = compress(c.nodes_.size(), c.links_, /*out=*/false);
  return std::move(cluster_);
}

}  // namespace cs::topo
