#include "calibration/profile_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include <Eigen/Dense>

#include "core/errors.h"

namespace cs::cal {

const char* to_string(EstimateProvenance p) {
  switch (p) {
    case EstimateProvenance::kMeasured: return "measured";
    case EstimateProvenance::kInterpolated: return "interpolated";
    case EstimateProvenance::kExtrapolated: return "extrapolated";
    case EstimateProvenance::kNominal: return "nominal";
  }
  return "unknown";
}

namespace {

double log_of(std::int64_t v) { return std::log(static_cast<double>(v)); }
double flops_of(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

// Time at a fitted slope in seconds per byte, rounded up like every rate-derived duration.
Duration bytes_time(Bytes b, double s_per_byte) {
  if (!(s_per_byte > 0) || b.value() <= 0) return Duration{0};
  return transfer_time(b, Bandwidth{1.0 / s_per_byte});
}

}  // namespace

ProfileModel::ProfileModel(Profile p) : profile_(std::move(p)) {
  const Models& m = profile_.models;
  for (std::size_t i = 0; i < m.gemm.size(); ++i) {
    GemmIndex g;
    g.model = i;
    std::vector<std::int64_t> distinct[3];
    bool first = true;
    for (const GemmTableEntry& e : m.gemm[i].table) {
      if (!(e.rate.value() > 0)) continue;
      g.exact[Shape{e.m, e.n, e.k}] = e.rate;
      const std::int64_t v[3] = {e.m, e.n, e.k};
      for (int d = 0; d < 3; ++d) {
        g.lo[d] = first ? v[d] : std::min(g.lo[d], v[d]);
        g.hi[d] = first ? v[d] : std::max(g.hi[d], v[d]);
        distinct[d].push_back(v[d]);
      }
      first = false;
    }
    std::size_t cells = 1;
    for (auto& axis : distinct) {
      std::sort(axis.begin(), axis.end());
      axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
      cells *= axis.size();
    }
    // The fixed overhead taken out before interpolating: the curve's t0, but never more than half
    // of the fastest measured time, so every work time stays positive.
    double fastest = std::numeric_limits<double>::infinity();
    for (const auto& [shape, rate] : g.exact) {
      const auto& [sm, sn, sk] = shape;
      fastest = std::min(fastest, flops_of(sm, sn, sk) / rate.value());
    }
    g.overhead = g.exact.empty() ? Duration{0} : std::min(m.gemm[i].t0, duration_from_seconds(0.5 * fastest));
    for (const auto& [shape, rate] : g.exact) {
      const auto& [sm, sn, sk] = shape;
      const double f = flops_of(sm, sn, sk);
      g.work[shape] = FlopRate{f / (f / rate.value() - to_seconds(g.overhead))};
    }
    g.grid = !g.exact.empty() && cells == g.exact.size();
    if (g.grid) {
      for (int d = 0; d < 3; ++d) g.axes[d] = std::move(distinct[d]);
    }
    gemm_[m.gemm[i].dtype] = std::move(g);
  }
  for (std::size_t i = 0; i < m.collectives.size(); ++i) {
    const CollectiveFit& f = m.collectives[i];
    collectives_[CollectiveKey{f.op, f.algorithm, f.protocol, f.ranks, f.link_class}].push_back(i);
  }
  for (auto& [key, fits] : collectives_) {
    std::sort(fits.begin(), fits.end(), [&](std::size_t a, std::size_t b) {
      return m.collectives[a].min_bytes < m.collectives[b].min_bytes;
    });
  }
}

bool ProfileModel::has_gemm(const std::string& dtype) const { return gemm_.count(dtype) != 0; }

const ProfileModel::GemmIndex& ProfileModel::gemm_index(const std::string& dtype) const {
  auto it = gemm_.find(dtype);
  if (it == gemm_.end()) {
    throw InputError("", "/models/gemm", "the calibration profile has no GEMM model for dtype \"" + dtype + "\"");
  }
  return it->second;
}

FlopRate ProfileModel::best_gemm_rate(const std::string& dtype) const {
  return profile_.models.gemm[gemm_index(dtype).model].best;
}

// t0 + F / rate; a curve without a rate falls back to the best rate.
Duration ProfileModel::curve_time(const GemmModel& m, Flops f) const {
  const FlopRate r = m.rate.value() > 0 ? m.rate : m.best;
  if (!(r.value() > 0)) {
    throw InputError("", "/models/gemm", "the GEMM model of dtype \"" + m.dtype + "\" has no rate");
  }
  return m.t0 + compute_time(f, r);
}

// The rate at a shape inside the table's box, interpolated in log space (see the header).
FlopRate ProfileModel::interpolate(const GemmIndex& g, const GemmShape& s) const {
  const std::int64_t q[3] = {s.m, s.n, s.k};
  if (g.grid) {
    // Trilinear in (log m, log n, log k) of log(rate) over the enclosing grid cell.
    std::size_t base[3];
    double frac[3];
    for (int d = 0; d < 3; ++d) {
      const auto& axis = g.axes[d];
      std::size_t i = static_cast<std::size_t>(std::upper_bound(axis.begin(), axis.end(), q[d]) - axis.begin());
      i = i == 0 ? 0 : i - 1;                   // axis[i] <= q
      if (i + 1 >= axis.size()) i = axis.size() >= 2 ? axis.size() - 2 : 0;
      base[d] = i;
      frac[d] = axis.size() < 2 ? 0.0
                                : (std::log(static_cast<double>(q[d])) - log_of(axis[i])) /
                                      (log_of(axis[i + 1]) - log_of(axis[i]));
    }
    double log_rate = 0;
    for (int corner = 0; corner < 8; ++corner) {
      double weight = 1;
      std::int64_t v[3];
      for (int d = 0; d < 3; ++d) {
        const bool upper = (corner >> d) & 1;
        if (upper && g.axes[d].size() < 2) { weight = 0; break; }
        v[d] = g.axes[d][base[d] + (upper ? 1 : 0)];
        weight *= upper ? frac[d] : 1.0 - frac[d];
      }
      if (weight == 0) continue;
      log_rate += weight * std::log(g.work.at(Shape{v[0], v[1], v[2]}).value());
    }
    return FlopRate{std::exp(log_rate)};
  }
  // Scattered shapes: a local linear fit of log(rate) in (log m, log n, log k) over the nearest
  // shapes, weighted by inverse squared distance. A weighted average alone (inverse-distance
  // weighting) would bias the rate towards its neighbours' mean, which for a rate that rises and
  // saturates with size is an underestimate; the plane follows the trend. Its value is kept within
  // the neighbours' rates, and with too few or degenerate neighbours the weighted average is used.
  constexpr std::size_t kNearest = 8;
  struct Near {
    double d2;  // squared distance in log space
    double dx[3];
    double log_rate;
  };
  std::vector<Near> near;
  near.reserve(g.exact.size());
  const double lq[3] = {std::log(static_cast<double>(s.m)), std::log(static_cast<double>(s.n)),
                        std::log(static_cast<double>(s.k))};
  for (const auto& [shape, rate] : g.work) {
    const auto& [m, n, k] = shape;
    Near e{0, {log_of(m) - lq[0], log_of(n) - lq[1], log_of(k) - lq[2]}, std::log(rate.value())};
    e.d2 = e.dx[0] * e.dx[0] + e.dx[1] * e.dx[1] + e.dx[2] * e.dx[2];
    near.push_back(e);
  }
  const std::size_t keep = std::min(kNearest, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(keep), near.end(),
                    [](const Near& a, const Near& b) { return std::tie(a.d2, a.log_rate) < std::tie(b.d2, b.log_rate); });
  double sum_w = 0, sum_wr = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  Eigen::MatrixXd a(keep, 4);
  Eigen::VectorXd b(keep);
  for (std::size_t i = 0; i < keep; ++i) {
    const double w = 1.0 / near[i].d2;  // > 0: an exact shape never gets here
    sum_w += w;
    sum_wr += w * near[i].log_rate;
    lo = std::min(lo, near[i].log_rate);
    hi = std::max(hi, near[i].log_rate);
    const double sw = std::sqrt(w);
    const auto row = static_cast<Eigen::Index>(i);
    a(row, 0) = sw;
    for (int d = 0; d < 3; ++d) a(row, d + 1) = sw * near[i].dx[d];
    b(row) = sw * near[i].log_rate;
  }
  double log_rate = sum_wr / sum_w;
  if (keep >= 5) {
    const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    if (qr.rank() == 4) {
      const Eigen::Vector4d c = qr.solve(b);
      log_rate = std::clamp(c(0), lo, hi);  // the plane's value at the query (dx = 0)
    }
  }
  return FlopRate{std::exp(log_rate)};
}

Estimate ProfileModel::gemm(const GemmShape& s) const {
  const GemmIndex& g = gemm_index(s.dtype);
  const GemmModel& model = profile_.models.gemm[g.model];
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return Estimate{Duration{0}, EstimateProvenance::kMeasured};
  if (auto it = g.exact.find(Shape{s.m, s.n, s.k}); it != g.exact.end()) {
    return Estimate{compute_time(s.flops(), it->second), EstimateProvenance::kMeasured};
  }
  const std::int64_t q[3] = {s.m, s.n, s.k};
  bool inside = !g.exact.empty();
  for (int d = 0; d < 3; ++d) inside = inside && q[d] >= g.lo[d] && q[d] <= g.hi[d];
  if (inside) {
    return Estimate{g.overhead + compute_time(s.flops(), interpolate(g, s)), EstimateProvenance::kInterpolated};
  }
  return Estimate{curve_time(model, s.flops()), EstimateProvenance::kExtrapolated};
}

Estimate ProfileModel::gemm_flops(const std::string& dtype, Flops f) const {
  return Estimate{curve_time(profile_.models.gemm[gemm_index(dtype).model], f),
                  EstimateProvenance::kExtrapolated};
}

std::optional<Estimate> ProfileModel::memory(Bytes b) const {
  const auto& m = profile_.models.memory;
  if (!m) return std::nullopt;
  const Duration t = m->t0 + (m->bandwidth.value() > 0 ? transfer_time(b, m->bandwidth) : Duration{0});
  const bool inside = b >= m->min_bytes && b <= m->max_bytes;
  return Estimate{t, inside ? EstimateProvenance::kMeasured : EstimateProvenance::kExtrapolated};
}

std::optional<Duration> ProfileModel::launch_overhead() const { return profile_.models.launch_overhead; }

std::optional<double> ProfileModel::overlap_slowdown() const { return profile_.models.overlap_slowdown; }

const NetworkClassModel* ProfileModel::network(const std::string& link_class) const {
  for (const NetworkClassModel& n : profile_.models.network) {
    if (n.link_class == link_class) return &n;
  }
  return nullptr;
}

std::optional<Estimate> ProfileModel::collective(const std::string& op, const std::string& algorithm,
                                                 const std::string& protocol, int ranks,
                                                 const std::string& link_class, Bytes bytes) const {
  auto it = collectives_.find(CollectiveKey{op, algorithm, protocol, ranks, link_class});
  if (it == collectives_.end() || it->second.empty()) return std::nullopt;
  const auto& fits = profile_.models.collectives;
  const auto& order = it->second;
  const auto estimate = [&](std::size_t i, EstimateProvenance p) {
    const CollectiveFit& f = fits[i];
    return Estimate{f.alpha + bytes_time(bytes, f.beta_s_per_byte), p};
  };
  if (bytes < fits[order.front()].min_bytes) return estimate(order.front(), EstimateProvenance::kExtrapolated);
  if (bytes > fits[order.back()].max_bytes) return estimate(order.back(), EstimateProvenance::kExtrapolated);
  for (std::size_t j = 0; j < order.size(); ++j) {
    const CollectiveFit& f = fits[order[j]];
    if (bytes <= f.max_bytes) {
      if (bytes >= f.min_bytes || j == 0) return estimate(order[j], EstimateProvenance::kMeasured);
      // In the gap after segment j - 1: the nearer segment in log size.
      const double lb = log_of(bytes.value());
      const Bytes below = fits[order[j - 1]].max_bytes;
      const double to_below = below.value() > 0 ? lb - log_of(below.value())
                                                : std::numeric_limits<double>::infinity();
      const double to_above = log_of(f.min_bytes.value()) - lb;
      return estimate(to_below <= to_above ? order[j - 1] : order[j], EstimateProvenance::kMeasured);
    }
  }
  return estimate(order.back(), EstimateProvenance::kExtrapolated);  // not reached
}

}  // namespace cs::cal
