#include "calibration/probe/stats.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/statistics.h"

namespace cs::probe {

SampleSummary summarize(std::vector<double> seconds) {
  if (seconds.empty()) throw InternalError("summary of no samples");
  std::sort(seconds.begin(), seconds.end());
  SampleSummary s;
  s.samples = static_cast<int>(seconds.size());
  s.min_s = seconds.front();
  s.median_s = quantile(seconds, 0.5);
  s.p10_s = quantile(seconds, 0.1);
  s.p90_s = quantile(seconds, 0.9);
  s.spread = s.median_s > 0 ? (s.p90_s - s.p10_s) / s.median_s : 0.0;
  return s;
}

cal::Timing to_timing(const SampleSummary& s, int discarded_throttled) {
  cal::Timing t;
  t.median = duration_from_seconds(s.median_s);
  t.p10 = duration_from_seconds(s.p10_s);
  t.p90 = duration_from_seconds(s.p90_s);
  t.min = duration_from_seconds(s.min_s);
  t.samples = s.samples;
  t.discarded_throttled = discarded_throttled;
  return t;
}

StopReason should_stop(const StopRule& rule, int kept, double spread, double elapsed_s) {
  if (kept >= rule.max_samples) return StopReason::kMaxSamples;
  if (kept >= rule.min_samples) {
    if (spread < rule.target_spread) return StopReason::kConverged;
    if (elapsed_s >= rule.time_limit_s) return StopReason::kTimeLimit;
  }
  if (elapsed_s >= rule.time_limit_s * rule.hard_limit_factor) return StopReason::kHardLimit;
  return StopReason::kContinue;
}

bool spread_check_due(const StopRule& rule, int kept, int last_checked) {
  if (kept < rule.min_samples) return false;
  if (last_checked < rule.min_samples) return true;
  return kept >= last_checked + std::max(1, last_checked / 20);
}

}  // namespace cs::probe
