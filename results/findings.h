// Findings: the sentences that say where a run's time went, each naming the stall category that
// explains the time (results/stall_attribution.h) and its share of the iteration. A share is a
// category's mean over the ranks divided by the iteration time; the categories of every rank add
// up to the iteration, so the shares of a run add up to 1.
//
// One run (`clustersim run`, summary.json):
//   - the largest stall: the non-compute category with the largest share;
//   - the load imbalance. Of the busiest rank (most compute, c_hi) and the most idle one (least,
//     c_lo), each adds up to the iteration T, so the idle one spends exactly d = c_hi - c_lo more
//     of it not computing: d / T is the idle time the imbalance explains. It is named when the
//     compute differs (d >= 2% of c_hi) and d is at least half of the idle rank's time not
//     computing, T - c_lo: the imbalance, not communication or the pipeline's fill and drain, is
//     then what mostly keeps that rank idle. The cause: pipeline stages of unequal work when the
//     two ranks are in different stages, else one rank slower than its peers (a straggler).
// A scaling study (`clustersim scale`): speedup and efficiency of each point against the first,
// and one finding that compares two points: the first point whose throughput does not grow,
// against the point before it (adding GPUs stops paying); else the first whose efficiency is
// below 90%, against the first point (efficiency falls); else the last point against the first
// (scaling holds). It names the non-compute category whose share grew most between the two
// points, with its shares at both; none when no share grew.
//
// Limits: shares are means over the simulated ranks (one per pipeline stage with symmetry on,
// every rank with a straggler); a category that grows on a few ranks only is diluted by the mean.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "results/stall_attribution.h"
#include "workloads/training_graph.h"

namespace cs::results {

// Each category's mean over the ranks / the iteration (zeros for no ranks or a zero iteration).
std::array<double, kStallCount> stall_shares(const std::vector<RankBreakdown>& stalls,
                                             Duration iteration);

// The largest non-compute category of one run.
struct LargestStall {
  std::optional<Stall> stall;  // none when the ranks only compute
  double share = 0;            // of the iteration
  double compute_share = 0;
  // "pipeline_bubble takes 43% of the iteration (mean over GPUs), the largest stall; compute 56%"
  std::string text;
};
LargestStall largest_stall(const std::vector<RankBreakdown>& stalls, Duration iteration);

// Where a simulated rank sits: its grid rank (the GPU's index in rank order) and pipeline stage.
struct RankPlace {
  int grid_rank = 0;
  int stage = 0;
};
// The places of a training graph's ranks, in graph-rank order.
std::vector<RankPlace> rank_places(const wl::TrainingGraph& g);

enum class ImbalanceCause : std::uint8_t { kUnevenStages, kStraggler };

struct LoadImbalance {
  ImbalanceCause cause = ImbalanceCause::kStraggler;
  RankPlace busiest, idlest;
  double longer = 0;      // c_hi / c_lo - 1
  double share = 0;       // d / T: the idle time the imbalance explains
  double idle_share = 0;  // (T - c_lo) / T: the idle rank's time not computing
  std::string text;
};
// `places` has one entry per breakdown. None when the ranks are balanced, or when the difference
// in compute explains less than half of the idle rank's time not computing.
std::optional<LoadImbalance> load_imbalance(const std::vector<RankBreakdown>& stalls,
                                            const std::vector<RankPlace>& places,
                                            Duration iteration);

// ---- scaling studies -------------------------------------------------------------------------

// One point of a study, as simulated.
struct ScalingPoint {
  int gpus = 0;
  Duration iteration{0};
  double samples_per_s = 0;
  std::vector<RankBreakdown> stalls;
};

struct ScalingRow {
  double speedup = 0;     // throughput / the first point's
  double efficiency = 0;  // speedup / (gpus / the first point's gpus)
  std::array<double, kStallCount> shares{};
  LargestStall largest;
};

enum class ScalingVerdict : std::uint8_t { kHolds, kEfficiencyFalls, kStopsPaying };
inline constexpr EnumName<ScalingVerdict> kScalingVerdictNames[] = {
    {ScalingVerdict::kHolds, "holds"},
    {ScalingVerdict::kEfficiencyFalls, "efficiency_falls"},
    {ScalingVerdict::kStopsPaying, "stops_paying"}};
inline const char* to_string(ScalingVerdict v) { return enum_name(kScalingVerdictNames, v); }

struct ScalingFinding {
  ScalingVerdict verdict = ScalingVerdict::kHolds;
  std::size_t at = 0;         // the point named (an index into the points)
  std::size_t against = 0;    // the point it is compared with
  std::optional<Stall> grew;  // the non-compute category whose share grew most; none when none grew
  double share_against = 0, share_at = 0;
  // "scaling efficiency falls to 88% at 32 GPUs (70% at 64): pipeline_bubble grew most against 16
  // GPUs, from 8% to 13% of each iteration"
  std::string text;
};

struct ScalingStudy {
  std::vector<ScalingRow> rows;             // one per point
  std::optional<std::size_t> stops_paying;  // the first point whose throughput does not grow
  std::optional<std::size_t>
      efficiency_below_90pct;  // the first point whose efficiency is below 90%
  ScalingFinding finding;
};
// `points` in increasing GPU counts, at least one.
ScalingStudy analyze_scaling(const std::vector<ScalingPoint>& points);

}  // namespace cs::results
