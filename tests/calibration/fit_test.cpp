// The relative-error, non-negative alpha-beta fit and its piecewise form (calibration/fit.h).
#include "calibration/fit.h"

#include <cmath>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/random.h"
#include "tests/calibration/synthetic_profile.h"

namespace cs::cal {
namespace {

using testing::log_sizes;
using testing::noisy;

constexpr double kAlpha = 20e-6;        // 20 us
constexpr double kBeta = 1.0 / 200e9;   // 200 GB/s

double rel(double got, double want) { return std::fabs(got - want) / want; }
double secs(Duration d) { return to_seconds(d); }

std::vector<std::pair<Bytes, Duration>> line_points(double alpha, double beta, double noise,
                                                    std::uint64_t seed) {
  Rng rng = Rng::derive(seed, 7);
  std::vector<std::pair<Bytes, Duration>> pts;
  for (Bytes s : log_sizes()) {
    pts.emplace_back(s, noisy(alpha + beta * static_cast<double>(s.value()), noise, rng));
  }
  return pts;
}

// Plain (unweighted) least squares: what the relative weighting is there to avoid.
std::pair<double, double> plain_least_squares(const std::vector<std::pair<Bytes, Duration>>& pts) {
  double n = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (const auto& [b, d] : pts) {
    const double x = static_cast<double>(b.value()), t = secs(d);
    n += 1; sx += x; sxx += x * x; st += t; sxt += x * t;
  }
  const double det = n * sxx - sx * sx;
  return {(sxx * st - sx * sxt) / det, (n * sxt - sx * st) / det};
}

TEST(CalibrationFit, RecoversAlphaAndBetaWithinOnePercent) {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    const CollectiveFit f = fit_alpha_beta(line_points(kAlpha, kBeta, 0.01, seed));
    EXPECT_LT(rel(secs(f.alpha), kAlpha), 0.01) << "seed " << seed;
    EXPECT_LT(rel(f.beta_s_per_byte, kBeta), 0.01) << "seed " << seed;
    EXPECT_EQ(f.points, 31);
    EXPECT_EQ(f.min_bytes, bytes(8));
    EXPECT_EQ(f.max_bytes, gibibytes(8));
    EXPECT_GT(f.r2, 0.99);
    EXPECT_LT(f.mape, 0.01);  // uniform +-1% noise: mean |e| is 0.5%
    EXPECT_TRUE(std::isfinite(f.loo_mape));
    EXPECT_GE(f.loo_mape, f.mape);
    EXPECT_LT(f.loo_mape, 0.012);
  }
}

TEST(CalibrationFit, ExactDataIsFittedExactly) {
  const CollectiveFit f = fit_alpha_beta(line_points(kAlpha, kBeta, 0.0, 1));
  EXPECT_LT(rel(secs(f.alpha), kAlpha), 1e-6);
  EXPECT_LT(rel(f.beta_s_per_byte, kBeta), 1e-6);
  EXPECT_LT(f.mape, 1e-6);
  EXPECT_NEAR(f.r2, 1.0, 1e-9);
}

TEST(CalibrationFit, RelativeWeightingKeepsSmallSizesRight) {
  const auto pts = line_points(kAlpha, kBeta, 0.01, 11);
  const auto [plain_alpha, plain_beta] = plain_least_squares(pts);
  const CollectiveFit f = fit_alpha_beta(pts);
  // Sizes up to 4 KiB: time is all alpha. The plain fit gets alpha wrong by far more than the
  // 1% noise (the 1% noise of an 8 GiB point is 2000 x alpha); the weighted one stays within 2%.
  double worst_weighted = 0, worst_plain = 0;
  for (const auto& [b, d] : pts) {
    if (b > kibibytes(4)) continue;
    const double x = static_cast<double>(b.value()), truth = kAlpha + kBeta * x;
    worst_weighted = std::max(worst_weighted, rel(secs(f.alpha) + f.beta_s_per_byte * x, truth));
    worst_plain = std::max(worst_plain, rel(plain_alpha + plain_beta * x, truth));
  }
  EXPECT_LT(worst_weighted, 0.02);
  EXPECT_GT(worst_plain, 0.2);
  EXPECT_GT(worst_plain, 10 * worst_weighted);
  EXPECT_GT(rel(plain_alpha, kAlpha), 0.2);
}

TEST(CalibrationFit, AlphaStaysNonNegative) {
  // alpha = 0 with noise: the unconstrained intercept may dip below 0; the fit's may not.
  for (std::uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
    const CollectiveFit f = fit_alpha_beta(line_points(0.0, kBeta, 0.01, seed));
    EXPECT_GE(f.alpha.count(), 0);
    EXPECT_GE(f.alpha_ci95_lo.count(), 0);
    EXPECT_LT(rel(f.beta_s_per_byte, kBeta), 0.01);
  }
  // A negative true intercept (t = beta S - 2 us over 1 MiB .. 1 GiB): alpha is clamped to 0 and
  // beta is the best line through the origin.
  std::vector<std::pair<Bytes, Duration>> pts;
  double sum_r = 0, sum_rr = 0;  // r = x / t: the a = 0 optimum is sum(r) / sum(r^2)
  for (Bytes s : log_sizes(20, 30)) {
    const double t = kBeta * static_cast<double>(s.value()) - 2e-6;
    pts.emplace_back(s, duration_from_seconds(t));
    const double r = static_cast<double>(s.value()) / secs(pts.back().second);
    sum_r += r;
    sum_rr += r * r;
  }
  const CollectiveFit f = fit_alpha_beta(pts);
  EXPECT_EQ(f.alpha.count(), 0);
  EXPECT_NEAR(f.beta_s_per_byte, sum_r / sum_rr, 1e-9 * kBeta);
}

TEST(CalibrationFit, BetaStaysNonNegative) {
  // Times that fall with size: the best line with beta >= 0 is flat at the weighted mean.
  std::vector<std::pair<Bytes, Duration>> pts;
  for (int i = 0; i < 10; ++i) pts.emplace_back(kibibytes(1 << i), microseconds(20 - i));
  const CollectiveFit f = fit_alpha_beta(pts);
  EXPECT_EQ(f.beta_s_per_byte, 0.0);
  EXPECT_GT(f.alpha, microseconds(11));
  EXPECT_LT(f.alpha, microseconds(20));
}

TEST(CalibrationFit, ConfidenceIntervalsContainTheTruth) {
  int alpha_in = 0, beta_in = 0;
  const int runs = 40;
  for (int seed = 1; seed <= runs; ++seed) {
    const CollectiveFit f = fit_alpha_beta(line_points(kAlpha, kBeta, 0.01, static_cast<std::uint64_t>(seed)));
    EXPECT_LE(f.alpha_ci95_lo, f.alpha);
    EXPECT_GE(f.alpha_ci95_hi, f.alpha);
    EXPECT_LE(f.beta_ci95_lo, f.beta_s_per_byte);
    EXPECT_GE(f.beta_ci95_hi, f.beta_s_per_byte);
    alpha_in += secs(f.alpha_ci95_lo) <= kAlpha && kAlpha <= secs(f.alpha_ci95_hi);
    beta_in += f.beta_ci95_lo <= kBeta && kBeta <= f.beta_ci95_hi;
    // Narrow: with 31 points and 1% noise, within +-1% of the estimate.
    EXPECT_LT(secs(f.alpha_ci95_hi - f.alpha_ci95_lo), 0.02 * kAlpha);
  }
  // 95% intervals: at least 34 of 40 (P(fewer) < 2% for a true 95% interval).
  EXPECT_GE(alpha_in, 34);
  EXPECT_GE(beta_in, 34);
}

TEST(CalibrationFit, IgnoresZeroTimesAndRejectsNoPoints) {
  auto pts = line_points(kAlpha, kBeta, 0.0, 1);
  pts.emplace_back(bytes(3), Duration{0});
  EXPECT_EQ(fit_alpha_beta(pts).points, 31);
  EXPECT_THROW(fit_alpha_beta({}), InternalError);
  EXPECT_THROW(fit_alpha_beta({{bytes(8), Duration{0}}}), InternalError);
}

// ---- piecewise ---------------------------------------------------------------------------

// Below 64 KiB: 5 us + S / 2 GB/s (an LL-like regime); from 64 KiB: 30 us + S / 200 GB/s.
constexpr double kA1 = 5e-6, kB1 = 1.0 / 2e9, kA2 = 30e-6, kB2 = 1.0 / 200e9;

std::vector<FitPoint> two_regimes(bool capture_choice, double noise, std::uint64_t seed) {
  Rng rng = Rng::derive(seed, 9);
  std::vector<FitPoint> pts;
  for (Bytes s : log_sizes()) {
    const bool low = s < kibibytes(64);
    const double x = static_cast<double>(s.value());
    FitPoint p{s, noisy(low ? kA1 + kB1 * x : kA2 + kB2 * x, noise, rng), {}};
    if (capture_choice) p.choice = low ? NcclChoice{"Tree", "LL", 16} : NcclChoice{"Ring", "Simple", 32};
    pts.push_back(p);
  }
  return pts;
}

void expect_two_regimes(const std::vector<CollectiveFit>& fits) {
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].min_bytes, bytes(8));
  EXPECT_EQ(fits[0].max_bytes, kibibytes(32));
  EXPECT_EQ(fits[1].min_bytes, kibibytes(64));
  EXPECT_EQ(fits[1].max_bytes, gibibytes(8));
  EXPECT_EQ(fits[0].points, 13);
  EXPECT_EQ(fits[1].points, 18);
  EXPECT_LT(rel(secs(fits[0].alpha), kA1), 0.02);
  EXPECT_LT(rel(fits[0].beta_s_per_byte, kB1), 0.02);
  EXPECT_LT(rel(secs(fits[1].alpha), kA2), 0.02);
  EXPECT_LT(rel(fits[1].beta_s_per_byte, kB2), 0.02);
}

