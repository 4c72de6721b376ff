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

// What the catalog says about each link class ("nvlink", "pcie", "network"): the per-GPU nominal
// bandwidth (a class that is absent has none, and its link efficiencies stay 0), and the wire
// latency of the path one ring step crosses, which the simulator adds to every step of its own
// (absent: 0). calibration/nominal.h fills both from the hardware catalog.
struct NominalBandwidths {
  std::map<std::string, Bandwidth> per_class;
  std::map<std::string, Duration> ring_step_path_latency;
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
//                = bus factor / beta; nominal and link efficiency from `nominal` (bus bandwidth /
//                nominal: a link's efficiency only where the algorithm's bus bandwidth is a
//                link's, see network).
//   gemm         per dtype: best rate, the table of shapes (duplicates: the median rate), the
//                curve t(F) = t0 + F / rate by the same relative-error fit with rate <= best.
//   memory       t(B) = t0 + B / bandwidth over all memory points.
//   launch       the median; overlap: the median slowdown.
//   network and collective_launch: the collective model's ring all-reduce inverted, below.
// The output is sorted, so the same points always give the same models.
//
// The network model. The simulator runs a ring all-reduce of S bytes on n ranks of one link
// class c, alone on an idle machine, in (sim/collectives/collective_runner.h, schedule.h)
//     t = L + x (s_c,p + w_c) + z / (e_c N_c),   x = 2 (n - 1),   z = 2 (n - 1) / n S,
// L the collective launch latency (once per collective, every protocol), s_c,p the class's step
// latency for the protocol p (Simple or LL), w_c the wire latency of the path one ring step
// crosses (the simulator adds its route's latency itself), e_c the class's efficiency and N_c its
// nominal per-GPU bandwidth: the Simple protocol puts the data bytes on the wire, so its bus
// bandwidth 1 / v is e_c N_c. (LL puts more wire bytes per data byte; its v is fitted on its own
// and not used.) The fit inverts that model on the points that ran it:
//   points   all_reduce, ok, ring and Simple or LL: the forced algorithm and protocol, else NCCL's
//            captured choice. Not NVLS (it reduces in the switch: its bus bandwidth is the
//            switch's reduction rate, not a link's, and can exceed the link), not trees (their
//            bus bandwidth depends on the tree's shape), not LL128 (not in the collective
//            model), not a point whose algorithm was not captured (it ran something unknown).
//            A class needs Simple points at two sizes of one rank count at least; its LL points
//            join when they have two sizes of one rank count too.
//   unknowns L, and per class and protocol u = s + w and v, in one relative-error least-squares
//            fit (weights 1/t^2, as every fit here) over all classes and protocols at once:
//            t = L + x u + z v is linear in them. Bounds L >= 0, u >= w_c, v >= 0: an unknown
//            that the free solution puts below its bound is held at the bound and the others
//            solved again.
//   L        is the intercept over the step counts x: it needs one class and protocol measured
//            at two rank counts. With one rank count only, x u and L cannot be told apart: L is
//            taken as 0 (status "assumed", with the reason in `from`) and the steps hold it,
//            which reproduces the measured latency at that rank count.
//   results  per class: link efficiency 1 / (v_Simple N_c) (0 when N_c is unknown), step latency
//            u_Simple - w_c, LL step latency u_LL - w_c, w_c itself (path_latency), the points
//            and the fit's MAPE over them; and L (collective_launch). w_c and N_c come from
//            `nominal` (calibration/nominal.h: the catalog's wire latencies and bandwidths); no
//            simulator constant enters.
// On points made by the simulator the fit gives back its parameters exactly (to the picosecond
// rounding of the times); tests/drivers/synthetic_fit_test.cpp checks it for every catalog GPU.
Models fit_models(const Profile& p, const NominalBandwidths& nominal);

}  // namespace cs::cal
