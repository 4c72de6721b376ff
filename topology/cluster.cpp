#include "topology/cluster.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "core/errors.h"

namespace cs::topo {

bool is_switch(NodeKind k) {
  return k == NodeKind::kNvSwitch || k == NodeKind::kPcieSwitch || k == NodeKind::kLeafSwitch ||
         k == NodeKind::kSpineSwitch || k == NodeKind::kCoreSwitch;
}

Cluster::Cluster(std::string name) : name_(std::move(name)) {}

std::optional<NodeId> Cluster::find_node(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<LinkId> Cluster::find_link(NodeId src, NodeId dst) const {
  const std::span<const LinkId> links = out_links(src);
  const std::uint32_t first = out_.begin[src.value];
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (out_.node[first + i] == dst.value) return links[i];
  }
  return std::nullopt;
}

std::span<const LinkId> Cluster::row(const Adjacency& a, NodeId id) const {
  if (id.value >= nodes_.size()) throw std::out_of_range("Cluster: unknown node " + std::to_string(id.value));
  return {a.link.data() + a.begin[id.value], a.link.data() + a.begin[id.value + 1]};
}

const hw::GpuSpec& Cluster::gpu_spec(NodeId gpu) const {
  const hw::GpuSpec* s = gpu_specs_.at(gpu.value);
  if (!s) throw InternalError("gpu_spec: no catalog entry for " + node(gpu).name);
  return *s;
}

}  // namespace cs::topo