TEST(CalibrationFit, PiecewiseFindsTheBreakpointWithoutNcclChoice) {
  for (std::uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    const auto pts = two_regimes(false, 0.01, seed);
    std::vector<std::pair<Bytes, Duration>> plain;
    for (const FitPoint& p : pts) plain.emplace_back(p.bytes, p.time);
    EXPECT_GT(fit_alpha_beta(plain).mape, 0.05);  // one line does not fit: a split is searched
    expect_two_regimes(fit_piecewise(pts));
  }
}

TEST(CalibrationFit, PiecewiseSplitsWhereNcclChoiceChanges) {
  expect_two_regimes(fit_piecewise(two_regimes(true, 0.01, 4)));
  // The same line on both sides: the choice alone splits it, at the change.
  Rng rng(5);
  std::vector<FitPoint> pts;
  for (Bytes s : log_sizes()) {
    const NcclChoice c = s < mebibytes(1) ? NcclChoice{"Ring", "LL", 8}
                         : s < mebibytes(64) ? NcclChoice{"Ring", "LL128", 8}
                                             : NcclChoice{"Ring", "Simple", 8};
    pts.push_back({s, noisy(kAlpha + kBeta * static_cast<double>(s.value()), 0.01, rng), c});
  }
  const auto fits = fit_piecewise(pts);
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_EQ(fits[0].max_bytes, kibibytes(512));
  EXPECT_EQ(fits[1].min_bytes, mebibytes(1));
  EXPECT_EQ(fits[1].max_bytes, mebibytes(32));
  EXPECT_EQ(fits[2].min_bytes, mebibytes(64));
  EXPECT_LT(rel(secs(fits[0].alpha), kAlpha), 0.01);
  EXPECT_LT(rel(fits[2].beta_s_per_byte, kBeta), 0.01);
}

