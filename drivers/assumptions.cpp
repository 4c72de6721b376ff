#include "drivers/assumptions.h"

#include <set>

#include "sim/collectives/network_layout.h"

namespace cs::drv {
namespace {

void add_if_judgement(std::vector<SourcedFact>& out, const SourcedFact* f) {
  if (f != nullptr && f->is_judgement()) out.push_back(*f);
}

}  // namespace

std::vector<SourcedFact> training_assumptions(const coll::Machine& machine, const hw::Catalog& catalog,
                                              std::span<const topo::NodeId> job_gpus, const std::string& dtype,
                                              const cal::ProfileModel* profile) {
  const topo::Cluster& cluster = machine.cluster;
  std::vector<SourcedFact> out;
  std::set<std::string> gpu_models;
  for (topo::NodeId g : job_gpus) gpu_models.insert(cluster.gpu_spec(g).name);
  for (const std::string& gpu : gpu_models) {
    const std::string base = "/gpus/" + gpu + "/efficiency/";
    const bool measured_gemm = profile != nullptr && profile->has_gemm(dtype);
    const bool measured_memory = profile != nullptr && profile->memory(Bytes{1}).has_value();
    const bool measured_launch = profile != nullptr && profile->launch_overhead().has_value();
    const bool measured_overlap = profile != nullptr && profile->overlap_slowdown().has_value();
    if (!measured_gemm) {
      add_if_judgement(out, catalog.fact(base + "gemm"));
      // The GEMM shape model's inputs (sim/compute/gemm_model.h).
      const std::string shape_model = "/gpus/" + gpu + "/gemm/";
      add_if_judgement(out, catalog.fact(shape_model + "mamf/" + dtype));
      for (const char* key : {"sms", "tile", "mamf_shape"}) add_if_judgement(out, catalog.fact(shape_model + key));
    }
    add_if_judgement(out, catalog.fact(base + "attention"));
    if (!measured_memory) add_if_judgement(out, catalog.fact(base + "memory"));
    if (!measured_launch) add_if_judgement(out, catalog.fact(base + "kernel_launch"));
    if (!measured_overlap) add_if_judgement(out, catalog.fact(base + "overlap_slowdown"));
  }
  bool class_present[hw::kLinkClassCount] = {};
  std::set<std::string> nics, reducing_switches;
  for (std::uint32_t l = 0; l < cluster.link_count(); ++l) {
    class_present[static_cast<int>(cluster.link(topo::LinkId{l}).link_class)] = true;
  }
  for (std::uint32_t n = 0; n < cluster.node_count(); ++n) {
    const topo::NodeInfo& info = cluster.node(topo::NodeId{n});
    if (info.kind == topo::NodeKind::kNic && !info.model.empty()) nics.insert(info.model);
    if (info.kind == topo::NodeKind::kNvSwitch && info.reduction_bandwidth.value() > 0 && !info.model.empty()) {
      reducing_switches.insert(info.model);
    }
  }
  for (int i = 0; i < hw::kLinkClassCount; ++i) {
    if (!class_present[i]) continue;
    const std::string base = std::string("/link_classes/") + hw::to_string(static_cast<hw::LinkClass>(i)) + "/";
    for (const char* key : {"efficiency", "step_latency", "ll_step_latency"}) {
      // Network links run at their NICs' packet efficiency unless the class value applies
      // (coll::link_efficiencies).
      if (i == static_cast<int>(hw::LinkClass::kNetwork) && std::string(key) == "efficiency" &&
          !coll::uses_network_class_efficiency(machine)) {
        continue;
      }
      auto it = machine.protocol.facts.find(base + key);
      if (it != machine.protocol.facts.end()) add_if_judgement(out, &it->second);
    }
    if (!machine.protocol.facts.count(base + "latency")) add_if_judgement(out, catalog.fact(base + "latency"));
  }
  if (auto it = machine.protocol.facts.find("/collective_model/launch_latency"); it != machine.protocol.facts.end()) {
    add_if_judgement(out, &it->second);
  }
  for (const std::string& nic : nics) {
    add_if_judgement(out, catalog.fact("/nics/" + nic + "/latency"));
    if (!coll::uses_network_class_efficiency(machine)) {
      for (const char* key : {"/packet/payload", "/packet/overhead"}) add_if_judgement(out, catalog.fact("/nics/" + nic + key));
    }
  }
  for (const std::string& nv : reducing_switches) add_if_judgement(out, catalog.fact("/nvlink/" + nv + "/switch_reduction_per_gpu"));
  if (!reducing_switches.empty()) {
    // NVLS's own latencies (NCCL's cost-model values) apply wherever a switch reduces in-switch.
    for (const char* key : {"/collective_model/nvls_base_latency", "/collective_model/nvls_step_latency"}) {
      if (auto it = machine.protocol.facts.find(key); it != machine.protocol.facts.end()) add_if_judgement(out, &it->second);
    }
  }
  return out;
}

}  // namespace cs::drv
