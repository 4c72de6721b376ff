// Relative-error, non-negative least squares for t = a + b x, and the models built from it.
//
// With weights w_i = 1/t_i^2 the objective sum w_i (a + b x_i - t_i)^2 is a quadratic in (a, b)
// whose coefficients are six sums (w, wx, wxx, wt, wxt, wtt): the "normal equation sums". Every
// fit here works on those sums, which makes three things cheap:
//   * the bounded solution: with two unknowns the active sets are few, so the constrained optimum
//     (a >= 0, b >= b_min) is the best of the unconstrained solution (when feasible), the best
//     line with a = 0, and the best line with b = b_min (each clamped to its bound);
//   * leave-one-out: the sums without point i are prefix[i] + suffix[i + 1];
//   * breakpoint search: the sums of a segment [i, j) are prefix[j] - prefix[i], so scoring a
//     candidate segment is O(1) and a 3-segment search over n points is O(n^2), not O(n^4).
// x is divided by its largest value before summing, so the 2 x 2 systems stay well scaled over
// sizes from 8 B to 8 GiB (and FLOP counts up to 1e18).
#include "calibration/fit.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <Eigen/Dense>

#include "core/errors.h"
#include "core/statistics.h"

namespace cs::cal {

namespace {

// A fitted time as the profile holds it: at most kMaxProfileSeconds (a wide confidence bound of
// a poor fit can exceed any measured time).
Duration profile_seconds(double s) { return duration_from_seconds(std::min(s, kMaxProfileSeconds)); }

// ---- sums of the weighted normal equations --------------------------------------------------

struct Sums {
  double w = 0, wx = 0, wxx = 0, wt = 0, wxt = 0, wtt = 0;
  int n = 0;

