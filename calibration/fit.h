// Fitting cost models to measured points (docs/calibration-profile.md, "models"). CPU only.
//
//   NominalBandwidths nominal = nominal_from_catalog(p.inventory);   // calibration/nominal.h
//   p.models = fit_models(p, nominal);
//
// The collective model is t(S) = alpha + beta S, fitted by least squares on RELATIVE error:
// minimise sum_i ((alpha + beta S_i - t_i) / t_i)^2, i.e. weighted least squares with weights
// 1/t_i^2, so an 8 B point counts as much as an 8 GiB one (plain least squares would fit the
// large sizes and leave alpha, hence every small message, badly wrong). alpha and beta are
// constrained to be >= 0 (non-negative least squares).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibration/profile.h"
#include "core/units.h"

namespace cs::cal {

// Per-GPU nominal bandwidth of each link class ("nvlink", "pcie", "network"), from the hardware
// catalog; a class that is absent has no nominal (its link efficiencies stay 0).
struct NominalBandwidths {
  std::map<std::string, Bandwidth> per_class;
};

// Fits t = alpha + beta S to (size, time) points (times > 0; others are ignored) by relative-error
// least squares with alpha, beta >= 0. Fills alpha, beta_s_per_byte, r2, mape, loo_mape, the 95%
// confidence intervals, points, min_bytes and max_bytes; leaves the identifying fields (op, ...),
// bus_bandwidth, nominal and link_efficiency for the caller.
//   r2        on the weighted (relative) problem: 1 - sum(w r^2) / sum(w (t - tw)^2), w = 1/t^2,
//             tw the weighted mean time. It can be negative when the constraints bind.
//   mape      mean of |prediction - t| / t.
//   loo_mape  the same where each point is predicted by the fit of all the other points.
//   CIs       estimate +- t(0.975, n-2) sqrt(s^2 [(X'WX)^-1]_jj), s^2 = sum(w r^2) / (n-2),
//             clipped at 0 below; with n <= 2 there is no residual freedom and the interval is
//             the estimate itself.
// Throws InternalError when no point has a positive time.
CollectiveFit fit_alpha_beta(const std::vector<std::pair<Bytes, Duration>>& pts);

// One measured collective point for the piecewise fit.
struct FitPoint {
  Bytes bytes{0};
  Duration time{0};
  NcclChoice choice;  // NCCL's captured algorithm and protocol; empty strings when not captured
};

struct PiecewiseOptions {
  double split_mape = 0.05;     // a line whose MAPE is above this is split (when it has enough points)
  int max_segments = 3;         // per run of one NCCL choice (at most 3)
  int min_segment_points = 3;   // points in a segment made by a breakpoint search
};

// Piecewise t = alpha + beta S over sizes. Points are sorted by size; the size range is first cut
// where NCCL's captured choice (algorithm, protocol) changes (a run of a single point joins the
// run before it, or the one after when it is first). Within each run, when one line's MAPE is
// above options.split_mape and the run has at least 2 x min_segment_points points, breakpoints are
// searched: every split into 2 (and, with 3 x min_segment_points points, 3) contiguous segments
// of >= min_segment_points points, never between two points of one size, is scored by its total
// squared relative error, evaluated in O(1) per segment from prefix sums of the weighted normal
// equations. The fewest segments whose MAPE is within split_mape win, else the best-scoring.
// The segments returned cover disjoint, increasing size ranges; each is a full fit_alpha_beta.
std::vector<CollectiveFit> fit_piecewise(std::vector<FitPoint> pts, const PiecewiseOptions& options = {});

// Every model of the profile from its ok points (docs/calibration-profile.md, "models"):
//   collectives  grouped by (op, algorithm, protocol, ranks, link_class), piecewise; bus bandwidth
//                = bus factor / beta; nominal and link efficiency from `nominal`.
//   gemm         per dtype: best rate, the table of shapes (duplicates: the median rate), the
//                curve t(F) = t0 + F / rate by the same relative-error fit with rate <= best.
//   memory       t(B) = t0 + B / bandwidth over all memory points.
//   launch       the median; overlap: the median slowdown.
//   network      per link class: the all_reduce fit with algorithm ring (else auto), at the
//                largest rank count, protocol simple (else the first by name), its segment with
//                the largest max_bytes: link efficiency, step latency alpha / (2 (n - 1)).
// The output is sorted, so the same points always give the same models.
Models fit_models(const Profile& p, const NominalBandwidths& nominal);

}  // namespace cs::cal
