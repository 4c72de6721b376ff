// The experiment's "availability" object (docs/experiment-format.md, docs/availability.md): the
// failure process that interrupts the job and its checkpoint policy, parsed strictly. Values that
// need the cluster, the model or the plan (the job's GPUs, a save time derived from the storage)
// are checked where the run builds its report (drivers/availability_report.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/long_duration.h"

namespace cs::drv {

// The restart time assumed when the experiment gives none (listed among the report's assumptions).
inline constexpr LongDuration kDefaultRestartTime = long_minutes(5);
// Gaps between failures simulated (about 50 ms of CPU; the standard error of the ETTR about 2e-4
// at a 2.8 h job MTBF).
inline constexpr std::int64_t kSimulatedInterruptions = 200000;

struct AvailabilitySpec {
  std::string where;                        // the object's JSON path
  // Either a per-GPU MTBF ...
  std::optional<LongDuration> mtbf_per_gpu;
  // ... or interruptions observed over a window on `observed_gpus` GPUs (0: the job's).
  std::int64_t interruptions = 0;
  LongDuration window{0};
  int observed_gpus = 0;
  std::optional<LongDuration> checkpoint_interval;  // none: the simulated optimum ("optimal")
  std::optional<LongDuration> save_time;            // none: derived from the cluster's storage
  std::optional<LongDuration> restart_time;         // none: kDefaultRestartTime, assumed
  std::uint64_t seed = 1;
};

AvailabilitySpec parse_availability(const ConfigNode& node);

}  // namespace cs::drv