  void add(double x, double t) {
    const double wi = 1.0 / (t * t);
    w += wi;
    wx += wi * x;
    wxx += wi * x * x;
    wt += wi * t;
    wxt += wi * x * t;
    wtt += wi * t * t;
    ++n;
  }
  friend Sums operator+(Sums a, const Sums& b) {
    a.w += b.w; a.wx += b.wx; a.wxx += b.wxx; a.wt += b.wt; a.wxt += b.wxt; a.wtt += b.wtt;
    a.n += b.n;
    return a;
  }
  friend Sums operator-(Sums a, const Sums& b) {
    a.w -= b.w; a.wx -= b.wx; a.wxx -= b.wxx; a.wt -= b.wt; a.wxt -= b.wxt; a.wtt -= b.wtt;
    a.n -= b.n;
    return a;
  }
  // sum w (a + b x - t)^2, expanded.
  double sse(double a, double b) const {
    const double v = wtt - 2 * a * wt - 2 * b * wxt + a * a * w + 2 * a * b * wx + b * b * wxx;
    return std::max(v, 0.0);
  }
};

struct Line {
  double a = 0, b = 0;
  double sse = std::numeric_limits<double>::infinity();
};

// min sum w (a + b x - t)^2 subject to a >= 0, b >= b_min (b_min >= 0). The optimum of a convex
// quadratic under bounds is the optimum of the face of its active constraints, so it is the best
// feasible one of: no bound active, a = 0 (b clamped to its bound), b = b_min (a clamped to 0).
Line solve(const Sums& s, double b_min) {
  Line best;
  const auto consider = [&](double a, double b) {
    const double e = s.sse(a, b);
    if (e < best.sse) best = Line{a, b, e};
  };
  const double det = s.w * s.wxx - s.wx * s.wx;
  if (det > 1e-12 * s.w * s.wxx) {
    const double a = (s.wxx * s.wt - s.wx * s.wxt) / det;
    const double b = (s.w * s.wxt - s.wx * s.wt) / det;
    if (a >= 0 && b >= b_min) consider(a, b);
  }
  if (s.wxx > 0) consider(0.0, std::max(s.wxt / s.wxx, b_min));
  if (s.w > 0) consider(std::max((s.wt - b_min * s.wx) / s.w, 0.0), b_min);
  if (!std::isfinite(best.sse)) best = Line{0.0, b_min, s.sse(0.0, b_min)};
  return best;
}

// Two-sided 95% quantile of Student's t with `dof` degrees of freedom: a table up to 30, then the
// Cornish-Fisher expansion around the normal quantile (error < 1e-4 there).
double t_quantile_975(int dof) {
  static constexpr double kTable[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646,
                                      2.3060,  2.2622, 2.2281, 2.2010, 2.1788, 2.1604, 2.1448,
                                      2.1314,  2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796,
                                      2.0739,  2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484,
                                      2.0452,  2.0423};
  if (dof >= 1 && dof <= 30) return kTable[dof - 1];
  const double z = 1.959963984540054, v = dof;
  return z + (z * z * z + z) / (4 * v) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

// A fitted line with its statistics (see fit.h, fit_alpha_beta).
struct LineFit {
  double a = 0, b = 0;  // t = a + b x, in the caller's units (seconds, seconds per x)
  double r2 = 0, mape = 0, loo_mape = 0;
  double a_lo = 0, a_hi = 0, b_lo = 0, b_hi = 0;
  double sse = 0;  // sum of squared relative errors
  int n = 0;
  double x_min = 0, x_max = 0;
};

// Relative-error NNLS fit of t = a + b x with a >= 0, b >= b_min. t > 0, same length as x.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& t, double b_min) {
  const std::size_t n = x.size();
  if (n == 0) throw InternalError("calibration fit: no points");
  double scale = 0;
  for (double v : x) scale = std::max(scale, std::fabs(v));
  if (!(scale > 0)) scale = 1;
  std::vector<double> xs(n);
  for (std::size_t i = 0; i < n; ++i) xs[i] = x[i] / scale;

  // prefix[i]: points [0, i); suffix[i]: points [i, n).
  std::vector<Sums> prefix(n + 1), suffix(n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    prefix[i + 1] = prefix[i];
    prefix[i + 1].add(xs[i], t[i]);
  }
  for (std::size_t i = n; i-- > 0;) {
    suffix[i] = suffix[i + 1];
    suffix[i].add(xs[i], t[i]);
  }
  const Sums& all = prefix[n];
  const double bmin_scaled = b_min * scale;
  const Line line = solve(all, bmin_scaled);

  LineFit f;
  f.n = static_cast<int>(n);
  f.a = line.a;
  f.b = line.b / scale;
  f.x_min = *std::min_element(x.begin(), x.end());
  f.x_max = *std::max_element(x.begin(), x.end());

  // Residuals, MAPE, weighted R^2 (about the weighted mean time).
  const double t_mean = all.wt / all.w;
  double sse = 0, sst = 0, abs_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = (line.a + line.b * xs[i] - t[i]) / t[i];
    sse += r * r;
    abs_sum += std::fabs(r);
    const double d = (t[i] - t_mean) / t[i];
    sst += d * d;
  }
  f.sse = sse;
  f.mape = abs_sum / static_cast<double>(n);
  f.r2 = sst > 0 ? 1.0 - sse / sst : (sse > 0 ? 0.0 : 1.0);

  // Leave-one-out: refit on the sums of every other point, predict the one left out.
  if (n >= 2) {
    double loo = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Line l = solve(prefix[i] + suffix[i + 1], bmin_scaled);
      loo += std::fabs((l.a + l.b * xs[i] - t[i]) / t[i]);
    }
    f.loo_mape = loo / static_cast<double>(n);
  } else {
    f.loo_mape = f.mape;
  }

