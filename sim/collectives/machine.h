// A machine as the collective model sees it: the cluster graph (the platform: devices, links,
// line rates, wire latencies) and the protocol parameters its collectives run with. A cluster
// file describes both; the platform stays free of protocol timing, and a calibration profile
// replaces protocol parameters without touching the cluster. Values of the file that are legal but
// outside what the catalog knows (topology/plausibility.h) come back as warnings, for the front
// ends to print; loading never prints.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/warning.h"
#include "sim/collectives/protocol_params.h"
#include "topology/cluster.h"

namespace cs::coll {

struct Machine {
  topo::Cluster cluster;
  ProtocolParams protocol;
  // The cluster file's plausibility warnings (topology/plausibility.h), in file order.
  std::vector<Warning> warnings;
};

// One cluster document: the topology's sections parsed (topo::parse_cluster_spec), then the
// collective model's ("link_classes", "collective_model") over `defaults`, then the cluster
// built, and its plausibility checked against `catalog` (Machine::warnings). Every error names the
// file and the JSON path; nothing is built from a bad file.
// `catalog` resolves the GPU, NVLink and NIC names (a catalog with overrides for what-ifs).
Machine build_machine(const ConfigDocument& doc, const ProtocolParams& defaults = ProtocolParams::builtin(),
                      const hw::Catalog& catalog = hw::Catalog::builtin());
// Reads `path` and applies "--set /json/pointer=value" overrides in order, then build_machine.
Machine load_machine(const std::string& path, const std::vector<std::string>& overrides = {},
                     const hw::Catalog& catalog = hw::Catalog::builtin());

}  // namespace cs::coll
