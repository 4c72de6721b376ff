#include "sim/collectives/machine.h"

#include "topology/cluster_loader.h"
#include "topology/plausibility.h"

namespace cs::coll {

Machine build_machine(const ConfigDocument& doc, const ProtocolParams& defaults, const hw::Catalog& catalog) {
  const topo::ClusterSpec spec = topo::parse_cluster_spec(doc, catalog);
  ProtocolParams protocol = parse_protocol_overrides(doc.root(), defaults);
  topo::Cluster cluster = topo::build_cluster(spec);
  std::vector<Warning> warnings = topo::plausibility_warnings(spec, cluster, catalog);
  return Machine{std::move(cluster), std::move(protocol), std::move(warnings)};
}

Machine load_machine(const std::string& path, const std::vector<std::string>& overrides, const hw::Catalog& catalog) {
  return build_machine(ConfigDocument::load(path, overrides), ProtocolParams::builtin(), catalog);
}

}  // namespace cs::coll
