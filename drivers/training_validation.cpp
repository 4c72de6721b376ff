#include "drivers/training_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.h"
#include "drivers/perturbation.h"
#include "drivers/training_run.h"
#include "hardware/catalog.h"

namespace cs::drv {
namespace {

Experiment with_overrides(Experiment e, const MachineOverrides& o) {
  e.cluster_overrides.insert(e.cluster_overrides.end(), o.cluster.begin(), o.cluster.end());
  if (!o.hardware.empty()) {
    e.hardware_overrides.insert(e.hardware_overrides.end(), o.hardware.begin(), o.hardware.end());
    e.hardware_overrides_where = e.at("hardware_overrides");
  }
  return e;
}

std::string factor_label(const SourcedFact& fact, double factor) {
  char buf[32];
  std::snprintf(buf, sizeof buf, " x%.3g", factor);
  return fact.path + buf;
}

}  // namespace

std::vector<TrainingRowResult> simulate_rows(const std::vector<TrainingRecord>& records, const std::vector<std::size_t>& rows,
                                             const MachineOverrides& overrides, const Progress& progress) {
  std::vector<TrainingRowResult> out;
  for (std::size_t i : rows) {
    if (progress) progress("row " + std::to_string(i + 1));
    const results::TrainingRun run = simulate_training(with_overrides(records.at(i).experiment, overrides));
    out.push_back({i, records.at(i).predicted_tflops(run.result), run.result.iteration, run.assumptions, run.warnings});
  }
  return out;
}

double ConstantGrid::at(std::size_t row, double factor) const {
  const std::vector<double>& p = predicted.at(row);
  if (factor <= factors.front()) return p.front();
  if (factor >= factors.back()) return p.back();
  const auto hi = static_cast<std::size_t>(std::upper_bound(factors.begin(), factors.end(), factor) - factors.begin());
  const double w = (factor - factors[hi - 1]) / (factors[hi] - factors[hi - 1]);
  return p[hi - 1] + w * (p[hi] - p[hi - 1]);
}

ConstantGrid constant_grid(const std::vector<TrainingRecord>& records, const std::vector<std::size_t>& rows,
                           const SourcedFact& fact, const std::vector<double>& factors, const Progress& progress) {
  ConstantGrid g{fact, factors, std::vector<std::vector<double>>(rows.size())};
  if (!std::is_sorted(factors.begin(), factors.end()) || factors.size() < 2) throw InternalError("constant_grid: factors");
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Experiment& e = records.at(rows[k]).experiment;
    const nlohmann::json cluster = ConfigDocument::load(e.cluster, e.cluster_overrides).json();
    for (double f : factors) {
      if (progress) progress("row " + std::to_string(rows[k] + 1) + ", " + factor_label(fact, f));
      const Perturbation p = scaled(fact, f, cluster);
      const results::TrainingRun run = simulate_training(with_overrides(e, {p.cluster_overrides, p.hardware_overrides}));
      g.predicted[k].push_back(records.at(rows[k]).predicted_tflops(run.result));
    }
  }
  return g;
}

double fit_constant(const ConstantGrid& grid, const std::vector<double>& published, const std::vector<std::size_t>& fit) {
  auto cost = [&](double f) {
    double sum = 0;
    for (std::size_t k : fit) {
      const double e = std::log(grid.at(k, f) / published.at(k));
      sum += e * e;
    }
    return sum;
  };
  // The interpolants are piecewise linear: the minimum is near a grid factor or inside a segment.
  // Golden-section search within each segment, keeping the best.
  double best = grid.factors.front(), best_cost = cost(best);
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (std::size_t s = 0; s + 1 < grid.factors.size(); ++s) {
    double a = grid.factors[s], b = grid.factors[s + 1];
    double c = b - phi * (b - a), d = a + phi * (b - a);
    while (b - a > 1e-6) {
      if (cost(c) < cost(d)) {
        b = d;
      } else {
        a = c;
      }
      c = b - phi * (b - a), d = a + phi * (b - a);
    }
    const double m = (a + b) / 2;
    if (cost(m) < best_cost) best = m, best_cost = cost(m);
  }
  return best;
}

LeaveOneOut leave_one_out(const ConstantGrid& grid, const std::vector<double>& published) {
  LeaveOneOut out;
  for (std::size_t i = 0; i < grid.predicted.size(); ++i) {
    std::vector<std::size_t> others;
    for (std::size_t k = 0; k < grid.predicted.size(); ++k) {
      if (k != i) others.push_back(k);
    }
    const double f = fit_constant(grid, published, others);
    out.fitted.push_back(f);
    out.predicted.push_back(grid.at(i, f));
  }
  return out;
}

SourcedFact fitted_constant(const std::vector<TrainingRecord>& records) {
  std::vector<std::string> constants;
  for (const TrainingRecord& r : records) {
    for (const std::string& c : r.fits) {
      if (std::find(constants.begin(), constants.end(), c) == constants.end()) constants.push_back(c);
    }
  }
  if (constants.size() != 1) {
    throw ConfigError(records.empty() ? "" : records.front().experiment.file, "/records",
                      "refitting needs the fit records to name one constant; they name " + std::to_string(constants.size()));
  }
  const SourcedFact* f = hw::Catalog::builtin().fact(constants.front());
  if (f == nullptr) {
    throw ConfigError(records.front().experiment.file, "/records", "no hardware catalog value \"" + constants.front() + "\"");
  }
  return *f;
}

}  // namespace cs::drv