  // 95% intervals: covariance s^2 (X'WX)^-1 of the weighted problem (scaled x, then unscaled).
  f.a_lo = f.a_hi = f.a;
  f.b_lo = f.b_hi = f.b;
  Eigen::Matrix2d xtwx;
  xtwx << all.w, all.wx, all.wx, all.wxx;
  const double det = xtwx.determinant();
  if (n > 2 && det > 1e-12 * all.w * all.wxx) {
    const int dof = static_cast<int>(n) - 2;
    const double s2 = sse / dof;
    const Eigen::Matrix2d cov = s2 * xtwx.inverse();
    const double q = t_quantile_975(dof);
    const double ha = q * std::sqrt(std::max(cov(0, 0), 0.0));
    const double hb = q * std::sqrt(std::max(cov(1, 1), 0.0)) / scale;
    f.a_lo = std::max(f.a - ha, 0.0);
    f.a_hi = f.a + ha;
    f.b_lo = std::max(f.b - hb, 0.0);
    f.b_hi = f.b + hb;
  }
  return f;
}

bool usable(const PointBase& p) {
  return p.status == PointStatus::kOk && p.timing && p.timing->median.count() > 0;
}

double seconds(Duration d) { return static_cast<double>(d.count()) / 1e12; }

// ---- piecewise -----------------------------------------------------------------------------

bool same_choice(const NcclChoice& a, const NcclChoice& b) {
  return a.algorithm == b.algorithm && a.protocol == b.protocol;
}
bool captured(const NcclChoice& c) { return !c.algorithm.empty() || !c.protocol.empty(); }

// Cut positions (indices where a new segment starts) of the best split of sorted points [0, m)
// into `segments` parts of >= min_points each; empty when no split is allowed.
std::vector<std::size_t> best_split(const std::vector<Sums>& prefix, const std::vector<bool>& can_cut,
                                    std::size_t m, int segments, std::size_t min_points) {
  const auto cost = [&](std::size_t i, std::size_t j) { return solve(prefix[j] - prefix[i], 0.0).sse; };
  std::vector<std::size_t> best;
  double best_cost = std::numeric_limits<double>::infinity();
  if (segments == 2) {
    for (std::size_t c = min_points; c + min_points <= m; ++c) {
      if (!can_cut[c]) continue;
      const double e = cost(0, c) + cost(c, m);
      if (e < best_cost) { best_cost = e; best = {c}; }
    }
  } else if (segments == 3) {
    for (std::size_t c1 = min_points; c1 + 2 * min_points <= m; ++c1) {
      if (!can_cut[c1]) continue;
      const double head = cost(0, c1);
      for (std::size_t c2 = c1 + min_points; c2 + min_points <= m; ++c2) {
        if (!can_cut[c2]) continue;
        const double e = head + cost(c1, c2) + cost(c2, m);
        if (e < best_cost) { best_cost = e; best = {c1, c2}; }
      }
    }
  }
  return best;
}

std::vector<std::pair<Bytes, Duration>> slice(const std::vector<FitPoint>& pts, std::size_t from,
                                              std::size_t to) {
  std::vector<std::pair<Bytes, Duration>> out;
  for (std::size_t i = from; i < to; ++i) out.emplace_back(pts[i].bytes, pts[i].time);
  return out;
}

// Total squared relative error and total absolute relative error of a set of fits.
struct Score {
  double sse = 0, abs_sum = 0;
};

