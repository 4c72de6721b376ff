// What a run reports of its availability (summary.json "availability", docs/outputs.md): the job's
// failure rate, the checkpoint it saves, the interval it uses and the optimal ones, the effective
// training time ratio (ETTR) by the closed forms and by simulation, and with a training goal the
// time and cost to train once failures are counted. drivers/availability_report.h fills it
// (the model is drivers/availability.h); the writers only read it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/long_duration.h"
#include "core/sourced_value.h"
#include "core/units.h"

namespace cs::results {

struct AvailabilityReport {
  // Failures.
  LongDuration mtbf_per_gpu{0};
  int gpus = 0;
  LongDuration job_mtbf{0};
  std::string failure_source;            // "mtbf_per_gpu", or "466 interruptions in 54.0 d on 16384 GPUs"
  // The checkpoint; size, writers and bandwidth only when derived from the cluster's storage.
  std::optional<Bytes> checkpoint_bytes;
  int writers = 0;
  Bandwidth write_bandwidth{0};
  LongDuration save_time{0};
  bool save_time_given = false;
  LongDuration restart_time{0};
  // Intervals.
  LongDuration interval{0};              // the one the ETTR is for
  bool interval_given = false;           // false: the simulated optimum
  LongDuration young{0}, daly{0}, availability_optimal{0}, simulated_optimal{0};
  // ETTR at `interval`.
  double ettr_first_order = 0;
  double ettr_renewal = 0;               // the exact expectation of the simulated process
  double ettr_simulated = 0;
  double ettr_standard_error = 0;
  std::int64_t simulated_interruptions = 0;
  LongDuration simulated_time{0};
  LongDuration lost_work{0};             // progress lost and saves interrupted, over the simulated time
  std::uint64_t seed = 0;
  // With a training goal: time to train / ETTR, and the cost scaled alike.
  std::optional<double> effective_time_to_train_s;
  std::optional<Money> effective_cost;
  std::vector<SourcedFact> assumptions;
};

// summary.json's "availability" object.
nlohmann::json availability_json(const AvailabilityReport& a);

}  // namespace cs::results
