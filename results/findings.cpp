#include "results/findings.h"

#include <cstdio>

#include "core/errors.h"

namespace cs::results {
namespace {

// A share for a sentence: "43%"; one decimal near the ends, so that neither a small share nor
// the rest of a whole reads as 0% or 100% ("0.7%", "99.6%"); "<0.1%" below 0.1%.
std::string percent(double share) {
  char buf[32];
  if (share <= 0) return "0%";
  if (share < 0.001) return "<0.1%";
  const bool near_an_end = share < 0.01 || (share > 0.99 && share < 1);
  std::snprintf(buf, sizeof buf, near_an_end ? "%.1f%%" : "%.0f%%", 100 * share);
  return buf;
}

std::string gpus_text(int gpus) { return std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"); }

Duration compute_of(const RankBreakdown& b) {
  return b.time[static_cast<std::size_t>(Stall::kCompute)];
}

// The non-compute category whose share grew most from `before` to `after`; none when none grew.
// Ties go to the first category in kStallNames' order.
std::optional<Stall> largest_growth(const std::array<double, kStallCount>& before,
                                    const std::array<double, kStallCount>& after) {
  std::optional<Stall> grew;
  double most = 0;
  for (int k = 1; k < kStallCount; ++k) {
    const double growth = after[static_cast<std::size_t>(k)] - before[static_cast<std::size_t>(k)];
    if (growth > most) {
      most = growth;
      grew = static_cast<Stall>(k);
    }
  }
  return grew;
}

ScalingFinding compare_points(const std::vector<ScalingPoint>& points,
                              const std::vector<ScalingRow>& rows, ScalingVerdict verdict,
                              std::size_t at, std::size_t against) {
  ScalingFinding f;
  f.verdict = verdict;
  f.at = at;
  f.against = against;
  f.grew = largest_growth(rows[against].shares, rows[at].shares);
  if (f.grew) {
    f.share_against = rows[against].shares[static_cast<std::size_t>(*f.grew)];
    f.share_at = rows[at].shares[static_cast<std::size_t>(*f.grew)];
  }
  const std::string growth =
      f.grew ? std::string(to_string(*f.grew)) + " grew most against " +
                   gpus_text(points[against].gpus) + ", from " + percent(f.share_against) + " to " +
                   percent(f.share_at) + " of each iteration"
             : "no stall's share of the iteration grew against " + gpus_text(points[against].gpus);
  const auto efficiency = [&](std::size_t i) { return percent(rows[i].efficiency); };
  switch (verdict) {
    case ScalingVerdict::kStopsPaying:
      f.text = "adding GPUs stops paying at " + gpus_text(points[at].gpus) +
               " (throughput no longer grows): " + growth;
      break;
    case ScalingVerdict::kEfficiencyFalls:
      f.text =
          "scaling efficiency falls to " + efficiency(at) + " at " + gpus_text(points[at].gpus);
      if (at + 1 != points.size())
        f.text += " (" + efficiency(points.size() - 1) + " at " +
                  std::to_string(points.back().gpus) + ")";
      f.text += ": " + growth;
      break;
    case ScalingVerdict::kHolds:
      f.text = "scaling holds up to " + gpus_text(points[at].gpus) + " (efficiency " +
               efficiency(at) + ")";
      if (f.grew) f.text += "; " + growth;
      break;
  }
  return f;
}

}  // namespace

std::array<double, kStallCount> stall_shares(const std::vector<RankBreakdown>& stalls,
                                             Duration iteration) {
  std::array<double, kStallCount> shares = mean_stall_seconds(stalls);
  const double t = to_seconds(iteration);
  for (double& s : shares) s = t > 0 ? s / t : 0;
  return shares;
}

LargestStall largest_stall(const std::vector<RankBreakdown>& stalls, Duration iteration) {
  const std::array<double, kStallCount> shares = stall_shares(stalls, iteration);
  LargestStall out;
  out.compute_share = shares[static_cast<std::size_t>(Stall::kCompute)];
  for (int k = 1; k < kStallCount; ++k) {
    if (shares[static_cast<std::size_t>(k)] > out.share) {
      out.share = shares[static_cast<std::size_t>(k)];
      out.stall = static_cast<Stall>(k);
    }
  }
  out.text = out.stall ? std::string(to_string(*out.stall)) + " takes " + percent(out.share) +
                             " of the iteration (mean over GPUs), the largest stall; compute " +
                             percent(out.compute_share)
                       : "compute takes the whole iteration on every GPU";
  return out;
}

std::vector<RankPlace> rank_places(const wl::TrainingGraph& g) {
  std::vector<RankPlace> places;
  for (std::uint32_t r = 0; r < g.graph.ranks(); ++r) {
    const int grid_rank = g.grid_rank[r];
    places.push_back({grid_rank, g.grid.coord(grid_rank).pp});
  }
  return places;
}

std::optional<LoadImbalance> load_imbalance(const std::vector<RankBreakdown>& stalls,
                                            const std::vector<RankPlace>& places,
                                            Duration iteration) {
  if (places.size() != stalls.size()) {
    throw InternalError("load_imbalance: " + std::to_string(places.size()) + " rank places for " +
                        std::to_string(stalls.size()) + " ranks");
  }
  if (stalls.size() < 2 || iteration <= Duration{0}) return std::nullopt;
  std::size_t busiest = 0, idlest = 0;
  for (std::size_t r = 1; r < stalls.size(); ++r) {
    if (compute_of(stalls[r]) > compute_of(stalls[busiest])) busiest = r;
    if (compute_of(stalls[r]) < compute_of(stalls[idlest])) idlest = r;
  }
  const Duration hi = compute_of(stalls[busiest]), lo = compute_of(stalls[idlest]);
  const Duration d = hi - lo;  // how much longer the idle rank does not compute
  const Duration not_computing = iteration - lo;
  // The compute differs by at least 2%, and explains at least half of the idle rank's idle time.
  if (hi <= Duration{0} || d * 50 < hi || d * 2 < not_computing) return std::nullopt;
  LoadImbalance f;
  f.busiest = places[busiest];
  f.idlest = places[idlest];
  f.cause = f.busiest.stage != f.idlest.stage ? ImbalanceCause::kUnevenStages
                                              : ImbalanceCause::kStraggler;
  f.longer = lo > Duration{0} ? to_seconds(hi) / to_seconds(lo) - 1 : 0;
  f.share = to_seconds(d) / to_seconds(iteration);
  f.idle_share = to_seconds(not_computing) / to_seconds(iteration);
  char longer[32];
  std::snprintf(longer, sizeof longer, "%.0f%%", 100 * f.longer);
  const std::string busy = std::to_string(f.busiest.grid_rank),
                    idle = std::to_string(f.idlest.grid_rank);
  const std::string wait = " therefore waits " + percent(f.share) +
                           " of the iteration more than rank " + busy + " (" +
                           percent(f.idle_share) + " not computing in all)";
  if (f.cause == ImbalanceCause::kUnevenStages) {
    f.text = "uneven pipeline stages: rank " + busy + " (stage " + std::to_string(f.busiest.stage) +
             ") computes " + longer + " longer than rank " + idle + " (stage " +
             std::to_string(f.idlest.stage) + "), which" + wait;
  } else {
    f.text = "a straggler: rank " + busy + " computes " + longer + " longer than its peers; rank " +
             idle + wait;
  }
  return f;
}

ScalingStudy analyze_scaling(const std::vector<ScalingPoint>& points) {
  if (points.empty()) throw InternalError("analyze_scaling: no points");
  ScalingStudy study;
  const ScalingPoint& first = points.front();
  for (const ScalingPoint& p : points) {
    ScalingRow row;
    row.speedup = first.samples_per_s > 0 ? p.samples_per_s / first.samples_per_s : 0;
    row.efficiency = row.speedup / (static_cast<double>(p.gpus) / first.gpus);
    row.shares = stall_shares(p.stalls, p.iteration);
    row.largest = largest_stall(p.stalls, p.iteration);
    study.rows.push_back(row);
  }
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (!study.stops_paying && points[i].samples_per_s <= points[i - 1].samples_per_s)
      study.stops_paying = i;
    if (!study.efficiency_below_90pct && study.rows[i].efficiency < 0.9)
      study.efficiency_below_90pct = i;
  }
  if (study.stops_paying) {
    study.finding = compare_points(points, study.rows, ScalingVerdict::kStopsPaying,
                                   *study.stops_paying, *study.stops_paying - 1);
  } else if (study.efficiency_below_90pct) {
    study.finding = compare_points(points, study.rows, ScalingVerdict::kEfficiencyFalls,
                                   *study.efficiency_below_90pct, 0);
  } else {
    study.finding =
        compare_points(points, study.rows, ScalingVerdict::kHolds, points.size() - 1, 0);
  }
  return study;
}

}  // namespace cs::results
