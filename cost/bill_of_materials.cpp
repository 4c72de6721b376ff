#include "cost/bill_of_materials.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"

namespace cs::cost {
namespace {

// Ports (or cables) for a capacity at a port speed, rounded up; a hair of floating-point excess
// (200 Gb/s x 64 / 400 Gb/s) does not add a port.
std::int64_t ports_for(double capacity, double port_speed) {
  return static_cast<std::int64_t>(std::ceil(capacity / port_speed - 1e-9));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

const char* switch_tier_name(topo::NodeKind k) {
  switch (k) {
    case topo::NodeKind::kLeafSwitch: return "leaf";
    case topo::NodeKind::kSpineSwitch: return "spine";
    default: return "core";
  }
}

}  // namespace

std::int64_t BillOfMaterials::switches() const {
  std::int64_t n = 0;
  for (const SwitchTier& t : switch_tiers) n += t.switches;
  return n;
}
std::int64_t BillOfMaterials::cables() const {
  std::int64_t n = 0;
  for (const CableTier& t : cable_tiers) n += t.cables;
  return n;
}
std::int64_t BillOfMaterials::transceivers() const {
  std::int64_t n = 0;
  for (const CableTier& t : cable_tiers) n += t.transceivers;
  return n;
}

BillOfMaterials bill_of_materials(const topo::Cluster& cluster, const PriceCatalog& prices,
                                  const hw::Catalog& hardware, const std::string& file) {
  BillOfMaterials bom;
  bom.cluster = cluster.name();
  bom.gpus = static_cast<int>(cluster.gpus().size());

  // Servers by GPU model, in the order they first appear.
  std::map<int, std::pair<std::string, int>> per_server;  // server -> (gpu model, gpus)
  for (topo::NodeId g : cluster.gpus()) {
    const topo::NodeInfo& n = cluster.node(g);
    auto& e = per_server[n.server];
    e.first = cluster.gpu_spec(g).name;
    ++e.second;
  }
  bom.servers = static_cast<int>(per_server.size());
  for (const auto& [server, e] : per_server) {
    const auto& [gpu, count] = e;
    auto it = std::find_if(bom.server_lines.begin(), bom.server_lines.end(),
                           [&](const ServerLine& l) { return l.gpu == gpu; });
    if (it == bom.server_lines.end()) {
      const ServerPrice& p = prices.server(gpu, file, "/servers");
      ServerLine line;
      line.gpu = gpu;
      line.price = &p;
      bom.server_lines.push_back(line);
      it = bom.server_lines.end() - 1;
      bom.price_paths.push_back(p.path + "/price_usd");
      bom.price_paths.push_back(p.path + "/power_max_w");
      bom.price_paths.push_back(p.path + "/gpu_idle_w");
    }
    ++it->servers;
    it->gpus += count;
  }
  for (ServerLine& l : bom.server_lines) {
    // A server of another GPU count than the priced one is priced and powered pro rata (assumed).
    const double per_gpu_servers = static_cast<double>(l.gpus) / l.servers / l.price->gpus;
    l.unit_price = l.price->price * per_gpu_servers;
    l.unit_power_max = l.price->power_max * per_gpu_servers;
  }

  // NICs and the fabric's port speed and family.
  bool ethernet = false;
  bool has_switches = false;
  for (std::size_t i = 0; i < cluster.node_count(); ++i) {
    const topo::NodeInfo& n = cluster.node(topo::NodeId{static_cast<std::uint32_t>(i)});
    has_switches = has_switches || n.kind == topo::NodeKind::kLeafSwitch || n.kind == topo::NodeKind::kSpineSwitch ||
                   n.kind == topo::NodeKind::kCoreSwitch;
    if (n.kind != topo::NodeKind::kNic) continue;
    ++bom.nics;
    ethernet = ethernet || n.model.ends_with("GbE");
  }
  bom.family = ethernet ? NetworkFamily::kEthernet : NetworkFamily::kInfiniband;
  double capacity_by_tier[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < cluster.link_count(); ++i) {
    const topo::LinkInfo& l = cluster.link(topo::LinkId{static_cast<std::uint32_t>(i)});
    if (l.tier < 1 || l.tier > 3 || l.link_class != hw::LinkClass::kNetwork) continue;
    // One direction per cable: the direction that goes up (toward the higher tier's switch) or,
    // between endpoints (torus, ring), the one from the lower id.
    if (l.reverse.valid() && l.reverse.value < i) continue;
    capacity_by_tier[l.tier] += l.bandwidth.value();
    if (l.tier == 1) bom.port_speed = std::max(bom.port_speed, l.bandwidth);
  }
  if (bom.port_speed.value() <= 0) return bom;  // no fabric: servers only

  const std::string speed = format_bandwidth(bom.port_speed);
  const char* family_name = ethernet ? "Ethernet" : "InfiniBand";
  bom.link_price = prices.find_link(bom.port_speed);
  if (bom.link_price == nullptr) {
    throw ConfigError(file, "/fabric", std::string("no cable prices at the fabric's port speed (") + speed +
                                           ") in the price catalog " + prices.file() + " under /links");
  }

  if (has_switches) {
    bom.switch_price = prices.find_switch(bom.family, bom.port_speed);
    if (bom.switch_price == nullptr) {
      throw ConfigError(file, "/fabric", std::string("no ") + family_name + " switch at the fabric's port speed (" +
                                             speed + ") in the price catalog " + prices.file() + " under /switches");
    }
    bom.price_paths.push_back(bom.switch_price->path + "/price_usd");
    bom.price_paths.push_back(bom.switch_price->path + "/power_w");
    auto sw = hardware.switches().find(bom.switch_price->name);
    if (sw == hardware.switches().end()) {
      throw ConfigError(prices.file(), bom.switch_price->path,
                        "no switch \"" + bom.switch_price->name + "\" in the hardware catalog (configs/hardware/switches.json) to take its radix from");
    }
    const int radix = sw->second.max_ports_at(bom.port_speed);
    if (radix <= 0) {
      throw ConfigError(prices.file(), bom.switch_price->path,
                        "the hardware catalog's \"" + bom.switch_price->name + "\" has no ports at " + speed);
    }
    // Ports per switch of the graph, by kind.
    const topo::NodeKind kinds[] = {topo::NodeKind::kLeafSwitch, topo::NodeKind::kSpineSwitch, topo::NodeKind::kCoreSwitch};
    for (topo::NodeKind kind : kinds) {
      SwitchTier t;
      t.tier = switch_tier_name(kind);
      t.radix = radix;
      for (std::size_t i = 0; i < cluster.node_count(); ++i) {
        const topo::NodeId id{static_cast<std::uint32_t>(i)};
        if (cluster.node(id).kind != kind) continue;
        ++t.graph_switches;
        double capacity = 0;
        for (topo::LinkId l : cluster.out_links(id)) {
          if (cluster.link(l).link_class == hw::LinkClass::kNetwork) capacity += cluster.link(l).bandwidth.value();
        }
        const std::int64_t ports = ports_for(capacity, bom.port_speed.value());
        t.ports += ports;
        if (kind == topo::NodeKind::kLeafSwitch) t.switches += ceil_div(ports, radix);
      }
      if (t.graph_switches == 0) continue;
      if (kind != topo::NodeKind::kLeafSwitch) t.switches = ceil_div(t.ports, radix);
      bom.switch_tiers.push_back(t);
    }
  }
  const char* tier_names[] = {"", "endpoint_leaf", "leaf_spine", "spine_core"};
  for (int tier = 1; tier <= 3; ++tier) {
    if (capacity_by_tier[tier] <= 0) continue;
    CableTier c;
    c.tier = tier_names[tier];
    c.cables = ports_for(capacity_by_tier[tier], bom.port_speed.value());
    c.medium = prices.medium(tier);
    c.transceivers = c.medium == Medium::kOptical ? 2 * c.cables : 0;
    const std::vector<std::string> priced = c.medium == Medium::kOptical
                                                ? std::vector<std::string>{"/optical_usd", "/transceiver_w"}
                                                : std::vector<std::string>{"/copper_usd"};
    for (const std::string& what : priced) {
      const std::string path = bom.link_price->path + what;
      if (std::find(bom.price_paths.begin(), bom.price_paths.end(), path) == bom.price_paths.end()) bom.price_paths.push_back(path);
    }
    bom.cable_tiers.push_back(c);
  }
  return bom;
}

}  // namespace cs::cost
