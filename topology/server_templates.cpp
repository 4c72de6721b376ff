#include "topology/server_templates.h"

#include <cctype>

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

}  // namespace

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
  switch (spec.kind) {
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
    case ServerTemplate::kPcie: return base + spec.pcie_switches + 1;      // + cpu
    case ServerTemplate::kSingle: return base;
  }
  return base;
}

std::size_t server_cable_count(const ServerGroupSpec& spec) {
  const std::size_t g = spec.gpus, n = spec.nics, p = spec.pcie_switches;
  switch (spec.kind) {
    case ServerTemplate::kNvswitch: return g + g + n + p;  // NVLink, GPU-PCIe, NIC-PCIe, PCIe-host
    case ServerTemplate::kPcie: return g + n + p;
    case ServerTemplate::kSingle: return n;                // GPU-NIC
  }
  return 0;
}

ServerDevices build_server(ClusterBuilder& builder, const ServerGroupSpec& spec, int server_index) {
  ServerDevices out;
  out.server = server_index;
  const std::string prefix = spec.name + std::to_string(server_index) + "/";
  const auto add = [&](std::string suffix, NodeKind kind, int local, const std::string& model) {
    NodeInfo info;
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
    out.nics.push_back(add("nic" + std::to_string(m), NodeKind::kNic, m, spec.nic->name));
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