// One run of a single NCCL choice (sorted, times > 0): one line, or 2-3 segments.
void fit_run(const std::vector<FitPoint>& pts, std::size_t from, std::size_t to,
             const PiecewiseOptions& opt, std::vector<CollectiveFit>& out) {
  const auto fit_cuts = [&](const std::vector<std::size_t>& cuts, Score& score) {
    std::vector<CollectiveFit> fits;
    std::size_t start = from;
    for (std::size_t k = 0; k <= cuts.size(); ++k) {
      const std::size_t end = k < cuts.size() ? from + cuts[k] : to;
      CollectiveFit f = fit_alpha_beta(slice(pts, start, end));
      score.abs_sum += f.mape * static_cast<double>(f.points);
      fits.push_back(std::move(f));
      start = end;
    }
    // The fit's own sse is not kept in CollectiveFit: recompute it from the points.
    std::size_t seg = 0;
    for (std::size_t i = from; i < to; ++i) {
      while (seg < cuts.size() && i >= from + cuts[seg]) ++seg;
      const CollectiveFit& f = fits[seg];
      const double t = seconds(pts[i].time);
      const double r = (seconds(f.alpha) + f.beta_s_per_byte * static_cast<double>(pts[i].bytes.value()) - t) / t;
      score.sse += r * r;
    }
    return fits;
  };

  const std::size_t m = to - from;
  Score one_score;
  std::vector<CollectiveFit> best = fit_cuts({}, one_score);
  const std::size_t min_points = static_cast<std::size_t>(std::max(opt.min_segment_points, 1));
  if (best.front().mape <= opt.split_mape || m < 2 * min_points || opt.max_segments < 2) {
    out.insert(out.end(), best.begin(), best.end());
    return;
  }

  double scale = 1;
  for (std::size_t i = from; i < to; ++i) scale = std::max(scale, static_cast<double>(pts[i].bytes.value()));
  std::vector<Sums> prefix(m + 1);
  std::vector<bool> can_cut(m + 1, false);
  for (std::size_t i = 0; i < m; ++i) {
    prefix[i + 1] = prefix[i];
    prefix[i + 1].add(static_cast<double>(pts[from + i].bytes.value()) / scale, seconds(pts[from + i].time));
    if (i > 0) can_cut[i] = pts[from + i].bytes != pts[from + i - 1].bytes;
  }

  Score best_score = one_score;
  for (int segments = 2; segments <= std::min(opt.max_segments, 3); ++segments) {
    const std::vector<std::size_t> cuts = best_split(prefix, can_cut, m, segments, min_points);
    if (cuts.empty()) break;
    Score score;
    std::vector<CollectiveFit> fits = fit_cuts(cuts, score);
    if (score.sse >= best_score.sse) continue;
    best = std::move(fits);
    best_score = score;
    if (score.abs_sum / static_cast<double>(m) <= opt.split_mape) break;  // fewest segments that fit
  }
  out.insert(out.end(), best.begin(), best.end());
}

// ---- models --------------------------------------------------------------------------------

using GroupKey = std::tuple<std::string, std::string, std::string, int, std::string>;

std::vector<CollectiveFit> fit_collectives(const Profile& p, const NominalBandwidths& nominal) {
  std::map<GroupKey, std::vector<FitPoint>> groups;
  for (const CollectivePoint& c : p.collectives) {
    if (!usable(c)) continue;
    groups[GroupKey{c.op, c.algorithm, c.protocol, c.ranks, c.link_class}].push_back(
        FitPoint{c.bytes, c.timing->median, c.nccl_choice});
  }
  std::vector<CollectiveFit> out;
  for (auto& [key, pts] : groups) {
    const auto& [op, algorithm, protocol, ranks, link_class] = key;
    const auto nominal_it = nominal.per_class.find(link_class);
    for (CollectiveFit& f : fit_piecewise(std::move(pts))) {
      f.op = op;
      f.algorithm = algorithm;
      f.protocol = protocol;
      f.ranks = ranks;
      f.link_class = link_class;
      f.bus_bandwidth = f.beta_s_per_byte > 0 ? Bandwidth{bus_factor(op, ranks) / f.beta_s_per_byte}
                                              : Bandwidth{0};
      if (nominal_it != nominal.per_class.end() && nominal_it->second.value() > 0) {
        f.nominal = nominal_it->second;
        f.link_efficiency = f.bus_bandwidth / f.nominal;
      }
      out.push_back(std::move(f));
    }
  }
  return out;  // map order, then increasing sizes: sorted
}

