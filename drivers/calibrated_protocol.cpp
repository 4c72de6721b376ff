#include "drivers/calibrated_protocol.h"

#include <algorithm>

#include "core/errors.h"

namespace cs::drv {
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

CalibratedProtocol calibrate_protocol(const cal::ProfileModel& profile, const coll::ProtocolParams& base) {
  CalibratedProtocol out{base, nlohmann::json::object(), nlohmann::json::object()};
  for (int i = 0; i < hw::kLinkClassCount; ++i) {
    const auto cls = static_cast<hw::LinkClass>(i);
    coll::LinkClassProtocol& params = out.protocol.of(cls);
    const cal::NetworkClassModel* m = profile.network(hw::to_string(cls));
    const bool measured = m != nullptr && m->link_efficiency > 0;
    if (measured) {
      params.efficiency = std::min(1.0, m->link_efficiency);
      params.step_latency = m->step_latency;
      const std::string cls_path = std::string("/link_classes/") + hw::to_string(cls);
      const std::string status = "measured: fitted from the calibration profile's " + m->from;
      out.protocol.replaced(cls_path + "/efficiency", std::to_string(params.efficiency), "measured", status, m->from);
      out.protocol.replaced(cls_path + "/step_latency", format_duration(params.step_latency), "measured", status, m->from);
      if (m->ll_step_latency) {
        params.ll_step_latency = *m->ll_step_latency;
        out.protocol.replaced(cls_path + "/ll_step_latency", format_duration(params.ll_step_latency), "measured", status,
                              m->from);
      }
    }
    out.link_classes[hw::to_string(cls)] = {{"efficiency", params.efficiency},
                                            {"step_latency_s", to_seconds(params.step_latency)},
                                            {"ll_step_latency_s", to_seconds(params.ll_step_latency)},
                                            {"provenance", measured ? "measured" : "nominal"},
                                            {"from", measured ? m->from : std::string("catalog")}};
  }
  // The launch latency was fitted together with the step latencies (or assumed with them, when
  // the profile could not tell them apart): the simulator takes it with them.
  const std::optional<cal::CollectiveLaunchModel>& launch = profile.profile().models.collective_launch;
  if (launch) {
    out.protocol.launch_latency = launch->latency;
    // An assumed launch latency stays listed as an assumption, now the profile's.
    const bool fitted = launch->status == "fitted";
    out.protocol.replaced("/collective_model/launch_latency", format_duration(launch->latency),
                          fitted ? "measured" : "assumed",
                          (fitted ? "measured: fitted from the calibration profile's " : "assumed by the calibration profile: ") +
                              launch->from,
                          launch->from);
  }
  out.collective_launch = {{"latency_s", to_seconds(out.protocol.launch_latency)},
                           {"provenance", !launch ? "nominal" : launch->status == "fitted" ? "measured" : "assumed"},
                           {"from", launch ? launch->from : std::string("catalog")}};
  return out;
}

nlohmann::json calibration_summary(const cal::ProfileModel& profile, const std::string& profile_path,
                                   const CalibratedProtocol& calibrated) {
  const cal::Profile& p = profile.profile();
  return {{"profile", profile_path},
          {"kind", p.provenance.kind},
          {"created", p.provenance.created},
          {"gpu", p.inventory.gpus.front().name},
          {"link_classes", calibrated.link_classes},
          {"collective_launch", calibrated.collective_launch}};
}

void add_compute_tally(nlohmann::json& calibration, const compute::ProvenanceTally& tally) {
  calibration["compute_ops"] = {{"gemm", counts(tally.gemm)},
                                {"memory", counts(tally.memory)},
                                {"launch", counts(tally.launch)},
                                {"overlap", counts(tally.overlap)}};
}

}  // namespace cs::drv
