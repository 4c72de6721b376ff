// Published training runs as experiments: the records of a validation table
// (configs/validation/megatron-sc21-table1.json), each with the published configuration
// (`config`), what was measured (`measured`) and the experiment clustersim simulates for it
// (`experiment`, parsed by the experiment parser). The experiment must be the published
// configuration, or the row would validate something else: its plan's degrees, GPUs, batch and
// sequence and its model's shape are checked against `config`.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "drivers/experiment.h"
#include "results/training_run.h"

namespace cs::drv {

struct TrainingRecord {
  std::string id;                       // "megatron-sc21-row1"
  std::string use;                      // "fit" (a constant was fitted on it) or "check"
  std::vector<std::string> fits;        // the constants fitted on it (JSON paths in their files)
  Experiment experiment;
  double params_billion = 0;            // config.params_billion, for tables
  double published_tflops_per_gpu = 0;  // measured.tflops_per_gpu
  // measured.convention: the FLOP convention the published number counts in
  // (workloads/flop_conventions.h); empty when absent: the run's headline TFLOP/s per GPU
  // (training FLOPs with recomputation, Megatron's Eq. 3 for a GPT: the SC21 table's).
  std::string convention;
  // The predicted TFLOP/s per GPU to compare with the published one.
  double predicted_tflops(const results::IterationResult& run) const;
};

// Every record of the document's "records" array; `base_dir` resolves the experiments' relative
// paths. ConfigError naming the file and the JSON path of the first disagreement, for example
// "at /records/3/config/tp: the record's experiment has 4 where the published configuration has 8".
std::vector<TrainingRecord> load_training_records(const ConfigDocument& doc, const std::string& base_dir);

}  // namespace cs::drv
