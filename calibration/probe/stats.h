// Statistics of timing samples and the stop rule of one measured point (docs/calibration.md,
// "How a point is measured"). Pure C++: unit-tested without a GPU.
//
//   quantile   core/statistics.h: linear interpolation between the closest ranks (numpy's default).
//   spread     (p90 - p10) / median, the relative width of the central 80% of the samples.
//   stop rule  at least min_samples kept samples, then stop when spread < target_spread or when
//              the point has run for time_limit; a point that cannot keep min_samples stops at
//              hard_limit_factor x time_limit with what it has.
#pragma once

#include <vector>

#include "calibration/profile.h"

namespace cs::probe {

struct SampleSummary {
  double median_s = 0, p10_s = 0, p90_s = 0, min_s = 0;
  int samples = 0;
  double spread = 0;  // (p90 - p10) / median; 0 when the median is 0
};

// Summary of samples in seconds. Throws InternalError when `seconds` is empty.
SampleSummary summarize(std::vector<double> seconds);

// The profile's form of a summary (Durations rounded to the picosecond).
cal::Timing to_timing(const SampleSummary& s, int discarded_throttled);

struct StopRule {
  int min_samples = 10;
  double target_spread = 0.005;
  double time_limit_s = 5.0;
  double hard_limit_factor = 10.0;  // stop at this multiple of the time limit whatever was kept
  int max_samples = 100000;
};

enum class StopReason { kContinue, kConverged, kTimeLimit, kHardLimit, kMaxSamples };

// `spread` is the spread of the `kept` samples (ignored below min_samples).
StopReason should_stop(const StopRule& rule, int kept, double spread, double elapsed_s);

// Whether the spread is worth recomputing after `kept` samples, given that it was last computed at
// `last_checked` samples: at min_samples and then every time the count grew by 5% (at least one),
// so that a point of 10^5 tiny samples costs O(n log n) in statistics, not O(n^2 log n).
bool spread_check_due(const StopRule& rule, int kept, int last_checked);

}  // namespace cs::probe
