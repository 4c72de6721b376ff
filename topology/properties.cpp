#include "topology/properties.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <utility>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include "topology/gpu_diameter.h"

namespace cs::topo {
namespace {

std::int64_t to_bps(Bandwidth b) { return static_cast<std::int64_t>(std::llround(b.value())); }

// Switch level by kind: leaf 1, spine 2, core 3; 0 for anything else.
int switch_level(NodeKind k) {
  switch (k) {
    case NodeKind::kLeafSwitch:
      return 1;
    case NodeKind::kSpineSwitch:
      return 2;
    case NodeKind::kCoreSwitch:
      return 3;
    default:
      return 0;
  }
}

// Max flow from the first floor(G/2) GPUs to the rest, capacities = line rates (bytes/s,
// rounded to integers so the push-relabel arithmetic is exact).
Bandwidth rank_order_bisection(const Cluster& c) {
  const auto gpus = c.gpus();
  if (gpus.size() < 2) return Bandwidth{0};
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<
          boost::edge_capacity_t, std::int64_t,
          boost::property<boost::edge_residual_capacity_t, std::int64_t,
                          boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = c.node_count();
  FlowGraph g(n + 2);
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  auto add = [&](std::size_t u, std::size_t v, std::int64_t cap) {
    const auto e = boost::add_edge(u, v, g).first;
    const auto r = boost::add_edge(v, u, g).first;
    capacity[e] = cap;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };
  // Super edges that can never be the bottleneck: a first-half GPU can send no more than its
  // out-links carry, a second-half GPU receive no more than its in-links carry. (A single
  // "infinite" capacity would overflow push-relabel's initial excess at the source.)
  std::vector<std::int64_t> out_cap(n, 0), in_cap(n, 0);
  for (std::size_t i = 0; i < c.link_count(); ++i) {
    const LinkInfo& l = c.link(LinkId{static_cast<std::uint32_t>(i)});
    const std::int64_t cap = to_bps(l.bandwidth);
    add(l.src.value, l.dst.value, cap);
    out_cap[l.src.value] += cap;
    in_cap[l.dst.value] += cap;
  }
  const std::size_t source = n, sink = n + 1, half = gpus.size() / 2;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::uint32_t v = gpus[i].value;
    if (i < half) {
      add(source, v, out_cap[v]);
    } else {
      add(v, sink, in_cap[v]);
    }
  }
  const std::int64_t flow = boost::push_relabel_max_flow(g, source, sink);
  return Bandwidth{static_cast<double>(flow)};
}

}  // namespace

TopologySummary summarize(const Cluster& cluster) {
  TopologySummary s;
  s.name = cluster.name();
  for (std::size_t i = 0; i < cluster.node_count(); ++i) {
    const NodeKind k = cluster.node(NodeId{static_cast<std::uint32_t>(i)}).kind;
    ++s.nodes_by_kind[static_cast<std::size_t>(k)];
    if (is_switch(k)) ++s.switches;
  }
  s.gpus = cluster.gpus().size();
  s.routing = cluster.routing();
  s.routing_by_link_layer = cluster.routing_by_link_layer();
  s.directed_links = cluster.link_count();

  constexpr int kLevels = 4;  // 0 (not a fabric switch), leaf, spine, core
  std::array<TierSummary, kLevels> levels{};
  for (std::size_t i = 0; i < cluster.link_count(); ++i) {
    const LinkId id{static_cast<std::uint32_t>(i)};
    const LinkInfo& l = cluster.link(id);
    // A cable is counted at its lower-numbered link; a lone link (or a broken pairing) alone.
    const bool paired = l.reverse.valid() && cluster.link(l.reverse).reverse == id;
    if (!paired || l.reverse.value > id.value) ++s.cables;
    s.total_capacity_by_link_class[static_cast<std::size_t>(l.link_class)] += l.bandwidth;

    const int level = switch_level(cluster.node(l.src).kind);
    if (level == 0) continue;
    if (l.tier == level) {
      levels[level].down_capacity += l.bandwidth;
    } else if (l.tier == level + 1) {
      levels[level].up_capacity += l.bandwidth;
      ++levels[level].links;
    }
  }
  for (int t = 1; t < kLevels; ++t) {
    TierSummary& ts = levels[t];
    if (ts.links == 0) continue;
    ts.tier = t;
    ts.oversubscription = ts.up_capacity.value() > 0 ? ts.down_capacity / ts.up_capacity : 0.0;
    s.tiers.push_back(ts);
  }
  s.diameter_hops = gpu_diameter(cluster);
  s.bisection_bandwidth = rank_order_bisection(cluster);
  return s;
}

