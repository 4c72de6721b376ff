#include "topology/cluster_loader.h"

#include <algorithm>
#include <set>

#include "core/errors.h"
#include "core/limits.h"
#include "topology/cluster_builder.h"
#include "topology/reachability.h"

namespace cs::topo {

namespace {

constexpr std::int64_t kMaxServers = 1'000'000;
constexpr std::int64_t kMaxGpusPerServer = 1024;

hw::LinkClass parse_link_class(const ConfigNode& node) { return node.as_enum(hw::kLinkClassNames); }

// ---- parse ----------------------------------------------------------------------------------

ServerGroupSpec parse_server_group(const ConfigNode& node, const hw::Catalog& catalog,
                                   const ClusterSpec& spec, const Duration* latency) {
  node.expect_only({"count", "name", "template", "gpu", "gpus", "nvlink", "nic", "nics",
                    "pcie_switches", "pcie_bandwidth", "mesh"});
  ServerGroupSpec g;
  g.origin = node.path();
  if (auto c = node.find("count")) g.count = static_cast<int>(c->as_int(1, kMaxServers));
  if (auto n = node.find("name")) g.name = n->as_string();
  const ConfigNode tmpl = node.at("template");
  g.kind = tmpl.as_enum(kServerTemplateNames);
  const ConfigNode gpu = node.at("gpu");
  g.gpu = catalog.gpu(gpu.as_string(), spec.file, gpu.path());
  g.gpus = g.kind == ServerTemplate::kSingle ? 1 : 8;
  if (auto n = node.find("gpus")) g.gpus = static_cast<int>(n->as_int(1, kMaxGpusPerServer));

  if (auto nv = node.find("nvlink")) {
    g.nvlink = catalog.nvlink(nv->as_string(), spec.file, nv->path());
  } else if ((g.kind == ServerTemplate::kNvswitch || g.kind == ServerTemplate::kMesh) && !g.gpu.nvlink.empty()) {
    g.nvlink = catalog.nvlink(g.gpu.nvlink, spec.file, gpu.path());
  }
  if (auto mesh = node.find("mesh")) {
    if (g.kind != ServerTemplate::kMesh) mesh->fail("only the mesh template has a mesh");
    if (mesh->is_string()) {
      g.mesh = named_mesh(mesh->as_string(), g.gpus, spec.file, mesh->path());
    } else {
      if (mesh->size() == 0) mesh->fail_expected("a mesh layout name or a non-empty list of GPU pairs");
      for (const ConfigNode& pair : mesh->elements()) {
        pair.expect_only({"gpus", "links"});
        const ConfigNode gpus = pair.at("gpus");
        if (gpus.size() != 2) gpus.fail_expected("two GPU indices, [a, b]");
        MeshPair p;
        p.a = static_cast<int>(gpus.elements()[0].as_int(0, kMaxGpusPerServer));
        p.b = static_cast<int>(gpus.elements()[1].as_int(0, kMaxGpusPerServer));
        if (auto l = pair.find("links")) p.links = static_cast<int>(l->as_int(1, 1024));
        p.origin = pair.path();
        p.listed = true;
        g.mesh.push_back(std::move(p));
      }
    }
  } else if (g.kind == ServerTemplate::kMesh) {
    throw ConfigError(spec.file, json_pointer_append(node.path(), "mesh"),
                      "the mesh template needs \"mesh\": a layout name (\"full\", "
                      "\"dgx1-hybrid-cube-mesh\") or a list of {\"gpus\": [a, b], \"links\": m}");
  }
  if (auto nic = node.find("nic")) {
    g.nic = catalog.nic(nic->as_string(), spec.file, nic->path());
    g.nics = g.kind == ServerTemplate::kSingle ? 1 : g.gpus;
  }
  if (auto n = node.find("nics")) g.nics = static_cast<int>(n->as_int(0, kMaxGpusPerServer));
  if (g.nics == 0) g.nic.reset();  // "nics": 0 turns a named NIC off
  g.pcie_switches = std::max(1, g.gpus / 2);
  if (auto p = node.find("pcie_switches")) {
    if (g.kind == ServerTemplate::kSingle) p->fail("the single template has no PCIe switches");
    g.pcie_switches = static_cast<int>(p->as_int(1, kMaxGpusPerServer));
  }
  g.pcie_bandwidth = g.gpu.pcie_bandwidth;
  if (auto p = node.find("pcie_bandwidth")) g.pcie_bandwidth = p->as_bandwidth();
  g.nvlink_latency = latency[0];
  g.pcie_latency = latency[1];
  return g;
}

FabricSpec parse_fabric(const ConfigNode& node) {
  FabricSpec f;
  f.origin = node.path();
  const ConfigNode type = node.at("type");
  f.type = type.as_enum(kFabricTypeNames);
  switch (f.type) {
    case FabricType::kNone: node.expect_only({"type", "routing"}); break;
    case FabricType::kStar: node.expect_only({"type", "link", "routing", "in_network_reduction"}); break;
    case FabricType::kRing: node.expect_only({"type", "link", "routing"}); break;
    case FabricType::kLeafSpine:
      node.expect_only({"type", "link", "endpoints_per_leaf", "spines", "oversubscription",
                        "rail_aligned", "routing", "in_network_reduction"});
      f.endpoints_per_leaf = static_cast<int>(node.at("endpoints_per_leaf").as_int(1, 1 << 20));
      f.spines = static_cast<int>(node.at("spines").as_int(1, 1 << 16));
      break;
    case FabricType::kFatTree:
      node.expect_only(
          {"type", "link", "tiers", "radix", "oversubscription", "rail_aligned", "routing", "in_network_reduction"});
      f.tiers = static_cast<int>(node.at("tiers").as_int(2, 3));
      f.radix = static_cast<int>(node.at("radix").as_int(4, 1 << 12));
      break;
    case FabricType::kRailOptimized:
      node.expect_only(
          {"type", "link", "nodes_per_leaf", "spines", "oversubscription", "routing", "in_network_reduction"});
      f.nodes_per_leaf = static_cast<int>(node.at("nodes_per_leaf").as_int(1, 1 << 20));
      f.spines = static_cast<int>(node.at("spines").as_int(1, 1 << 16));
      break;
    case FabricType::kTorus: {
      node.expect_only({"type", "link", "dims", "routing"});
      for (const ConfigNode& d : node.at("dims").elements()) {
        f.dims.push_back(static_cast<int>(d.as_int(1, 1 << 20)));
      }
      break;
    }
  }
  if (auto o = node.find("oversubscription")) f.oversubscription = o->as_number();
  if (auto r = node.find("rail_aligned")) f.rail_aligned = r->as_bool();
  if (auto r = node.find("in_network_reduction")) f.in_network_reduction = r->as_bool();
  if (auto r = node.find("routing")) {
    f.routing = r->as_enum(kRoutingNames);
    f.routing_given = true;
  }
  return f;
}

}  // namespace

// ---- stage 1: parse -------------------------------------------------------------------------

ClusterSpec parse_cluster_spec(const ConfigDocument& doc, const hw::Catalog& catalog) {
  ClusterSpec spec;
  spec.file = doc.name();
  const ConfigNode root = doc.root();
  if (!root.is_object()) root.fail_expected("an object (a cluster description)");
  root.expect_only({"name", "description", "servers", "fabric", "devices", "links",
                    "link_overrides", "link_classes", "collective_model"});
  if (auto n = root.find("name")) {
    spec.name = n->as_string();
  } else {
    // The file's stem: "configs/clusters/dgx-h100.json" -> "dgx-h100".
    std::string stem = spec.file.substr(spec.file.find_last_of('/') + 1);
    if (const auto dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
    spec.name = stem;
  }
  if (auto d = root.find("description")) spec.description = d->as_string();

  // The wire latency of each link class: the default of generated links. The other keys of
  // "link_classes", and "collective_model", are the collective model's (see the header).
  Duration latency[hw::kLinkClassCount];
  for (int i = 0; i < hw::kLinkClassCount; ++i) {
    const auto cls = static_cast<hw::LinkClass>(i);
    latency[i] = catalog.wire_latency(cls);
    if (auto classes = root.find("link_classes"); classes && classes->is_object()) {
      if (auto node = classes->find(hw::to_string(cls)); node && node->is_object()) {
        if (auto l = node->find("latency")) latency[i] = l->as_duration();
      }
    }
  }

  if (!root.has("servers")) {
    throw ConfigError(spec.file, "/servers", "missing required key \"servers\" (a list of server groups)");
  }
  const ConfigNode servers = root.at("servers");
  if (servers.size() == 0) servers.fail_expected("at least one server group");
  for (const ConfigNode& g : servers.elements()) {
    spec.servers.push_back(parse_server_group(g, catalog, spec, latency));
  }

  if (auto fabric = root.find("fabric")) {
    spec.fabric = parse_fabric(*fabric);
  } else {
    spec.fabric.origin = "/fabric";
  }
  spec.fabric.link_class = hw::LinkClass::kNetwork;
  spec.fabric.link_latency = latency[2];
  if (auto fabric = root.find("fabric")) {
    if (auto link = fabric->find("link")) {
      link->expect_only({"bandwidth", "latency", "class"});
      if (auto c = link->find("class")) {
        spec.fabric.link_class = parse_link_class(*c);
        spec.fabric.link_latency = latency[static_cast<int>(spec.fabric.link_class)];
      }
      if (auto b = link->find("bandwidth")) spec.fabric.link_bandwidth = b->as_bandwidth();
      if (auto l = link->find("latency")) spec.fabric.link_latency = l->as_duration();
    }
  }

  // Without "routing", a fabric whose every server NIC runs InfiniBand routes adaptively, as
  // NCCL and the subnet manager set it up by default (hw::LinkLayer); any other: static ECMP.
  if (!spec.fabric.routing_given) {
    bool infiniband = false, other = false;
    for (const ServerGroupSpec& g : spec.servers) {
      if (g.nics == 0 || !g.nic) continue;
      (g.nic->link_layer == hw::LinkLayer::kInfiniBand ? infiniband : other) = true;
    }
    spec.fabric.routing = infiniband && !other ? Routing::kAdaptive : Routing::kEcmp;
  }

  if (auto devices = root.find("devices")) {
    for (const ConfigNode& d : devices->elements()) {
      d.expect_only({"name", "kind", "model", "reduction_bandwidth"});
      DeviceSpec dev;
      dev.origin = d.path();
      dev.name = d.at("name").as_string();
      if (dev.name.empty()) d.at("name").fail_expected("a non-empty device name");
      dev.kind = d.at("kind").as_enum(kNodeKindNames);
      if (auto m = d.find("model")) dev.model = m->as_string();
      if (dev.kind == NodeKind::kGpu) {
        const ConfigNode model = d.at("model");
        dev.gpu = catalog.gpu(model.as_string(), spec.file, model.path());
      }
      if (dev.kind == NodeKind::kNic) {
        // A NIC device named after a catalog NIC takes its packet format.
        if (auto nic = catalog.nics().find(dev.model); nic != catalog.nics().end()) {
          dev.packet_efficiency = nic->second.packet_efficiency();
        }
      }
      if (auto r = d.find("reduction_bandwidth")) {
        if (dev.kind != NodeKind::kNvSwitch) r->fail("only an nvswitch has a reduction bandwidth");
        dev.reduction_bandwidth = r->as_bandwidth();
      }
      spec.devices.push_back(std::move(dev));
    }
  }

  if (auto links = root.find("links")) {
    for (const ConfigNode& l : links->elements()) {
      l.expect_only({"from", "to", "bandwidth", "latency", "class", "tier", "duplex"});
      LinkSpec link;
      link.origin = l.path();
      link.from = l.at("from").as_string();
      link.to = l.at("to").as_string();
      link.bandwidth = l.at("bandwidth").as_bandwidth();
      if (auto c = l.find("class")) link.link_class = parse_link_class(*c);
      link.latency = latency[static_cast<int>(link.link_class)];
      if (auto lat = l.find("latency")) link.latency = lat->as_duration();
      link.tier = link.link_class == hw::LinkClass::kNetwork ? 1 : 0;
      if (auto t = l.find("tier")) link.tier = static_cast<int>(t->as_int(0, 3));
      if (auto d = l.find("duplex")) link.duplex = d->as_bool();
      spec.links.push_back(std::move(link));
    }
  }

  if (auto overrides = root.find("link_overrides")) {
    for (const ConfigNode& o : overrides->elements()) {
      o.expect_only({"from", "to", "bandwidth", "latency", "direction"});
      LinkOverrideSpec ov;
      ov.origin = o.path();
      ov.from = o.at("from").as_string();
      ov.to = o.at("to").as_string();
      if (auto b = o.find("bandwidth")) ov.bandwidth = b->as_bandwidth();
      if (auto l = o.find("latency")) ov.latency = l->as_duration();
      if (!ov.bandwidth && !ov.latency) o.fail("a link override needs \"bandwidth\" or \"latency\"");
      if (auto d = o.find("direction")) ov.both_directions = d->as_choice({"both", "one"}) == 0;
      spec.link_overrides.push_back(std::move(ov));
    }
  }
  return spec;
}

// ---- stage 2: validate ----------------------------------------------------------------------

void validate_cluster_spec(const ClusterSpec& spec) {
  std::int64_t servers = 0, gpus = 0;
  for (const ServerGroupSpec& g : spec.servers) {
    validate_server_group(g, spec.file);
    servers += g.count;
    gpus += static_cast<std::int64_t>(g.count) * g.gpus;
    if (servers > kMaxServers || gpus > limits().gpus) {
      throw ConfigError(spec.file, json_pointer_append(g.origin, "count"),
                        "the cluster is too large: " + std::to_string(gpus) + " GPUs so far, at most " +
                            std::to_string(limits().gpus) + "; " + limit_hint("gpus"));
    }
  }
  // Server names "<prefix><k>" are unique: k is global, and a prefix does not end in a digit
  // (validate_server_group), so "node1" + "0" cannot meet "node" + "10". Groups may share a prefix.
  const std::vector<Endpoint> endpoints = planned_endpoints(spec.servers);
  validate_fabric(spec.fabric, endpoints, spec.file);
  // What the cluster asks for, before anything is built: a few sizes can ask for billions of cables.
  std::int64_t cables = fabric_cable_count(spec.fabric, endpoints) + static_cast<std::int64_t>(spec.links.size());
  for (const ServerGroupSpec& g : spec.servers) cables += g.count * static_cast<std::int64_t>(server_cable_count(g));
  if (2 * cables > limits().links) {
    throw ConfigError(spec.file, spec.fabric.type == FabricType::kNone ? "/servers" : spec.fabric.origin,
                      "the cluster would have " + std::to_string(2 * cables) + " directed links, more than the limit of " +
                          std::to_string(limits().links) + "; " + limit_hint("links"));
  }

  std::set<std::string> names;
  for (const DeviceSpec& d : spec.devices) {
    if (!names.insert(d.name).second) {
      throw ConfigError(spec.file, d.origin + "/name", "duplicate device name \"" + d.name + "\"");
    }
  }
  for (const LinkSpec& l : spec.links) {
    if (l.from == l.to) {
      throw ConfigError(spec.file, l.origin + "/to", "a link from \"" + l.from + "\" to itself");
    }
  }
}

// ---- stage 3: build -------------------------------------------------------------------------

namespace {

NodeId resolve(const ClusterBuilder& builder, const std::string& file, const std::string& origin,
               std::string_view key, const std::string& name) {
  if (auto id = builder.find_node(name)) return *id;
  throw TopologyError(file, origin + "/" + std::string(key),
                      "unknown device \"" + name +
                          "\" (generated devices are named like \"node0/gpu0\", \"node0/nic0\", "
                          "\"leaf0\", \"spine0\"; see docs/cluster-format.md)");
}

Cluster build_unchecked(const ClusterSpec& spec) {
  ClusterBuilder builder(spec.name);
  builder.set_routing(spec.fabric.routing, !spec.fabric.routing_given);

  std::vector<ServerDevices> servers;
  std::int64_t total = 0;
  for (const ServerGroupSpec& g : spec.servers) total += g.count;
  servers.reserve(static_cast<std::size_t>(total));
  int k = 0;
  for (const ServerGroupSpec& g : spec.servers) {
    for (int i = 0; i < g.count; ++i, ++k) servers.push_back(build_server(builder, g, k));
  }
  const std::vector<Endpoint> endpoints = fabric_endpoints(servers);
  build_fabric(builder, spec.fabric, endpoints, spec.file);

  for (const DeviceSpec& d : spec.devices) {
    if (builder.find_node(d.name)) {
      throw TopologyError(spec.file, d.origin + "/name",
                          "device name \"" + d.name + "\" is already taken by a generated device");
    }
    NodeInfo info;
    info.name = d.name;
    info.kind = d.kind;
    info.model = d.gpu ? d.gpu->name : d.model;
    info.origin = d.origin;
    info.reduction_bandwidth = d.reduction_bandwidth;
    info.packet_efficiency = d.packet_efficiency;
    const NodeId id = builder.add_node(std::move(info));
    if (d.gpu) builder.set_gpu_spec(id, *d.gpu);
  }

  for (const LinkSpec& l : spec.links) {
    const NodeId a = resolve(builder, spec.file, l.origin, "from", l.from);
    const NodeId b = resolve(builder, spec.file, l.origin, "to", l.to);
    if (l.duplex) builder.add_cable(a, b, l.bandwidth, l.latency, l.link_class, l.tier);
    else builder.add_link(a, b, l.bandwidth, l.latency, l.link_class, l.tier);
  }

  for (const LinkOverrideSpec& o : spec.link_overrides) {
    const NodeId a = resolve(builder, spec.file, o.origin, "from", o.from);
    const NodeId b = resolve(builder, spec.file, o.origin, "to", o.to);
    const auto link = builder.find_link(a, b);
    if (!link) {
      throw TopologyError(spec.file, o.origin,
                          "there is no link from \"" + o.from + "\" to \"" + o.to + "\" to override");
    }
    std::vector<LinkId> targets{*link};
    const LinkId reverse = builder.link(*link).reverse;
    if (o.both_directions && reverse.valid()) targets.push_back(reverse);
    for (LinkId t : targets) {
      if (o.bandwidth) builder.set_link_bandwidth(t, *o.bandwidth);
      if (o.latency) builder.set_link_latency(t, *o.latency);
    }
  }

  if (builder.gpus().empty()) throw TopologyError(spec.file, "/servers", "the cluster has no GPU");
  Cluster built = std::move(builder).build();
  check_gpus_connected(built, spec.file);
  return built;
}

}  // namespace

Cluster build_cluster(const ClusterSpec& spec) {
  validate_cluster_spec(spec);
  try {
    return build_unchecked(spec);
  } catch (const InputError& e) {
    // ClusterBuilder reports where (the origin) but not which file.
    if (!e.file().empty()) throw;
    throw TopologyError(spec.file, e.json_path(), e.message());
  }
}

Cluster build_cluster(const ConfigDocument& doc) { return build_cluster(parse_cluster_spec(doc)); }

Cluster load_cluster(const std::string& path, const std::vector<std::string>& overrides) {
  return build_cluster(ConfigDocument::load(path, overrides));
}

}  // namespace cs::topo