TEST(CalibrationFit, PiecewiseKeepsOneLineWhenItFits) {
  std::vector<FitPoint> pts;
  for (const auto& [b, d] : line_points(kAlpha, kBeta, 0.01, 3)) pts.push_back({b, d, {}});
  const auto fits = fit_piecewise(pts);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].points, 31);
}

TEST(CalibrationFit, PiecewiseThreeRegimesAndSegmentRules) {
  // Three regimes, cuts at 4 KiB and 16 MiB, no choice captured.
  Rng rng(8);
  std::vector<FitPoint> pts;
  for (Bytes s : log_sizes()) {
    const double x = static_cast<double>(s.value());
    const double t = s < kibibytes(4) ? 3e-6 + x / 1e9 : s < mebibytes(16) ? 15e-6 + x / 50e9 : 80e-6 + x / 300e9;
    pts.push_back({s, noisy(t, 0.005, rng), {}});
    pts.push_back({s, noisy(t, 0.005, rng), {}});  // two samples per size: never split between them
  }
  const auto fits = fit_piecewise(pts);
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_EQ(fits[0].max_bytes, kibibytes(2));
  EXPECT_EQ(fits[1].min_bytes, kibibytes(4));
  EXPECT_EQ(fits[1].max_bytes, mebibytes(8));
  EXPECT_EQ(fits[2].min_bytes, mebibytes(16));
  for (std::size_t i = 0; i + 1 < fits.size(); ++i) EXPECT_LT(fits[i].max_bytes, fits[i + 1].min_bytes);
  for (const auto& f : fits) EXPECT_LT(f.mape, 0.01);
  EXPECT_LT(rel(fits[2].beta_s_per_byte, 1 / 300e9), 0.01);
}

TEST(CalibrationFit, PiecewiseSmallRunsAndTinyInputs) {
  // A choice seen at a single size joins its neighbour instead of making a one-point segment.
  auto pts = two_regimes(true, 0.0, 1);
  pts[20].choice = NcclChoice{"Tree", "Simple", 4};
  EXPECT_EQ(fit_piecewise(pts).size(), 2u);
  // Too few points to split: one line even when it does not fit.
  std::vector<FitPoint> few(pts.begin() + 10, pts.begin() + 15);
  for (auto& p : few) p.choice = {};
  EXPECT_EQ(fit_piecewise(few).size(), 1u);
  EXPECT_EQ(fit_piecewise({{bytes(64), microseconds(9), {}}}).size(), 1u);
  EXPECT_TRUE(fit_piecewise({}).empty());
}

}  // namespace
}  // namespace cs::cal
