// Cluster files (docs/cluster-format.md) to Cluster graphs, in three stages that can be tested
// one by one:
//   parse     JSON -> ClusterSpec: types, units, unknown keys, catalog names (ConfigError);
//   validate  cross-field checks: group names, template counts, fabric sizes (ConfigError);
//   build     ClusterSpec -> Cluster through the server templates and fabric generators; dangling
//             link endpoints, missing links, duplicate names and GPUs without a path are
//             TopologyErrors.
// Every error names the file and the JSON path of the offending value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "hardware/catalog.h"
#include "topology/cluster.h"
#include "topology/fabrics.h"
#include "topology/server_templates.h"

namespace cs::topo {

// An explicit device ("/devices/<i>").
struct DeviceSpec {
  std::string name;
  NodeKind kind = NodeKind::kStorage;
  std::string model;               // free text, or the catalog GPU name for a GPU
  std::optional<hw::GpuSpec> gpu;      // GPUs only
  double packet_efficiency = 0;         // NICs named after a catalog NIC: its packet efficiency
  Bandwidth reduction_bandwidth{0};  // NVSwitches only
  std::string origin;              // "/devices/<i>"
};

// An explicit link or cable ("/links/<i>").
struct LinkSpec {
  std::string from, to;
  Bandwidth bandwidth{0};
  Duration latency{0};
  hw::LinkClass link_class = hw::LinkClass::kNetwork;
  int tier = 1;
  bool duplex = true;              // a cable (two directions) or one directed link
  std::string origin;              // "/links/<i>"
};

// A change to existing links ("/link_overrides/<i>").
struct LinkOverrideSpec {
  std::string from, to;
  std::optional<Bandwidth> bandwidth;
  std::optional<Duration> latency;
  bool both_directions = true;
  std::string origin;
};

struct ClusterSpec {
  std::string file;                // what errors call the file
  std::string name;
  std::string description;
  std::vector<ServerGroupSpec> servers;
  FabricSpec fabric;
  std::vector<DeviceSpec> devices;
  std::vector<LinkSpec> links;
  std::vector<LinkOverrideSpec> link_overrides;
};

// Stage 1. Resolves catalog names with `catalog` and fills defaults. The sections
// "link_classes" and "collective_model" parameterise the collective model; only the wire
// latency of each link class ("link_classes"/<class>/"latency", the default of generated links)
// is the platform's. The collective model's loader reads and checks the rest
// (sim/collectives/machine.h, which loads both from one file).
ClusterSpec parse_cluster_spec(const ConfigDocument& doc,
                               const hw::Catalog& catalog = hw::Catalog::builtin());
// Stage 2.
void validate_cluster_spec(const ClusterSpec& spec);
// Stage 3 (validates first). Ends with check_gpus_connected.
Cluster build_cluster(const ClusterSpec& spec);

// All three stages.
Cluster build_cluster(const ConfigDocument& doc);
// Reads `path`, applies "--set" overrides ("/json/pointer=value", see core/config.h) in order,
// then builds. Errors name `path`. The platform alone: a whole cluster file, with the collective
// model's sections checked and read, is coll::load_machine (sim/collectives/machine.h).
Cluster load_cluster(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace cs::topo