std::vector<GemmModel> fit_gemm(const Profile& p) {
  std::map<std::string, std::vector<const GemmPoint*>> by_dtype;
  for (const GemmPoint& g : p.gemm) {
    if (usable(g)) by_dtype[g.shape.dtype].push_back(&g);
  }
  std::vector<GemmModel> out;
  for (const auto& [dtype, pts] : by_dtype) {
    GemmModel m;
    m.dtype = dtype;
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::vector<double>> shapes;
    std::vector<double> f, t;
    for (const GemmPoint* g : pts) {
      const FlopRate r = g->rate();
      m.best = std::max(m.best, r);
      shapes[{g->shape.m, g->shape.n, g->shape.k}].push_back(r.value());
      f.push_back(g->shape.flops().value());
      t.push_back(seconds(g->timing->median));
    }
    for (const auto& [shape, rates] : shapes) {
      const auto& [mm, nn, kk] = shape;
      m.table.push_back(GemmTableEntry{mm, nn, kk, FlopRate{median(rates)}});
    }
    // t(F) = t0 + F / rate with rate <= best, i.e. slope b = 1/rate >= 1/best.
    const LineFit curve = fit_line(f, t, 1.0 / m.best.value());
    m.t0 = profile_seconds(curve.a);
    m.rate = FlopRate{std::min(1.0 / curve.b, m.best.value())};
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<MemoryModel> fit_memory(const Profile& p) {
  std::vector<double> x, t;
  Bytes lo{std::numeric_limits<std::int64_t>::max()}, hi{0};
  for (const MemoryPoint& mp : p.memory) {
    if (!usable(mp)) continue;
    x.push_back(static_cast<double>(mp.bytes.value()));
    t.push_back(seconds(mp.timing->median));
    lo = std::min(lo, mp.bytes);
    hi = std::max(hi, mp.bytes);
  }
  if (x.empty()) return std::nullopt;
  const LineFit fit = fit_line(x, t, 0.0);
  MemoryModel m;
  m.t0 = profile_seconds(fit.a);
  m.bandwidth = fit.b > 0 ? Bandwidth{1.0 / fit.b} : Bandwidth{0};  // 0: no size dependence seen
  m.min_bytes = lo;
  m.max_bytes = hi;
  m.r2 = fit.r2;
  m.mape = fit.mape;
  return m;
}

std::optional<Duration> fit_launch(const Profile& p) {
  std::vector<Duration> v;
  for (const LaunchPoint& l : p.launch) {
    if (usable(l)) v.push_back(l.timing->median);
  }
  if (v.empty()) return std::nullopt;
  return median(std::move(v));
}

std::optional<double> fit_overlap(const Profile& p) {
  std::vector<double> v;
  for (const OverlapPoint& o : p.overlap) {
    if (o.alone.count() > 0) v.push_back(o.slowdown());
  }
  if (v.empty()) return std::nullopt;
  return median(std::move(v));
}

// ---- the network model: the collective model's ring all-reduce, inverted (fit.h) ----------

// What a point ran: the forced algorithm or protocol, else NCCL's captured choice ("" unknown).
const std::string& ran(const std::string& forced, const std::string& captured) {
  return forced != "auto" ? forced : captured;
}

// The ring all-reduce points of one (link class, protocol): t = L + x u + z v.
struct RingSeries {
  std::size_t cls = 0;       // index in the classes
  std::string protocol;      // "simple" or "ll"
  std::vector<int> ranks;    // distinct rank counts, increasing
  int points = 0;
};

struct RingPoint {
  std::size_t series = 0;
  double x = 0;  // steps, 2 (n - 1)
  double z = 0;  // bus bytes, 2 (n - 1) / n S
  double t = 0;  // seconds
};

struct RingClass {
  std::string link_class;
  Duration path{0};
  std::size_t simple = 0;           // its Simple series
  std::optional<std::size_t> ll;    // its LL series, when measured
};

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int n : ranks) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

// Relative-error least squares of t = L + x u_s + z v_s over every series at once (one launch
// latency L shared by all), with bounds L >= 0, u_s >= the path latency of the series' class,
// v_s >= 0, and the unknowns in `fixed` held at their values. theta = [L, u_0, v_0, u_1, v_1, ...].
// An unknown that the free solution puts below its bound is fixed at the bound and the others
// solved again (the first such unknown in that order, one at a time) until none is below.
std::vector<double> solve_ring(const std::vector<RingPoint>& pts, const std::vector<RingSeries>& series,
                               const std::vector<RingClass>& classes, std::vector<std::optional<double>> fixed) {
  const std::size_t k = 1 + 2 * series.size();
  std::vector<double> lower(k, 0.0);
  for (std::size_t s = 0; s < series.size(); ++s) lower[1 + 2 * s] = to_seconds(classes[series[s].cls].path);
  // Columns scaled to their largest value, so that steps (~10) and bytes (~1e9) stay comparable.
  std::vector<double> scale(k, 1.0);
  for (const RingPoint& p : pts) {
    scale[1 + 2 * p.series] = std::max(scale[1 + 2 * p.series], p.x);
    scale[2 + 2 * p.series] = std::max(scale[2 + 2 * p.series], p.z);
  }
  std::vector<double> theta(k, 0.0);
  for (std::size_t pass = 0; pass <= k; ++pass) {
    std::vector<std::size_t> free;
    for (std::size_t j = 0; j < k; ++j) {
      if (!fixed[j]) free.push_back(j);
    }
    // Row i of the weighted problem (weight 1/t^2): (phi_i . theta - t_i) / t_i.
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(pts.size()), static_cast<Eigen::Index>(free.size()));
    Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const RingPoint& p = pts[i];
      std::vector<double> phi(k, 0.0);
      phi[0] = 1;
      phi[1 + 2 * p.series] = p.x;
      phi[2 + 2 * p.series] = p.z;
      double known = 0;
      for (std::size_t j = 0; j < k; ++j) {
        if (fixed[j]) known += phi[j] * *fixed[j];
      }
      const auto r = static_cast<Eigen::Index>(i);
      for (std::size_t f = 0; f < free.size(); ++f) a(r, static_cast<Eigen::Index>(f)) = phi[free[f]] / scale[free[f]] / p.t;
      b(r) = (p.t - known) / p.t;
    }
    const Eigen::VectorXd sol = free.empty() ? Eigen::VectorXd() : Eigen::VectorXd(a.colPivHouseholderQr().solve(b));
    std::optional<std::size_t> below;
    for (std::size_t j = 0; j < k; ++j) {
      if (fixed[j]) theta[j] = *fixed[j];
    }
    for (std::size_t f = 0; f < free.size(); ++f) {
      const std::size_t j = free[f];
      theta[j] = sol(static_cast<Eigen::Index>(f)) / scale[j];
      if (!below && theta[j] < lower[j]) below = j;
    }
    if (!below) break;
    fixed[*below] = lower[*below];
  }
  return theta;
}

