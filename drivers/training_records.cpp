#include "drivers/training_records.h"

#include <span>
#include <string_view>

#include "core/errors.h"
#include "workloads/flop_conventions.h"

namespace cs::drv {
namespace {

void check_against_config(const Experiment& e, const wl::Model& model, const ConfigNode& config) {
  auto expect = [&](const char* key, std::int64_t simulated) {
    const ConfigNode v = config.at(key);
    if (v.as_int() != simulated) {
      v.fail("the record's experiment has " + std::to_string(simulated) + " where the published configuration has " +
             std::to_string(v.as_int()));
    }
  };
  expect("tp", e.plan.tp);
  expect("pp", e.plan.pp);
  expect("dp", e.plan.dp);
  expect("num_gpus", e.plan.gpus());
  expect("global_batch", e.plan.global_batch);
  expect("seq_len", e.plan.sequence_length);
  expect("layers", model.transformer.layers);
  expect("hidden_size", model.transformer.hidden);
  expect("attention_heads", model.transformer.heads);
  expect("vocab", model.transformer.vocab);
}

}  // namespace

std::vector<TrainingRecord> load_training_records(const ConfigDocument& doc, const std::string& base_dir) {
  std::vector<TrainingRecord> out;
  for (const ConfigNode& record : doc.root().at("records").elements()) {
    TrainingRecord r;
    r.id = record.at("id").as_string();
    r.use = record.at("use").as_choice({"fit", "check"}) == 0 ? "fit" : "check";
    if (auto fits = record.find("fits")) {
      for (const auto& [constant, how] : fits->members()) {
        how.as_string();
        r.fits.push_back(constant);
      }
    }
    if (r.use == "fit" && r.fits.empty()) record.at("use").fail("a fit record names the constants fitted on it under \"fits\"");
    r.experiment = parse_experiment(record.at("experiment"), base_dir);
    const ConfigNode config = record.at("config");
    check_against_config(r.experiment, load_model(r.experiment), config);
    r.params_billion = config.at("params_billion").as_number();
    const ConfigNode measured = record.at("measured");
    r.published_tflops_per_gpu = measured.at("tflops_per_gpu").as_number();
    if (auto c = measured.find("convention")) {
      r.convention = std::string(wl::kFlopConventionNames[c->as_choice(std::span<const std::string_view>(wl::kFlopConventionNames))]);
    }
    out.push_back(std::move(r));
  }
  return out;
}

double TrainingRecord::predicted_tflops(const results::IterationResult& run) const {
  if (convention.empty()) return run.tflops_per_gpu;
  for (const auto& r : run.flop_conventions) {
    if (r.convention == convention) return r.tflops_per_gpu;
  }
  throw ConfigError(experiment.file, experiment.path, "the run reports no TFLOP/s in convention \"" + convention + "\" (only transformers with token inputs have the closed-form conventions)");
}

}  // namespace cs::drv
