#include "sim/experiment/apply_profile.h"

#include "core/errors.h"
#include "sim/experiment/experiment.h"
#include "topology/catalog.h"

namespace cs::exp {
namespace {

nlohmann::json counts(const compute::ProvenanceTally::Counts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < c.size(); ++i) j[cal::to_string(static_cast<cal::EstimateProvenance>(i))] = c[i];
  return j;
}

}  // namespace

void check_profile_gpu(const cal::ProfileModel& profile, const topo::Cluster& cluster, const std::string& path,
                       const std::string& file, const std::string& where) {
  const cal::Profile& p = profile.profile();
  const std::string cluster_gpu = cluster.gpu_spec(cluster.gpus()[0]).name;
  if (p.inventory.gpus.empty()) throw ConfigError(file, where, "the profile \"" + path + "\" lists no GPU");
  const cal::GpuInventory& g = p.inventory.gpus.front();
  if (g.catalog_gpu != cluster_gpu) {
    throw ConfigError(file, where, "the profile \"" + path + "\" was measured on " + g.name + " (catalog name \"" +
                                       g.catalog_gpu + "\") but the cluster's GPUs are " + cluster_gpu);
  }
}

nlohmann::json apply_profile(const cal::ProfileModel& profile, const Experiment& e, topo::Cluster& cluster) {
  const cal::Profile& p = profile.profile();
  const std::string where = e.profile_where.empty() ? "--profile" : e.profile_where;
  // Named by a JSON path of the experiment, or by the command-line option.
  check_profile_gpu(profile, cluster, e.profile, where.rfind('/', 0) == 0 ? e.file : std::string(), where);
  return {{"profile", e.profile},
          {"kind", p.provenance.kind},
          {"created", p.provenance.created},
          {"gpu", p.inventory.gpus.front().name},
          {"link_classes", apply_network(profile, cluster)}};
}

nlohmann::json apply_network(const cal::ProfileModel& profile, topo::Cluster& cluster) {
  nlohmann::json classes = nlohmann::json::object();
  for (int i = 0; i < topo::kLinkClassCount; ++i) {
    const auto cls = static_cast<topo::LinkClass>(i);
    topo::LinkClassParams params = cluster.link_class_params(cls);
    const cal::NetworkClassModel* m = profile.network(topo::to_string(cls));
    const bool measured = m != nullptr && m->link_efficiency > 0;
    if (measured) {
      params.efficiency = std::min(1.0, m->link_efficiency);
      params.step_latency = m->step_latency;
      cluster.set_link_class_params(cls, params);
    }
    classes[topo::to_string(cls)] = {{"efficiency", params.efficiency},
                                     {"step_latency_s", to_seconds(params.step_latency)},
                                     {"provenance", measured ? "measured" : "nominal"},
                                     {"from", measured ? m->from : std::string("catalog")}};
  }
  return classes;
}

void add_compute_tally(nlohmann::json& calibration, const compute::ProvenanceTally& tally) {
  calibration["compute_ops"] = {{"gemm", counts(tally.gemm)},
                                {"memory", counts(tally.memory)},
                                {"launch", counts(tally.launch)},
                                {"overlap", counts(tally.overlap)}};
}

}  // namespace cs::exp
