#include "topology/plausibility.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "core/config.h"

namespace cs::topo {
namespace {

constexpr double kTolerance = 1e-9;  // relative, for "faster than" and "at least"
constexpr double kSlipTolerance = 0.005;  // relative, for "8x a known rate"

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// ---- bandwidths ----------------------------------------------------------------------------

struct KnownRate {
  Bandwidth rate{0};
  std::string name;  // the catalog entry: NIC, NVLink generation, GPU (its PCIe host link)
};

// What the catalog knows of one link class.
struct ClassLimit {
  hw::LinkClass link_class = hw::LinkClass::kNetwork;
  std::string links; // "network link", "NVLink-class link", "PCIe-class link"
  std::string what;  // "NIC", "NVLink generation", "PCIe host link"
  std::string per;   // what the rates are per
  std::vector<KnownRate> known;
};

ClassLimit class_limit(hw::LinkClass c, const hw::Catalog& catalog) {
  ClassLimit l;
  l.link_class = c;
  switch (c) {
    case hw::LinkClass::kNetwork:
      l.links = "network link";
      l.what = "NIC";
      l.per = "per direction";
      for (const auto& [name, nic] : catalog.nics()) l.known.push_back({nic.bandwidth, name});
      break;
    case hw::LinkClass::kNvlink:
      l.links = "NVLink-class link";
      l.what = "NVLink generation";
      l.per = "per GPU per direction";
      for (const auto& [name, nv] : catalog.nvlinks()) l.known.push_back({nv.per_gpu_bandwidth, name});
      break;
    case hw::LinkClass::kPcie:
      l.links = "PCIe-class link";
      l.what = "PCIe host link (a GPU's)";
      l.per = "per direction";
      for (const auto& [name, gpu] : catalog.gpus()) l.known.push_back({gpu.pcie_bandwidth, name});
      break;
  }
  return l;
}

// "1600 Gb/s = 200 GB/s" for the network, whose rates are named in bits; "7.20 TB/s" otherwise.
std::string describe(Bandwidth b, hw::LinkClass c) {
  if (c != hw::LinkClass::kNetwork) return format_bandwidth(b);
  return number(b.value() * 8 / 1e9) + " Gb/s = " + format_bandwidth(b);
}

bool same_rate(Bandwidth a, Bandwidth b, double tolerance) {
  return std::abs(a.value() - b.value()) <= tolerance * b.value();
}

// The names of the known entries at `rate`, in name order: "800GbE, XDR-800G".
std::string names_at(const std::vector<KnownRate>& known, Bandwidth rate, double tolerance) {
  std::string names;
  for (const KnownRate& k : known) {
    if (same_rate(k.rate, rate, tolerance)) names += (names.empty() ? "" : ", ") + k.name;
  }
  return names;
}

// The value as the slip's intended text: its bytes per second read as bits ("200GBps" -> "200Gbps").
std::string as_bits_text(Bandwidth b) {
  const double v = b.value();
  if (v >= 1e9) return number(v / 1e9) + "Gbps";
  return number(v / 1e6) + "Mbps";
}

void check_bandwidth(std::vector<Warning>& out, const std::string& file, const std::string& path, Bandwidth value,
                     const ClassLimit& limit) {
  if (limit.known.empty()) return;
  Bandwidth fastest{0};
  for (const KnownRate& k : limit.known) fastest = std::max(fastest, k.rate);
  if (value.value() <= fastest.value() * (1 + kTolerance)) return;
  std::string message = describe(value, limit.link_class) + " is faster than any " + limit.links +
                        " the catalog knows (the fastest " + limit.what + ": " + names_at(limit.known, fastest, kTolerance) +
                        " at " + describe(fastest, limit.link_class) + " " + limit.per + ")";
  // A byte unit written for a bit unit multiplies the rate by 8.
  const Bandwidth eighth{value.value() / 8};
  for (const KnownRate& k : limit.known) {
    if (!same_rate(k.rate, eighth, kSlipTolerance)) continue;
    message += "; did you mean \"" + as_bits_text(value) + "\" (" +
               (limit.link_class == hw::LinkClass::kNetwork ? std::string() : format_bandwidth(k.rate) + ", ") +
               names_at(limit.known, k.rate, kTolerance) + ")?";
    break;
  }
  out.push_back({file, path, message});
}

// ---- switches ------------------------------------------------------------------------------

bool is_fabric_switch(NodeKind k) {
  return k == NodeKind::kLeafSwitch || k == NodeKind::kSpineSwitch || k == NodeKind::kCoreSwitch;
}

// The largest radix of the catalog at a port speed of at least `rate`, and which model offers it.
struct KnownRadix {
  int ports = 0;
  std::string model;
  Bandwidth speed{0};
};

KnownRadix largest_radix(const hw::Catalog& catalog, Bandwidth rate) {
  KnownRadix best;
  for (const auto& [name, sw] : catalog.switches()) {
    for (const hw::SwitchPorts& p : sw.radix) {
      if (p.speed.value() >= rate.value() * (1 - kTolerance) && p.ports > best.ports) best = {p.ports, name, p.speed};
    }
  }
  return best;
}

struct SwitchExcess {
  NodeId node;
  std::size_t ports = 0;
  Bandwidth rate{0};     // its fastest cable, capped at the fastest known port speed
  bool capped = false;
  KnownRadix radix;
};

std::string kind_words(NodeKind k) {
  std::string s = to_string(k);
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

void check_switches(std::vector<Warning>& out, const std::string& file, const Cluster& cluster, const hw::Catalog& catalog) {
  Bandwidth fastest_port{0};
  for (const auto& [name, sw] : catalog.switches()) {
    for (const hw::SwitchPorts& p : sw.radix) fastest_port = std::max(fastest_port, p.speed);
  }
  if (!(fastest_port.value() > 0)) return;
  // Over-radix switches by (origin, kind), in the order of their first device.
  std::vector<std::pair<std::pair<std::string, NodeKind>, std::vector<SwitchExcess>>> groups;
  for (std::uint32_t n = 0; n < cluster.node_count(); ++n) {
    const NodeId id{n};
    const NodeInfo& info = cluster.node(id);
    if (!is_fabric_switch(info.kind)) continue;
    SwitchExcess s;
    s.node = id;
    s.ports = cluster.out_links(id).size();
    for (LinkId l : cluster.out_links(id)) s.rate = std::max(s.rate, cluster.link(l).bandwidth);
    for (LinkId l : cluster.in_links(id)) {
      if (!cluster.link(l).reverse.valid()) ++s.ports;
      s.rate = std::max(s.rate, cluster.link(l).bandwidth);
    }
    if (s.rate > fastest_port) {
      s.rate = fastest_port;
      s.capped = true;
    }
    s.radix = largest_radix(catalog, s.rate);
    if (s.radix.ports == 0 || s.ports <= static_cast<std::size_t>(s.radix.ports)) continue;
    const std::pair<std::string, NodeKind> key{info.origin, info.kind};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(s);
  }
  for (const auto& [key, excess] : groups) {
    // The switch most over its largest known radix names the group (the first of equals).
    const SwitchExcess* worst = &excess.front();
    for (const SwitchExcess& s : excess) {
      if (s.ports - static_cast<std::size_t>(s.radix.ports) > worst->ports - static_cast<std::size_t>(worst->radix.ports)) worst = &s;
    }
    const std::string kind = kind_words(key.second);
    const std::string rate = number(worst->rate.value() * 8 / 1e9) + " Gb/s";
    std::string message = kind + " \"" + cluster.node(worst->node).name + "\" has " + std::to_string(worst->ports) +
                          " ports (one per cable) at up to " + rate;
    if (worst->capped) message += " (its cables faster than that counted as ports of " + rate + ")";
    message += "; the largest switch the catalog knows with ports of " + rate + " or faster has " +
               std::to_string(worst->radix.ports) + " (" + worst->radix.model + ": " + std::to_string(worst->radix.ports) +
               " x " + number(worst->radix.speed.value() * 8 / 1e9) + " Gb/s)";
    if (excess.size() > 1) {
      message += "; " + std::to_string(excess.size() - 1) + " other " + kind + (excess.size() > 2 ? "es" : "") +
                 " from here have more ports than known too";
    }
    out.push_back({file, key.first, message});
  }
}

// Union-find over node ids, for the NVLink domains.
std::uint32_t find_root(std::vector<std::uint32_t>& parent, std::uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

void unite(std::vector<std::uint32_t>& parent, std::uint32_t a, std::uint32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a != b) parent[std::max(a, b)] = std::min(a, b);
}

}  // namespace

std::vector<Warning> plausibility_warnings(const ClusterSpec& spec, const Cluster& cluster, const hw::Catalog& catalog) {
  const ClassLimit limits[hw::kLinkClassCount] = {class_limit(hw::LinkClass::kNvlink, catalog),
                                                  class_limit(hw::LinkClass::kPcie, catalog),
                                                  class_limit(hw::LinkClass::kNetwork, catalog)};
  const auto limit = [&](hw::LinkClass c) -> const ClassLimit& { return limits[static_cast<int>(c)]; };
  std::vector<Warning> out;
  for (const ServerGroupSpec& g : spec.servers) {
    check_bandwidth(out, spec.file, json_pointer_append(g.origin, "pcie_bandwidth"), g.pcie_bandwidth, limit(hw::LinkClass::kPcie));
  }
  if (spec.fabric.link_bandwidth) {
    check_bandwidth(out, spec.file, spec.fabric.origin + "/link/bandwidth", *spec.fabric.link_bandwidth, limit(spec.fabric.link_class));
  }
  for (const LinkSpec& l : spec.links) {
    check_bandwidth(out, spec.file, l.origin + "/bandwidth", l.bandwidth, limit(l.link_class));
  }
  for (const LinkOverrideSpec& o : spec.link_overrides) {
    if (!o.bandwidth) continue;
    const auto from = cluster.find_node(o.from), to = cluster.find_node(o.to);
    if (!from || !to) continue;  // the build resolved them; kept safe for hand-made specs
    const auto link = cluster.find_link(*from, *to);
    if (!link) continue;
    check_bandwidth(out, spec.file, o.origin + "/bandwidth", *o.bandwidth, limit(cluster.link(*link).link_class));
  }
  check_switches(out, spec.file, cluster, catalog);
  return out;
}

std::vector<std::uint32_t> nvlink_domains(const Cluster& cluster) {
  std::vector<std::uint32_t> parent(cluster.node_count());
  for (std::uint32_t i = 0; i < parent.size(); ++i) parent[i] = i;
  for (std::uint32_t l = 0; l < cluster.link_count(); ++l) {
    const LinkInfo& link = cluster.link(LinkId{l});
    if (link.link_class == hw::LinkClass::kNvlink) unite(parent, link.src.value, link.dst.value);
  }
  std::map<std::int32_t, std::uint32_t> first_of_server;
  for (NodeId g : cluster.gpus()) {
    const std::int32_t server = cluster.node(g).server;
    if (server < 0) continue;
    auto [it, inserted] = first_of_server.emplace(server, g.value);
    if (!inserted) unite(parent, it->second, g.value);
  }
  std::map<std::uint32_t, std::uint32_t> number_of_root;
  std::vector<std::uint32_t> domains;
  domains.reserve(cluster.gpus().size());
  for (NodeId g : cluster.gpus()) {
    const std::uint32_t root = find_root(parent, g.value);
    auto it = number_of_root.emplace(root, static_cast<std::uint32_t>(number_of_root.size())).first;
    domains.push_back(it->second);
  }
  return domains;
}

}  // namespace cs::topo