nlohmann::json to_json(const TopologySummary& s) {
  nlohmann::json j;
  j["name"] = s.name;
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kNodeKindCount; ++k) {
    kinds[to_string(static_cast<NodeKind>(k))] = s.nodes_by_kind[static_cast<std::size_t>(k)];
  }
  j["nodes_by_kind"] = std::move(kinds);
  j["gpus"] = s.gpus;
  j["switches"] = s.switches;
  j["directed_links"] = s.directed_links;
  j["cables"] = s.cables;
  j["diameter_hops"] = s.diameter_hops;
  j["bisection_bandwidth_Bps"] = to_bps(s.bisection_bandwidth);
  j["routing"] = to_string(s.routing);
  j["routing_source"] = s.routing_by_link_layer ? "nic_link_layer" : "file";
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierSummary& t : s.tiers) {
    tiers.push_back({{"tier", t.tier},
                     {"uplinks", t.links},
                     {"down_capacity_Bps", to_bps(t.down_capacity)},
                     {"up_capacity_Bps", to_bps(t.up_capacity)},
                     {"oversubscription", t.oversubscription}});
  }
  j["tiers"] = std::move(tiers);
  nlohmann::json classes = nlohmann::json::object();
  for (int c = 0; c < hw::kLinkClassCount; ++c) {
    classes[to_string(static_cast<hw::LinkClass>(c))] =
        to_bps(s.total_capacity_by_link_class[static_cast<std::size_t>(c)]);
  }
  j["total_capacity_Bps_by_link_class"] = std::move(classes);
  return j;
}

std::string to_table(const TopologySummary& s) {
  auto row = [](const std::string& key, const std::string& value) {
    std::string line = key;
    line.resize(22, ' ');
    return line + value + "\n";
  };
  std::ostringstream out;
  out << row("Topology", s.name);
  out << row("GPUs", std::to_string(s.gpus));
  out << row("Switches", std::to_string(s.switches));
  for (int k = 0; k < kNodeKindCount; ++k) {
    const std::size_t n = s.nodes_by_kind[static_cast<std::size_t>(k)];
    if (n > 0)
      out << row(std::string("  ") + to_string(static_cast<NodeKind>(k)), std::to_string(n));
  }
  out << row("Links", std::to_string(s.directed_links) + " directed, " + std::to_string(s.cables) +
                          " cables");
  out << row("Diameter (GPU-GPU)", s.diameter_hops < 0 ? "unreachable GPU pair"
                                                       : std::to_string(s.diameter_hops) + " hops");
  out << row("Bisection", format_bandwidth(s.bisection_bandwidth) + " (rank-order halves)");
  const char* source = !s.routing_by_link_layer           ? " (from the cluster file)"
                       : s.routing == Routing::kAdaptive ? " (default of InfiniBand NICs; set /fabric/routing to change)"
                                                         : " (default of non-InfiniBand NICs; set /fabric/routing to change)";
  out << row("Routing", std::string(to_string(s.routing)) + source);
  for (int c = 0; c < hw::kLinkClassCount; ++c) {
    const Bandwidth b = s.total_capacity_by_link_class[static_cast<std::size_t>(c)];
    if (b.value() > 0) {
      out << row(std::string("Capacity ") + to_string(static_cast<hw::LinkClass>(c)),
                 format_bandwidth(b));
    }
  }
  static const char* const kTierNames[] = {"", "leaf", "spine", "core"};
  for (const TierSummary& t : s.tiers) {
    std::array<char, 32> ratio{};
    std::snprintf(ratio.data(), ratio.size(), "%.2f:1", t.oversubscription);
    const char* name = t.tier >= 1 && t.tier <= 3 ? kTierNames[t.tier] : "?";
    out << row(std::string("Tier ") + std::to_string(t.tier) + " (" + name + ")",
               "down " + format_bandwidth(t.down_capacity) + ", up " +
                   format_bandwidth(t.up_capacity) + " over " + std::to_string(t.links) +
                   " uplinks, oversubscription " + ratio.data());
  }
  return out.str();
}

}  // namespace cs::topo
