#include "topology/server_templates.h"

#include <cctype>
#include <set>
#include <utility>

#include "core/config.h"
#include "core/errors.h"

namespace cs::topo {

namespace {

[[noreturn]] void fail_at(const std::string& file, const ServerGroupSpec& spec,
                          std::string_view key, const std::string& message) {
  throw ConfigError(file, json_pointer_append(spec.origin, key), message);
}

bool valid_prefix(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.back()))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// Where an error about key `key` of a mesh pair points: the key of a listed entry, or the
// named layout itself.
std::string pair_path(const MeshPair& p, std::string_view key, std::string_view index = {}) {
  if (!p.listed) return p.origin;
  const std::string k = json_pointer_append(p.origin, key);
  return index.empty() ? k : json_pointer_append(k, index);
}

void validate_mesh(const ServerGroupSpec& spec, const std::string& file) {
  if (spec.mesh.empty()) fail_at(file, spec, "mesh", "the mesh template needs at least one GPU pair");
  const int per_gpu = spec.nvlink->links_per_gpu;
  std::vector<int> used(static_cast<std::size_t>(spec.gpus), 0);
  std::set<std::pair<int, int>> seen;
  for (const MeshPair& p : spec.mesh) {
    for (const auto& [idx, g] : {std::pair{0, p.a}, std::pair{1, p.b}}) {
      if (g < 0 || g >= spec.gpus) {
        throw ConfigError(file, pair_path(p, "gpus", std::to_string(idx)),
                          "GPU index " + std::to_string(g) + " is outside 0.." + std::to_string(spec.gpus - 1));
      }
    }
    if (p.a == p.b) {
      throw ConfigError(file, pair_path(p, "gpus", "1"), "a mesh pair joins two different GPUs; got " +
                                                           std::to_string(p.a) + " twice");
    }
    if (!seen.insert({std::min(p.a, p.b), std::max(p.a, p.b)}).second) {
      throw ConfigError(file, pair_path(p, "gpus"),
                        "GPUs " + std::to_string(p.a) + " and " + std::to_string(p.b) +
                            " are paired twice; give the pair once with its number of \"links\"");
    }
    if (p.links < 1) throw ConfigError(file, pair_path(p, "links"), "a pair has at least one link");
    for (int g : {p.a, p.b}) {
      used[static_cast<std::size_t>(g)] += p.links;
      if (used[static_cast<std::size_t>(g)] > per_gpu) {
        throw ConfigError(file, pair_path(p, "links"),
                          "GPU " + std::to_string(g) + " would have " + std::to_string(used[static_cast<std::size_t>(g)]) +
                              " links, more than the " + std::to_string(per_gpu) + " a GPU has on " +
                              spec.nvlink->name);
      }
    }
  }
}

}  // namespace

