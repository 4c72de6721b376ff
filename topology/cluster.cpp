#include "topology/cluster.h"

#include "core/errors.h"
#include "topology/cluster_graph.h"

namespace cs::topo {

bool is_switch(NodeKind k) {
  return k == NodeKind::kNvSwitch || k == NodeKind::kPcieSwitch || k == NodeKind::kLeafSwitch ||
         k == NodeKind::kSpineSwitch || k == NodeKind::kCoreSwitch;
}

Cluster::Cluster(std::string name) : impl_(std::make_unique<Impl>()) { impl_->name = std::move(name); }
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

NodeId Cluster::add_node(NodeInfo info) {
  Impl& m = *impl_;
  const NodeId id{static_cast<std::uint32_t>(m.nodes.size())};
  if (!m.by_name.emplace(info.name, id).second) {
    throw TopologyError("", info.origin, "duplicate device name \"" + info.name + "\"");
  }
  boost::add_vertex(VertexProps{id}, m.graph);
  if (info.kind == NodeKind::kGpu) m.gpus.push_back(id);
  m.nodes.push_back(std::move(info));
  m.out.emplace_back();
  m.in.emplace_back();
  m.gpu_specs.push_back(nullptr);
  return id;
}

LinkId Cluster::add_link(NodeId src, NodeId dst, Bandwidth bw, Duration latency, hw::LinkClass cls,
                         int tier) {
  Impl& m = *impl_;
  if (src.value >= m.nodes.size() || dst.value >= m.nodes.size()) {
    throw InternalError("add_link: unknown endpoint");
  }
  if (src == dst) throw TopologyError("", m.nodes[src.value].origin, "a link from a device to itself");
  const LinkId id{static_cast<std::uint32_t>(m.links.size())};
  LinkInfo info;
  info.src = src;
  info.dst = dst;
  info.bandwidth = bw;
  info.latency = latency;
  info.link_class = cls;
  info.tier = static_cast<std::int8_t>(tier);
  m.links.push_back(info);
  boost::add_edge(src.value, dst.value, EdgeProps{id}, m.graph);
  m.out[src.value].push_back(id);
  m.in[dst.value].push_back(id);
  return id;
}

std::pair<LinkId, LinkId> Cluster::add_cable(NodeId a, NodeId b, Bandwidth bw, Duration latency,
                                             hw::LinkClass cls, int tier) {
  const LinkId ab = add_link(a, b, bw, latency, cls, tier);
  const LinkId ba = add_link(b, a, bw, latency, cls, tier);
  impl_->links[ab.value].reverse = ba;
  impl_->links[ba.value].reverse = ab;
  return {ab, ba};
}

void Cluster::set_link_bandwidth(LinkId id, Bandwidth bw) { impl_->links.at(id.value).bandwidth = bw; }
void Cluster::set_link_latency(LinkId id, Duration latency) {
  impl_->links.at(id.value).latency = latency;
}
void Cluster::set_gpu_spec(NodeId gpu, const hw::GpuSpec& spec) {
  Impl& m = *impl_;
  if (m.nodes.at(gpu.value).kind != NodeKind::kGpu) throw InternalError("set_gpu_spec: not a GPU");
  // Specs are shared by name: most clusters have one or two GPU models.
  for (const auto& owned : m.owned_specs) {
    if (owned->name == spec.name) {
      m.gpu_specs[gpu.value] = owned.get();
      return;
    }
  }
  m.owned_specs.push_back(std::make_unique<hw::GpuSpec>(spec));
  m.gpu_specs[gpu.value] = m.owned_specs.back().get();
}

const std::string& Cluster::name() const { return impl_->name; }
std::size_t Cluster::node_count() const { return impl_->nodes.size(); }
std::size_t Cluster::link_count() const { return impl_->links.size(); }
const NodeInfo& Cluster::node(NodeId id) const { return impl_->nodes.at(id.value); }
const LinkInfo& Cluster::link(LinkId id) const { return impl_->links.at(id.value); }

std::optional<NodeId> Cluster::find_node(std::string_view name) const {
  auto it = impl_->by_name.find(std::string(name));
  if (it == impl_->by_name.end()) return std::nullopt;
  return it->second;
}

std::optional<LinkId> Cluster::find_link(NodeId src, NodeId dst) const {
  for (LinkId l : impl_->out.at(src.value)) {
    if (impl_->links[l.value].dst == dst) return l;
  }
  return std::nullopt;
}

std::span<const LinkId> Cluster::out_links(NodeId id) const { return impl_->out.at(id.value); }
std::span<const LinkId> Cluster::in_links(NodeId id) const { return impl_->in.at(id.value); }
std::span<const NodeId> Cluster::gpus() const { return impl_->gpus; }

const hw::GpuSpec& Cluster::gpu_spec(NodeId gpu) const {
  const hw::GpuSpec* s = impl_->gpu_specs.at(gpu.value);
  if (!s) throw InternalError("gpu_spec: no catalog entry for " + node(gpu).name);
  return *s;
}

}  // namespace cs::topo
