// `clustersim validate megatron`: the Megatron-LM SC21 table (configs/validation/
// megatron-sc21-table1.json). Every row is a fit record of the A100's GEMM efficiency, so the
// table's in-sample errors validate little; --leave-one-out gives the out-of-sample ones, --refit
// reproduces the fitted value, --sensitivity shows which values each row rests on.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "apps/cli_common.h"
#include "apps/cmd_validate.h"
#include "core/config.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "drivers/perturbation.h"
#include "drivers/sensitivity.h"
#include "drivers/training_records.h"
#include "drivers/training_validation.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::cli {
namespace {

std::vector<std::size_t> parse_rows(const std::string& text, std::size_t count) {
  std::vector<std::size_t> rows;
  if (text.empty()) {
    for (std::size_t i = 0; i < count; ++i) rows.push_back(i);
    return rows;
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || static_cast<std::size_t>(v) > count) {
      throw ConfigError("", "--rows", "expected row numbers from 1 to " + std::to_string(count) + "; got \"" + text + "\"");
    }
    rows.push_back(static_cast<std::size_t>(v - 1));
  }
  return rows;
}

std::vector<double> parse_grid(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(v > 0) || (!out.empty() && v <= out.back())) {
      throw ConfigError("", "--grid", "expected increasing positive factors such as 0.9,1,1.1; got \"" + text + "\"");
    }
    out.push_back(v);
  }
  if (out.size() < 2) throw ConfigError("", "--grid", "expected at least two factors");
  return out;
}

// A refitted value for people: a plain number to three significant digits, else as written.
std::string shown(const SourcedFact& fact, double factor) {
  const std::string v = drv::scaled_value(fact, factor);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0') return v;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

struct Table {
  std::string title;  // the document's "title"; empty: the SC21 table
  std::vector<drv::TrainingRecord> records;
  std::vector<std::size_t> rows;
  std::vector<double> published;  // per selected row
};

Table load_table(const ValidateOptions& o) {
  const std::string file = o.table.empty() ? std::string(CS_CONFIG_DIR) + "/validation/megatron-sc21-table1.json" : o.table;
  const ConfigDocument doc = ConfigDocument::load(file);
  Table t;
  if (auto title = doc.root().find("title")) t.title = title->as_string();
  t.records = drv::load_training_records(doc, std::string(CS_CONFIG_DIR) + "/validation");
  t.rows = parse_rows(o.rows, t.records.size());
  for (std::size_t i : t.rows) t.published.push_back(t.records[i].published_tflops_per_gpu);
  return t;
}

void print_rows(const Table& t, const std::vector<drv::TrainingRowResult>& results, bool json) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<double> fit_errors, check_errors;
  if (!json) {
    if (t.title.empty()) {
      std::cout << "clustersim validate megatron: Narayanan et al., SC21, Table 1 (A100 SuperPOD, sequence 2048, full recomputation,\n"
                   "  the paper's micro-batches, DDP and interleaving from its run_table_1.sh; TFLOP/s per GPU as the paper's Eq. 3)\n";
    } else {
      std::cout << "clustersim validate megatron: " << t.title << "\n";
    }
    std::cout << "   row   params   GPUs   TP  PP  DP  mb  v  batch   published  predicted   error  record\n";
  }
  for (const drv::TrainingRowResult& r : results) {
    const drv::TrainingRecord& rec = t.records[r.row];
    const drv::Experiment& e = rec.experiment;
    const double error = r.error(rec);
    (rec.use == "fit" ? fit_errors : check_errors).push_back(std::fabs(error));
    out.push_back({{"row", r.row + 1},
                   {"params_billion", rec.params_billion},
                   {"gpus", e.plan.gpus()},
                   {"published_tflops_per_gpu", rec.published_tflops_per_gpu},
                   {"predicted_tflops_per_gpu", r.predicted_tflops_per_gpu},
                   {"error_pct", 100 * error},
                   {"iteration_time_s", to_seconds(r.iteration)},
                   {"record", rec.id},
                   {"use", rec.use}});
    list_warnings_in(out.back(), r.warnings);
    if (!json) {
      char line[240];
      std::snprintf(line, sizeof line, "  %4zu %8.1fB %6d %4d %3d %3d %3d %2d %6d %11.0f %10.1f %+7.1f%%  %s (%s)\n", r.row + 1,
                    rec.params_billion, e.plan.gpus(), e.plan.tp, e.plan.pp, e.plan.dp, e.plan.micro_batch, e.plan.virtual_stages,
                    e.plan.global_batch, rec.published_tflops_per_gpu, r.predicted_tflops_per_gpu, 100 * error, rec.id.c_str(),
                    rec.use.c_str());
      std::cout << line;
    }
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  auto summary = [](const char* what, const std::vector<double>& e) {
    if (e.empty()) return std::string("  ") + what + ": none\n";
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %s: %zu rows, median |error| %.1f%%, worst %.1f%%\n", what, e.size(), 100 * median(e),
                  100 * *std::max_element(e.begin(), e.end()));
    return std::string(buf);
  };
  std::cout << summary("fit rows (constants were fitted on them, so they validate little)", fit_errors)
            << summary("check rows", check_errors);
  if (check_errors.empty()) {
    std::cout << "  the out-of-sample error of this table is its leave-one-out one: --leave-one-out\n";
  }
}