struct NetworkFit {
  std::vector<NetworkClassModel> classes;
  std::optional<CollectiveLaunchModel> launch;
};

NetworkFit fit_network(const Profile& p, const NominalBandwidths& nominal) {
  // The ok all_reduce points that ran ring with the Simple or the LL protocol, by (class, protocol).
  std::map<std::pair<std::string, std::string>, std::vector<const CollectivePoint*>> groups;
  for (const CollectivePoint& c : p.collectives) {
    if (c.op != "all_reduce" || c.ranks < 2 || !usable(c)) continue;
    if (ran(c.algorithm, c.nccl_choice.algorithm) != "ring") continue;
    const std::string& protocol = ran(c.protocol, c.nccl_choice.protocol);
    if (protocol == "simple" || protocol == "ll") groups[{c.link_class, protocol}].push_back(&c);
  }
  // A series needs two sizes at one rank count at least (else its bandwidth term is unknown); a
  // class needs its Simple series (its link efficiency and step latency).
  const auto sizes_ok = [](const std::vector<const CollectivePoint*>& pts) {
    std::map<int, std::set<std::int64_t>> sizes;
    for (const CollectivePoint* c : pts) sizes[c->ranks].insert(c->bytes.value());
    return std::any_of(sizes.begin(), sizes.end(), [](const auto& s) { return s.second.size() >= 2; });
  };
  std::vector<RingClass> classes;
  std::vector<RingSeries> series;
  std::vector<RingPoint> pts;
  const auto add_series = [&](std::size_t cls, const std::string& protocol, const std::vector<const CollectivePoint*>& points) {
    RingSeries rs;
    rs.cls = cls;
    rs.protocol = protocol;
    std::set<int> ranks;
    for (const CollectivePoint* c : points) {
      ranks.insert(c->ranks);
      const double n = c->ranks;
      pts.push_back(RingPoint{series.size(), 2 * (n - 1), bus_factor("all_reduce", c->ranks) * static_cast<double>(c->bytes.value()),
                              seconds(c->timing->median)});
    }
    rs.ranks.assign(ranks.begin(), ranks.end());
    rs.points = static_cast<int>(points.size());
    series.push_back(std::move(rs));
    return series.size() - 1;
  };
  for (const auto& [key, points] : groups) {
    const auto& [link_class, protocol] = key;
    if (protocol != "simple" || !sizes_ok(points)) continue;
    RingClass rc;
    rc.link_class = link_class;
    const auto path = nominal.ring_step_path_latency.find(link_class);
    if (path != nominal.ring_step_path_latency.end()) rc.path = path->second;
    const std::size_t cls = classes.size();
    rc.simple = add_series(cls, "simple", points);
    const auto ll = groups.find({link_class, "ll"});
    if (ll != groups.end() && sizes_ok(ll->second)) rc.ll = add_series(cls, "ll", ll->second);
    classes.push_back(std::move(rc));
  }
  NetworkFit out;
  if (classes.empty()) return out;

  // The launch latency is the intercept over the step counts: two rank counts in one series.
  const bool identified = std::any_of(series.begin(), series.end(), [](const RingSeries& s) { return s.ranks.size() >= 2; });
  std::vector<std::optional<double>> fixed(1 + 2 * series.size());
  if (!identified) fixed[0] = 0.0;
  const std::vector<double> theta = solve_ring(pts, series, classes, fixed);
  if (!std::all_of(theta.begin(), theta.end(), [](double v) { return std::isfinite(v); })) return out;

  const auto describe = [&](const RingClass& c) {
    std::string d = "simple at " + rank_list(series[c.simple].ranks) + " ranks";
    if (c.ll) d += ", ll at " + rank_list(series[*c.ll].ranks) + " ranks";
    return d;
  };
  std::string over;
  for (const RingClass& c : classes) over += (over.empty() ? "" : "; ") + c.link_class + ": " + describe(c);
  CollectiveLaunchModel launch;
  launch.latency = profile_seconds(theta[0]);
  if (identified) {
    launch.status = "fitted";
    launch.from = "the intercept over the step counts 2 (n - 1) of the ring all_reduce points (" + over + ")";
    if (theta[0] <= 0) launch.from += "; the unbounded intercept was negative: held at 0";
  } else {
    launch.status = "assumed";
    launch.from = "assumed 0: ring all_reduce was measured at one rank count only (" + over +
                  "), which cannot tell the launch latency from the steps; the step latencies hold both";
  }
  out.launch = launch;

  for (std::size_t ci = 0; ci < classes.size(); ++ci) {
    const RingClass& c = classes[ci];
    const auto u = [&](std::size_t s) { return theta[1 + 2 * s]; };
    const auto v = [&](std::size_t s) { return theta[2 + 2 * s]; };
    const double path = to_seconds(c.path);
    NetworkClassModel m;
    m.link_class = c.link_class;
    const auto nom = nominal.per_class.find(c.link_class);
    if (nom != nominal.per_class.end() && nom->second.value() > 0 && v(c.simple) > 0) {
      m.link_efficiency = 1.0 / (v(c.simple) * nom->second.value());
    }
    m.path_latency = c.path;
    m.step_latency = profile_seconds(std::max(u(c.simple) - path, 0.0));
    if (c.ll) m.ll_step_latency = profile_seconds(std::max(u(*c.ll) - path, 0.0));
    double abs_sum = 0;
    for (const RingPoint& pt : pts) {
      if (series[pt.series].cls != ci) continue;
      abs_sum += std::fabs((theta[0] + pt.x * u(pt.series) + pt.z * v(pt.series) - pt.t) / pt.t);
      ++m.points;
    }
    m.mape = abs_sum / m.points;
    m.from = "all_reduce ring " + describe(c);
    out.classes.push_back(std::move(m));
  }
  return out;
}

}  // namespace

