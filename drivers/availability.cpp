#include "drivers/availability.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/random.h"

namespace cs::drv {
namespace {

// The failure stream's id under the run's seed ("failures" in ASCII).
constexpr std::uint64_t kFailureStream = 0x6661696c75726573ULL;

// Golden-section search for the maximum of f on [lo, hi] (f unimodal there), to a relative
// width `tolerance`; returns the best point evaluated. `evaluations` counts calls of f.
template <class F>
double golden_maximum(F&& f, double lo, double hi, double tolerance, int& evaluations) {
  const double r = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  double x1 = b - r * (b - a), x2 = a + r * (b - a);
  double f1 = f(x1), f2 = f(x2);
  evaluations += 2;
  while (b - a > tolerance * (a + b) / 2) {
    if (f1 >= f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - r * (b - a);
      f1 = f(x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + r * (b - a);
      f2 = f(x2);
    }
    ++evaluations;
  }
  return f1 >= f2 ? x1 : x2;
}

}  // namespace

FailureProcess failures_from_gpu_mtbf(LongDuration mtbf_per_gpu, int job_gpus) {
  if (!(mtbf_per_gpu.value() > 0) || job_gpus < 1) throw InternalError("failures_from_gpu_mtbf: needs a positive MTBF and GPU count");
  return FailureProcess{mtbf_per_gpu, job_gpus};
}

FailureProcess failures_from_observation(std::int64_t interruptions, LongDuration window, int observed_gpus, int job_gpus) {
  if (interruptions < 1 || observed_gpus < 1) throw InternalError("failures_from_observation: needs interruptions and GPUs");
  return failures_from_gpu_mtbf(window * (static_cast<double>(observed_gpus) / static_cast<double>(interruptions)), job_gpus);
}

LongDuration young_interval(LongDuration save, LongDuration job_mtbf) {
  return LongDuration{std::sqrt(2 * save.value() * job_mtbf.value())};
}

LongDuration daly_interval(LongDuration save, LongDuration job_mtbf) {
  const double d = save.value(), m = job_mtbf.value();
  if (d >= 2 * m) return job_mtbf;
  const double q = d / (2 * m);
  return LongDuration{std::sqrt(2 * d * m) * (1 + std::sqrt(q) / 3 + q / 9) - d};
}

LongDuration availability_optimal_interval(LongDuration save, LongDuration restart, LongDuration job_mtbf) {
  const double s = save.value();
  return LongDuration{s + std::sqrt(2 * (job_mtbf.value() + restart.value()) * s + s * s)};
}

double first_order_ettr(const CheckpointPolicy& p, LongDuration job_mtbf) {
  return 1 - p.save / p.interval - (p.interval.value() / 2 + p.restart.value()) / job_mtbf.value();
}

double renewal_ettr(const CheckpointPolicy& p, LongDuration job_mtbf) {
  const double f = job_mtbf.value();
  return p.interval.value() * std::exp(-p.restart.value() / f) / (f * std::expm1((p.interval + p.save).value() / f));
}

FailureSample::FailureSample(LongDuration job_mtbf, std::int64_t interruptions, std::uint64_t seed) : job_mtbf_(job_mtbf) {
  if (!(job_mtbf.value() > 0) || interruptions < 2) throw InternalError("FailureSample: needs a positive MTBF and two interruptions");
  Rng rng = Rng::derive(seed, kFailureStream);
  gaps_s_.reserve(static_cast<std::size_t>(interruptions));
  // Exponential by inversion: 1 - U lies in (0, 1], so the logarithm is finite.
  for (std::int64_t i = 0; i < interruptions; ++i) gaps_s_.push_back(-job_mtbf.value() * std::log(1 - rng.uniform()));
}

EttrSimulation FailureSample::run(const CheckpointPolicy& p) const {
  const double tc = p.interval.value(), ts = p.save.value(), tr = p.restart.value(), cycle = tc + ts;
  if (!(tc > 0) || ts < 0 || tr < 0) throw InternalError("FailureSample::run: needs a positive interval");
  // Per life i: progress u_i, wall time w_i = the gap. Sums for the ratio and its variance.
  double wall = 0, useful = 0, saving = 0, restarting = 0, lost = 0, su2 = 0, suw = 0, sw2 = 0;
  for (const double gap : gaps_s_) {
    double u = 0;
    if (gap <= tr) {
      restarting += gap;
    } else {
      restarting += tr;
      const double working = gap - tr;
      const double cycles = std::floor(working / cycle);
      u = cycles * tc;
      useful += u;
      saving += cycles * ts;
      lost += working - cycles * cycle;
    }
    wall += gap;
    su2 += u * u;
    suw += u * gap;
    sw2 += gap * gap;
  }
  const double n = static_cast<double>(gaps_s_.size());
  EttrSimulation s;
  s.interruptions = static_cast<std::int64_t>(gaps_s_.size());
  s.ettr = useful / wall;
  // Ratio estimator R = sum u / sum w: Var(R) ~ sum (u_i - R w_i)^2 / (n (n - 1) mean(w)^2).
  const double residual = std::max(0.0, su2 - 2 * s.ettr * suw + s.ettr * s.ettr * sw2);
  s.standard_error = std::sqrt(residual / (n * (n - 1))) / (wall / n);
  s.wall = LongDuration{wall};
  s.useful = LongDuration{useful};
  s.checkpointing = LongDuration{saving};
  s.restarting = LongDuration{restarting};
  s.lost = LongDuration{lost};
  return s;
}

IntervalSearch optimal_interval(const FailureSample& sample, LongDuration save, LongDuration restart) {
  // Young's interval is zero for a free save: search around a floor of a millionth of T_f.
  const double young = std::max(young_interval(save, sample.job_mtbf()).value(), 1e-6 * sample.job_mtbf().value());
  IntervalSearch out;
  auto ettr = [&](double tc) { return sample.run(CheckpointPolicy{LongDuration{tc}, save, restart}).ettr; };
  // A log-spaced grid over [Young/4, 4 Young] (ratio 2^(1/8) between points) finds the peak's
  // neighbourhood; golden-section search refines it between the best point's neighbours.
  constexpr int kSteps = 32;
  int best = 0;
  double best_ettr = -1;
  for (int i = 0; i <= kSteps; ++i) {
    const double v = ettr(young * std::exp2(-2.0 + 4.0 * i / kSteps));
    ++out.evaluations;
    if (v > best_ettr) {
      best_ettr = v;
      best = i;
    }
  }
  const double lo = young * std::exp2(-2.0 + 4.0 * std::max(best - 1, 0) / kSteps);
  const double hi = young * std::exp2(-2.0 + 4.0 * std::min(best + 1, kSteps) / kSteps);
  const double x = golden_maximum(ettr, lo, hi, 1e-4, out.evaluations);
  out.interval = LongDuration{x};
  out.at_best = sample.run(CheckpointPolicy{out.interval, save, restart});
  return out;
}

}  // namespace cs::drv
