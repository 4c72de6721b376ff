// Availability of a long training job: failures interrupt it, checkpoints bound the work each
// interruption loses, and the effective training time ratio (ETTR) is the share of wall-clock
// time that turns into training progress. docs/availability.md has the derivations and figures.
//
// Failure process. The job fails as a Poisson process of rate 1/T_f: its N GPUs (each standing
// for its share of hosts, switches, cables and software, as published interruption counts are
// attributed) fail independently and memorylessly, so
//   T_f = MTBF_gpu / N,
// with MTBF_gpu given, or observed: `n` interruptions over a window W on M GPUs give
// MTBF_gpu = W M / n (Llama 3 405B, arXiv 2407.21783 Table 5: 466 in 54 days on 16,384 H100,
// MTBF_gpu = 45,600 h counting every interruption; the 50,700 h quoted counts the 419
// unexpected ones).
//
// Checkpoint policy. The job saves a checkpoint after every T_c of training progress; the save
// blocks training for T_s. A failure loses the progress since the last completed checkpoint and
// any save in flight, then costs T_r to restart (reschedule, reload, warm up); a failure during
// a restart starts the restart again.
//
// Closed forms (all for T_s, T_r << T_f):
//   Young (1974):      T_c = sqrt(2 T_s T_f)
//   Daly (2006, FGCS 22, "A higher order estimate of the optimum checkpoint interval"):
//                      T_c = sqrt(2 T_s T_f) [1 + (1/3) sqrt(T_s / (2 T_f)) + (1/9) T_s / (2 T_f)] - T_s
//                      (T_f when T_s >= 2 T_f)
//   availability-optimal with restart (arXiv 2410.18124):
//                      T_c = T_s + sqrt(2 (T_f + T_r) T_s + T_s^2)
//   first-order ETTR:  1 - T_s / T_c - (T_c / 2 + T_r) / T_f
//                      (a save per interval, half an interval lost and a restart per failure)
//   renewal ETTR:      T_c e^(-T_r / T_f) / (T_f (e^((T_c + T_s) / T_f) - 1)), the exact expectation
//                      of the process above: between failures (mean T_f apart) the job restarts,
//                      then completes one interval per T_c + T_s it survives. Its maximum over T_c
//                      does not depend on T_r; it solves e^((x + T_s)/T_f) (1 - x/T_f) = 1, which
//                      Daly's series approximates.
//
// Simulation. FailureSample draws the gaps between failures (exponential, mean T_f) from one
// seeded stream and replays them under any policy (common random numbers: two intervals are
// compared on the same failures). Each gap is one life: a restart, then whole intervals and saves
// until the failure. ETTR = progress kept / wall time; its standard error is the ratio
// estimator's over independent lives. optimal_interval searches the simulated ETTR for its
// maximum: a log-spaced grid from Young/4 to 4 Young, then golden-section search around the best
// point.
//
// Limits: failures memoryless and independent (no infant mortality, no correlated failures of a
// rack or a switch); restart and save times constant; asynchronous checkpointing (saving while
// training on) and in-memory checkpoints to peers are not modelled; a restart after a hardware
// failure is assumed to find a spare so the job keeps its N GPUs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/long_duration.h"

namespace cs::drv {

struct FailureProcess {
  LongDuration mtbf_per_gpu{0};
  int gpus = 0;                 // N, the job's GPUs
  LongDuration job_mtbf() const { return mtbf_per_gpu / static_cast<double>(gpus); }  // T_f
};

// From a per-GPU MTBF.
FailureProcess failures_from_gpu_mtbf(LongDuration mtbf_per_gpu, int job_gpus);
// From `interruptions` observed over `window` on `observed_gpus` GPUs, scaled to `job_gpus`.
FailureProcess failures_from_observation(std::int64_t interruptions, LongDuration window, int observed_gpus, int job_gpus);

struct CheckpointPolicy {
  LongDuration interval{0};  // T_c, training progress between checkpoints
  LongDuration save{0};      // T_s, blocking
  LongDuration restart{0};   // T_r
};

LongDuration young_interval(LongDuration save, LongDuration job_mtbf);
LongDuration daly_interval(LongDuration save, LongDuration job_mtbf);
LongDuration availability_optimal_interval(LongDuration save, LongDuration restart, LongDuration job_mtbf);
// May be negative when failures come faster than the policy can keep up with.
double first_order_ettr(const CheckpointPolicy& p, LongDuration job_mtbf);
double renewal_ettr(const CheckpointPolicy& p, LongDuration job_mtbf);

// What a simulated run gave. useful + checkpointing + restarting + lost = wall.
struct EttrSimulation {
  double ettr = 0;
  double standard_error = 0;
  std::int64_t interruptions = 0;
  LongDuration wall{0};
  LongDuration useful{0};         // progress kept
  LongDuration checkpointing{0};  // completed saves
  LongDuration restarting{0};     // restarts, interrupted ones included
  LongDuration lost{0};           // progress since the last checkpoint and saves in flight at a failure
};

// A seeded sample of `interruptions` gaps between failures of a job of MTBF `job_mtbf`.
class FailureSample {
 public:
  FailureSample(LongDuration job_mtbf, std::int64_t interruptions, std::uint64_t seed);
  EttrSimulation run(const CheckpointPolicy& p) const;
  LongDuration job_mtbf() const { return job_mtbf_; }

 private:
  LongDuration job_mtbf_;
  std::vector<double> gaps_s_;  // seconds, in draw order
};

struct IntervalSearch {
  LongDuration interval{0};
  EttrSimulation at_best;
  int evaluations = 0;
};

// The interval of highest simulated ETTR on `sample` for the given save and restart times.
IntervalSearch optimal_interval(const FailureSample& sample, LongDuration save, LongDuration restart);

}  // namespace cs::drv
