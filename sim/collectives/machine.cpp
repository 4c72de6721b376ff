#include "sim/collectives/machine.h"

#include "topology/cluster_loader.h"

namespace cs::coll {

Machine build_machine(const ConfigDocument& doc, const ProtocolParams& defaults, const hw::Catalog& catalog) {
  const topo::ClusterSpec spec = topo::parse_cluster_spec(doc, catalog);
  ProtocolParams protocol = parse_protocol_overrides(doc.root(), defaults);
  return Machine{topo::build_cluster(spec), std::move(protocol)};
}

Machine load_machine(const std::string& path, const std::vector<std::string>& overrides, const hw::Catalog& catalog) {
  return build_machine(ConfigDocument::load(path, overrides), ProtocolParams::builtin(), catalog);
}

}  // namespace cs::coll