int refit_and_leave_one_out(const ValidateOptions& o, const Table& t) {
  const SourcedFact fact = drv::fitted_constant(t.records);
  const std::vector<double> factors = parse_grid(o.grid);
  const drv::ConstantGrid grid = drv::constant_grid(t.records, t.rows, fact, factors, progress_line);
  clear_progress();
  nlohmann::json out = nlohmann::json::object();
  out["constant"] = fact.path;
  out["file"] = fact.file;
  out["in_use"] = fact.value;
  out["grid_factors"] = factors;
  if (o.refit) {
    std::vector<std::size_t> fit;
    for (std::size_t k = 0; k < t.rows.size(); ++k) {
      if (t.records[t.rows[k]].use == "fit") fit.push_back(k);
    }
    const double f = drv::fit_constant(grid, t.published, fit);
    out["refit"] = {{"value", shown(fact, f)}, {"factor", f}, {"rows", fit.size()}};
    if (!o.json) {
      std::cout << "refit " << fact.path << " (" << fact.file << ") on " << fit.size() << " fit rows: " << shown(fact, f)
                << " (in use: " << fact.value << "); least squares of ln(predicted / published), the rows simulated at x"
                << o.grid << " of the value in use and interpolated\n";
    }
  }
  if (o.leave_one_out) {
    const drv::LeaveOneOut loo = drv::leave_one_out(grid, t.published);
    nlohmann::json rows = nlohmann::json::array();
    std::vector<double> errors;
    if (!o.json) {
      std::cout << "leave-one-out: each row predicted with " << fact.path << " fitted on the other rows\n"
                << "   row  fitted on the others  published  predicted   error\n";
    }
    for (std::size_t k = 0; k < t.rows.size(); ++k) {
      const double error = (loo.predicted[k] - t.published[k]) / t.published[k];
      errors.push_back(std::fabs(error));
      rows.push_back({{"row", t.rows[k] + 1},
                      {"record", t.records[t.rows[k]].id},
                      {"fitted_on_others", shown(fact, loo.fitted[k])},
                      {"published_tflops_per_gpu", t.published[k]},
                      {"predicted_tflops_per_gpu", loo.predicted[k]},
                      {"error_pct", 100 * error}});
      if (!o.json) {
        char line[200];
        std::snprintf(line, sizeof line, "  %4zu %21s %10.0f %10.1f %7s\n", t.rows[k] + 1, shown(fact, loo.fitted[k]).c_str(),
                      t.published[k], loo.predicted[k], pct(error).c_str());
        std::cout << line;
      }
    }
    out["leave_one_out"] = {{"rows", rows}, {"median_abs_error_pct", 100 * median(errors)},
                            {"worst_abs_error_pct", 100 * *std::max_element(errors.begin(), errors.end())}};
    if (!o.json) {
      std::printf("  out of sample: median |error| %.1f%%, worst %.1f%%\n", 100 * median(errors),
                  100 * *std::max_element(errors.begin(), errors.end()));
    }
  }
  if (o.json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

void print_sensitivity(const std::vector<drv::SensitivityRow>& rows, const std::vector<std::string>& point_names, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json changes = nlohmann::json::array();
      for (double c : r.error_change) changes.push_back(100 * c);
      out.push_back({{"value_of", r.fact.path}, {"file", r.fact.file}, {"value", r.fact.value}, {"kind", r.fact.kind},
                     {"factor", r.factor}, {"points", point_names}, {"error_change_pct", changes}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "error change (percentage points) when one value is scaled, the others held\n  value (kind)                                   factor";
  for (const auto& n : point_names) std::cout << " " << std::string(n.size() < 7 ? 7 - n.size() : 0, ' ') << n;
  std::cout << "\n";
  for (const auto& r : rows) {
    std::string label = r.fact.path.substr(1) + " (" + r.fact.kind + ")";
    label.resize(46, ' ');
    char factor[16];
    std::snprintf(factor, sizeof factor, " x%-5.2f", r.factor);
    std::cout << "  " << label << factor;
    for (std::size_t i = 0; i < r.error_change.size(); ++i) {
      char cell[32];
      std::snprintf(cell, sizeof cell, " %+*.1f", static_cast<int>(std::max<std::size_t>(point_names[i].size(), 7)), 100 * r.error_change[i]);
      std::cout << cell;
    }
    std::cout << "\n";
  }
}

int run_validate_megatron(const ValidateOptions& o) {
  const Table t = load_table(o);
  if (o.refit || o.leave_one_out) return refit_and_leave_one_out(o, t);
  if (o.grid_given) throw ConfigError("", "--grid", "the grid is simulated by --refit and --leave-one-out; give one of them (it would be ignored)");
  if (o.sensitivity) {
    const auto rows = drv::training_sensitivity(t.records, t.rows, {0.9, 1.1}, progress_line);
    clear_progress();
    std::vector<std::string> names;
    for (std::size_t i : t.rows) names.push_back("row " + std::to_string(i + 1));
    print_sensitivity(rows, names, o.json);
    return 0;
  }
  const auto results = drv::simulate_rows(t.records, t.rows, {}, o.json ? drv::Progress{} : drv::Progress{progress_line});
  clear_progress();
  for (const drv::TrainingRowResult& r : results) print_warnings(r.warnings);
  print_rows(t, results, o.json);
  return 0;
}

}  // namespace cs::cli
