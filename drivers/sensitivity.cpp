#include "drivers/sensitivity.h"

#include <map>

#include "drivers/assumptions.h"
#include "drivers/nccl_validation.h"
#include "drivers/perturbation.h"
#include "drivers/training_run.h"

namespace cs::drv {
namespace {

// The facts of `lists`, each once, by path, in the order first seen.
std::vector<SourcedFact> union_of(const std::vector<std::vector<SourcedFact>>& lists) {
  std::vector<SourcedFact> out;
  std::map<std::string, bool> seen;
  for (const auto& list : lists) {
    for (const SourcedFact& f : list) {
      if (seen.emplace(f.file + f.path, true).second) out.push_back(f);
    }
  }
  return out;
}

}  // namespace

std::vector<SensitivityRow> training_sensitivity(const std::vector<TrainingRecord>& records, const std::vector<std::size_t>& rows,
                                                 const std::vector<double>& factors, const Progress& progress) {
  const std::vector<TrainingRowResult> base = simulate_rows(records, rows, {}, progress);
  std::vector<std::vector<SourcedFact>> lists;
  for (const TrainingRowResult& r : base) lists.push_back(r.assumptions);
  std::vector<SensitivityRow> out;
  for (const SourcedFact& fact : union_of(lists)) {
    for (double wanted : factors) {
      const double factor = feasible_factor(fact, wanted);
      SensitivityRow s{fact, factor, {}};
      for (const TrainingRowResult& b : base) {
        const TrainingRecord& rec = records.at(b.row);
        const nlohmann::json cluster = ConfigDocument::load(rec.experiment.cluster, rec.experiment.cluster_overrides).json();
        const Perturbation p = scaled(fact, factor, cluster);
        const auto moved = simulate_rows(records, {b.row}, {p.cluster_overrides, p.hardware_overrides}, progress);
        s.error_change.push_back(moved.front().error(rec) - b.error(rec));
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<SensitivityRow> nccl_sensitivity(const ConfigDocument& doc, const std::vector<double>& factors, const Progress& progress) {
  if (progress) progress("every record as published");
  const std::vector<NcclPoint> base = validate_nccl(doc);
  std::vector<std::vector<SourcedFact>> lists;
  for (const ConfigNode& record : doc.root().at("records").elements()) {
    if (!record.has("cluster")) continue;
    const coll::Machine m = nccl_machine(record.at("cluster").as_string(), {});
    std::vector<SourcedFact> facts = training_assumptions(m, hw::Catalog::builtin(), m.cluster.gpus(), "bf16", nullptr);
    std::erase_if(facts, [](const SourcedFact& f) { return f.path.rfind("/gpus/", 0) == 0; });
    lists.push_back(std::move(facts));
  }
  std::vector<SensitivityRow> out;
  for (const SourcedFact& fact : union_of(lists)) {
    for (double wanted : factors) {
      const double factor = feasible_factor(fact, wanted);
      if (progress) progress(fact.path);
      const std::vector<NcclPoint> moved = validate_nccl(doc, [&](const nlohmann::json& cluster) {
        const Perturbation p = scaled(fact, factor, cluster);
        return MachineOverrides{p.cluster_overrides, p.hardware_overrides};
      });
      SensitivityRow s{fact, factor, {}};
      for (std::size_t i = 0; i < base.size(); ++i) s.error_change.push_back(moved[i].error() - base[i].error());
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace cs::drv
