#include "topology/cluster_builder.h"

#include <map>
#include <memory>
#include <utility>

#include "core/errors.h"

namespace cs::topo {
namespace {

constexpr std::uint32_t kNone = UINT32_MAX;

// The rows of both directions by one counting sort of the links over each end: out-rows by
// src, in-rows by dst. Links are placed in id order, so each row keeps the order they were added.
// Two passes over the links (count, then place), each feeding both directions.
void compress(std::size_t vertices, std::span<const LinkInfo> links, Adjacency& out, Adjacency& in) {
  out.begin.assign(vertices + 1, 0);
  in.begin.assign(vertices + 1, 0);
  for (const LinkInfo& l : links) {
    ++out.begin[l.src.value + 1];
    ++in.begin[l.dst.value + 1];
  }
  for (std::size_t v = 0; v < vertices; ++v) {
    out.begin[v + 1] += out.begin[v];
    in.begin[v + 1] += in.begin[v];
  }
  for (Adjacency* a : {&out, &in}) {
    a->node.resize(links.size());
    a->link.resize(links.size());
  }
  std::vector<std::uint32_t> next_out(out.begin.begin(), out.begin.end() - 1);
  std::vector<std::uint32_t> next_in(in.begin.begin(), in.begin.end() - 1);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const LinkInfo& l = links[i];
    const LinkId id{static_cast<std::uint32_t>(i)};
    const std::uint32_t o = next_out[l.src.value]++, k = next_in[l.dst.value]++;
    out.node[o] = l.dst.value;
    out.link[o] = id;
    in.node[k] = l.src.value;
    in.link[k] = id;
  }
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
  compress(c.nodes_.size(), c.links_, c.out_, c.in_);
  // The links' distinct (latency, class) pairs, numbered by first link (LinkTiming).
  std::map<std::pair<std::int64_t, hw::LinkClass>, std::uint32_t> numbers;
  c.timing_of_.reserve(c.links_.size());
  for (const LinkInfo& link : c.links_) {
    const auto [at, fresh] = numbers.try_emplace({link.latency.count(), link.link_class},
                                                 static_cast<std::uint32_t>(c.timings_.size()));
    if (fresh) c.timings_.push_back({link.latency, link.link_class});
    c.timing_of_.push_back(at->second);
  }
  return std::move(cluster_);
}

}  // namespace cs::topo
