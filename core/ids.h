// Strong ids for the cluster graph's devices and links. A NodeId and a LinkId never mix, and
// neither is an int. They are named in the namespace of the graph that defines them (topo), and
// live in core because layers below the platform index by them too: the flow network's links
// are the cluster's links (plus virtual ones after them) without the network knowing what a link
// connects.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace cs::topo {

struct NodeId {
  std::uint32_t value = UINT32_MAX;
  constexpr bool valid() const { return value != UINT32_MAX; }
  friend constexpr auto operator<=>(NodeId, NodeId) = default;
};

struct LinkId {
  std::uint32_t value = UINT32_MAX;
  constexpr bool valid() const { return value != UINT32_MAX; }
  friend constexpr auto operator<=>(LinkId, LinkId) = default;
};

}  // namespace cs::topo

template <>
struct std::hash<cs::topo::NodeId> {
  std::size_t operator()(cs::topo::NodeId id) const noexcept { return id.value; }
};
template <>
struct std::hash<cs::topo::LinkId> {
  std::size_t operator()(cs::topo::LinkId id) const noexcept { return id.value; }
};