std::vector<MeshPair> named_mesh(const std::string& name, int gpus, const std::string& file,
                                 const std::string& path) {
  std::vector<MeshPair> out;
  if (name == "full") {
    for (int a = 0; a < gpus; ++a) {
      for (int b = a + 1; b < gpus; ++b) out.push_back({a, b, 1, path});
    }
    return out;
  }
  if (name == "dgx1-hybrid-cube-mesh") {
    if (gpus != 8) {
      throw ConfigError(file, path, "the dgx1-hybrid-cube-mesh layout has 8 GPUs; the group has " +
                                        std::to_string(gpus));
    }
    // nvidia-smi topo -m of a DGX-1 with V100 (docs/cluster-format.md, "mesh"): NV2 = two links.
    const int pairs[16][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                              {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                              {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
    for (const auto& p : pairs) out.push_back({p[0], p[1], p[2], path});
    return out;
  }
  std::string known;
  for (const char* n : kMeshLayoutNames) known += std::string(known.empty() ? "" : ", ") + "\"" + n + "\"";
  throw ConfigError(file, path, "unknown mesh layout \"" + name + "\"; expected " + known +
                                    " or a list of {\"gpus\": [a, b], \"links\": m}");
}

void validate_server_group(const ServerGroupSpec& spec, const std::string& file) {
  if (!valid_prefix(spec.name)) {
    fail_at(file, spec, "name",
            "a server name prefix uses letters, digits, '_' and '-' and does not end in a digit "
            "(server k is named <prefix><k>); got \"" + spec.name + "\"");
  }
  if (spec.count < 1) fail_at(file, spec, "count", "a server group needs at least one server");
  if (spec.gpus < 1) fail_at(file, spec, "gpus", "a server needs at least one GPU");
  if (spec.nics < 0) fail_at(file, spec, "nics", "the NIC count cannot be negative");
  if (spec.nics > 0 && !spec.nic) fail_at(file, spec, "nic", "nics > 0 needs a NIC model");
  if (spec.nic && !(spec.nic->bandwidth.value() > 0)) {
    fail_at(file, spec, "nic", "the NIC's bandwidth must be positive");
  }
  if (!(spec.pcie_bandwidth.value() > 0)) {
    fail_at(file, spec, "pcie_bandwidth", "the PCIe bandwidth must be positive");
  }
  if (spec.kind != ServerTemplate::kMesh && !spec.mesh.empty()) {
    fail_at(file, spec, "mesh", "only the mesh template has a mesh");
  }
  switch (spec.kind) {
    case ServerTemplate::kMesh:
      if (!spec.nvlink) {
        fail_at(file, spec, "nvlink",
                "the mesh template needs the GPUs' link generation (\"nvlink\": e.g. \"NVLink2\", "
                "\"xGMI-MI300X\")");
      }
      if (!(spec.nvlink->per_gpu_bandwidth.value() > 0)) {
        fail_at(file, spec, "nvlink", "the link bandwidth must be positive");
      }
      validate_mesh(spec, file);
      if (spec.pcie_switches < 1 || spec.pcie_switches > spec.gpus) {
        fail_at(file, spec, "pcie_switches",
                "expected from 1 to the GPU count (" + std::to_string(spec.gpus) + ")");
      }
      break;
    case ServerTemplate::kNvswitch:
      if (!spec.nvlink) {
        fail_at(file, spec, "nvlink",
                "the nvswitch template needs an NVLink generation (GPU \"" + spec.gpu.name +
                    "\" has none in the catalog; use the pcie template)");
      }
      if (!(spec.nvlink->per_gpu_bandwidth.value() > 0)) {
        fail_at(file, spec, "nvlink", "the NVLink bandwidth must be positive");
      }
      [[fallthrough]];
    case ServerTemplate::kPcie:
      if (spec.kind == ServerTemplate::kPcie && spec.nvlink) {
        fail_at(file, spec, "nvlink", "the pcie template has no NVLink");
      }
      if (spec.pcie_switches < 1 || spec.pcie_switches > spec.gpus) {
        fail_at(file, spec, "pcie_switches",
                "expected from 1 to the GPU count (" + std::to_string(spec.gpus) + ")");
      }
      break;
    case ServerTemplate::kSingle:
      if (spec.gpus != 1) fail_at(file, spec, "gpus", "the single template has exactly one GPU");
      if (spec.nics > 1) fail_at(file, spec, "nics", "the single template has at most one NIC");
      if (spec.nvlink) fail_at(file, spec, "nvlink", "the single template has no NVLink");
      break;
  }
}

std::size_t server_node_count(const ServerGroupSpec& spec) {
  const std::size_t base = static_cast<std::size_t>(spec.gpus) + static_cast<std::size_t>(spec.nics);
  switch (spec.kind) {
    case ServerTemplate::kNvswitch: return base + spec.pcie_switches + 2;  // + nvswitch, cpu
    case ServerTemplate::kPcie:
    case ServerTemplate::kMesh: return base + spec.pcie_switches + 1;      // + cpu
    case ServerTemplate::kSingle: return base;
  }
  return base;
}

std::size_t server_cable_count(const ServerGroupSpec& spec) {
  const std::size_t g = spec.gpus, n = spec.nics, p = spec.pcie_switches;
  switch (spec.kind) {
    case ServerTemplate::kNvswitch: return g + g + n + p;  // NVLink, GPU-PCIe, NIC-PCIe, PCIe-host
    case ServerTemplate::kPcie: return g + n + p;
    case ServerTemplate::kMesh: return spec.mesh.size() + g + n + p;  // one cable per pair
    case ServerTemplate::kSingle: return n;                // GPU-NIC
  }
  return 0;
}

ServerDevices build_server(ClusterBuilder& builder, const ServerGroupSpec& spec, int server_index) {
  ServerDevices out;
  out.server = server_index;
  const std::string prefix = spec.name + std::to_string(server_index) + "/";
  const auto add = [&](std::string suffix, NodeKind kind, int local, const std::string& model,
                       double packet_efficiency = 0) {
    NodeInfo info;
    info.packet_efficiency = packet_efficiency;
    info.name = prefix + suffix;
    info.kind = kind;
    info.server = server_index;
    info.local = local;
    info.model = model;
    info.origin = spec.origin;
    return builder.add_node(std::move(info));
  };

  out.gpus.reserve(static_cast<std::size_t>(spec.gpus));
  for (int i = 0; i < spec.gpus; ++i) {
    const NodeId g = add("gpu" + std::to_string(i), NodeKind::kGpu, i, spec.gpu.name);
    builder.set_gpu_spec(g, spec.gpu);
    out.gpus.push_back(g);
  }
  out.nics.reserve(static_cast<std::size_t>(spec.nics));
  for (int m = 0; m < spec.nics; ++m) {
    out.nics.push_back(add("nic" + std::to_string(m), NodeKind::kNic, m, spec.nic->name, spec.nic->packet_efficiency()));
  }
  if (spec.nic) out.nic_bandwidth = spec.nic->bandwidth;
  const Duration nic_latency = spec.nic ? spec.nic->latency : Duration{0};
  const Duration nic_cable_latency = spec.pcie_latency + nic_latency;

  if (spec.kind == ServerTemplate::kSingle) {
    if (spec.nics == 1) {
      builder.add_cable(out.gpus[0], out.nics[0], spec.pcie_bandwidth, nic_cable_latency,
                        hw::LinkClass::kPcie, 0);
    }
    return out;
  }

  if (spec.kind == ServerTemplate::kNvswitch) {
    NodeInfo sw;
    sw.name = prefix + "nvswitch";
    sw.kind = NodeKind::kNvSwitch;
    sw.server = server_index;
    sw.model = spec.nvlink->name;
    sw.origin = spec.origin;
    sw.reduction_bandwidth = spec.nvlink->switch_reduction_per_gpu * static_cast<double>(spec.gpus);
    const NodeId nvswitch = builder.add_node(std::move(sw));
    for (NodeId g : out.gpus) {
      builder.add_cable(g, nvswitch, spec.nvlink->per_gpu_bandwidth, spec.nvlink_latency,
                        hw::LinkClass::kNvlink, 0);
    }
  }

  if (spec.kind == ServerTemplate::kMesh) {
    // One cable per pair: `links` links of per_gpu_bandwidth / links_per_gpu each.
    const Bandwidth per_link{spec.nvlink->per_gpu_bandwidth.value() / spec.nvlink->links_per_gpu};
    for (const MeshPair& p : spec.mesh) {
      builder.add_cable(out.gpus[static_cast<std::size_t>(p.a)], out.gpus[static_cast<std::size_t>(p.b)],
                        scale(per_link, static_cast<double>(p.links)), spec.nvlink_latency,
                        hw::LinkClass::kNvlink, 0);
    }
  }

  std::vector<NodeId> pcie(static_cast<std::size_t>(spec.pcie_switches));
  for (int j = 0; j < spec.pcie_switches; ++j) {
    pcie[static_cast<std::size_t>(j)] = add("pcie" + std::to_string(j), NodeKind::kPcieSwitch, j, "");
  }
  const NodeId host = add("cpu", NodeKind::kHost, -1, "");
  const auto switch_of_gpu = [&](std::int64_t i) {
    return pcie[static_cast<std::size_t>(i * spec.pcie_switches / spec.gpus)];
  };
  for (int i = 0; i < spec.gpus; ++i) {
    builder.add_cable(out.gpus[static_cast<std::size_t>(i)], switch_of_gpu(i), spec.pcie_bandwidth,
                      spec.pcie_latency, hw::LinkClass::kPcie, 0);
  }
  for (int m = 0; m < spec.nics; ++m) {
    const std::int64_t gpu = static_cast<std::int64_t>(m) * spec.gpus / spec.nics;
    builder.add_cable(out.nics[static_cast<std::size_t>(m)], switch_of_gpu(gpu), spec.pcie_bandwidth,
                      nic_cable_latency, hw::LinkClass::kPcie, 0);
  }
  for (NodeId p : pcie) {
    builder.add_cable(p, host, spec.pcie_bandwidth, spec.pcie_latency, hw::LinkClass::kPcie, 0);
  }
  return out;
}

}  // namespace cs::topo