CollectiveFit fit_alpha_beta(const std::vector<std::pair<Bytes, Duration>>& pts) {
  std::vector<double> x, t;
  Bytes lo{std::numeric_limits<std::int64_t>::max()}, hi{0};
  for (const auto& [b, d] : pts) {
    if (d.count() <= 0) continue;  // a zero time cannot be weighted by 1/t^2
    x.push_back(static_cast<double>(b.value()));
    t.push_back(seconds(d));
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  if (x.empty()) throw InternalError("fit_alpha_beta: no point with a positive time");
  const LineFit l = fit_line(x, t, 0.0);
  CollectiveFit f;
  f.min_bytes = lo;
  f.max_bytes = hi;
  f.alpha = profile_seconds(l.a);
  f.beta_s_per_byte = l.b;
  f.r2 = l.r2;
  f.mape = l.mape;
  f.loo_mape = l.loo_mape;
  f.alpha_ci95_lo = profile_seconds(l.a_lo);
  f.alpha_ci95_hi = profile_seconds(l.a_hi);
  f.beta_ci95_lo = l.b_lo;
  f.beta_ci95_hi = l.b_hi;
  f.points = l.n;
  return f;
}

std::vector<CollectiveFit> fit_piecewise(std::vector<FitPoint> pts, const PiecewiseOptions& options) {
  std::erase_if(pts, [](const FitPoint& p) { return p.time.count() <= 0; });
  std::vector<CollectiveFit> out;
  if (pts.empty()) return out;
  std::stable_sort(pts.begin(), pts.end(), [](const FitPoint& a, const FitPoint& b) {
    return std::tie(a.bytes, a.time) < std::tie(b.bytes, b.time);
  });
  // A point whose choice was not captured takes its neighbour's (the one before, else after).
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (!captured(pts[i].choice)) pts[i].choice = pts[i - 1].choice;
  }
  for (std::size_t i = pts.size() - 1; i-- > 0;) {
    if (!captured(pts[i].choice)) pts[i].choice = pts[i + 1].choice;
  }
  // A choice seen at a single point (different from both neighbours) is taken as noise in the
  // capture: the point joins the run before it (or after it, when first). A line needs two points.
  for (std::size_t i = 0; i < pts.size() && pts.size() >= 2; ++i) {
    const bool differs_before = i == 0 || !same_choice(pts[i].choice, pts[i - 1].choice);
    const bool differs_after = i + 1 == pts.size() || !same_choice(pts[i].choice, pts[i + 1].choice);
    if (differs_before && differs_after) pts[i].choice = pts[i == 0 ? 1 : i - 1].choice;
  }
  std::vector<std::size_t> merged{0};  // run starts, then the end
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (!same_choice(pts[i].choice, pts[i - 1].choice)) merged.push_back(i);
  }
  merged.push_back(pts.size());
  for (std::size_t r = 0; r + 1 < merged.size(); ++r) fit_run(pts, merged[r], merged[r + 1], options, out);
  return out;
}

Models fit_models(const Profile& p, const NominalBandwidths& nominal) {
  Models m;
  m.collectives = fit_collectives(p, nominal);
  m.gemm = fit_gemm(p);
  m.memory = fit_memory(p);
  m.launch_overhead = fit_launch(p);
  m.overlap_slowdown = fit_overlap(p);
  NetworkFit network = fit_network(p, nominal);
  m.network = std::move(network.classes);
  m.collective_launch = std::move(network.launch);
  return m;
}

}  // namespace cs::cal
