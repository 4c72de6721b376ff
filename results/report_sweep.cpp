// The report of a sweep's results file (`clustersim sweep --out results.csv|.jsonl`, docs/outputs.md,
// "Sweep results"): the scaling curve and efficiency where GPU counts vary, the stall breakdown and
// iteration time per point, the points that did not run, and, when the rows carry them (a later
// schema), time and cost to train with their Pareto front and the average power per point.
#include <algorithm>
#include <map>
#include <set>

#include "core/config.h"
#include "core/errors.h"
#include "results/report_kinds.h"
#include "results/sweep_row.h"

namespace cs::results {
namespace {

// Columns of a later schema that are charted when present and not empty.
const char* const kCostColumns[] = {"energy_per_iteration_j", "average_power_w", "time_to_train_s",
                                    "energy_to_train_j",      "cost_to_train_usd", "tokens_per_usd"};
// Result columns that hold text; every other one is a number (or empty).
const std::set<std::string> kTextColumns = {"status", "reason", "cluster", "model", "dominant_stall"};

struct SweepData {
  std::vector<std::string> parameters;  // their column names
  std::vector<std::string> numeric;     // the number columns present, in file order
  struct Row {
    long point = 0;
    std::vector<std::string> values;    // the parameters' values, as text
    std::string status, reason, cluster, model, dominant;
    std::vector<std::optional<double>> numbers;  // per `numeric`
  };
  std::vector<Row> rows;
  bool torn_tail = false;

  std::optional<std::size_t> index(std::string_view column) const {
    for (std::size_t i = 0; i < numeric.size(); ++i) {
      if (numeric[i] == column) return i;
    }
    return std::nullopt;
  }
};

// The parameters of a header (or a first row's keys): `point`, the parameters, then schema 1's
// result columns in order, then (later schemas) more columns. InputError at line 1 otherwise.
std::size_t check_columns(const std::vector<std::string>& cols, const std::string& file) {
  // Schema 1's columns: the result columns up to "warnings" (schema 2 added the cost columns after it).
  const std::vector<std::string>& all = sweep_result_columns();
  const std::vector<std::string> result(all.begin(), std::find(all.begin(), all.end(), "warnings") + 1);
  const auto fail = [&] {
    throw InputError(file, "line 1",
                     "not a sweep results file of schema 1 or later: the columns must be point, the parameters, then status, reason, cluster, model, gpus, "
                         "iteration_time_s, ... warnings (docs/outputs.md, \"Sweep results\")");
  };
  if (cols.empty() || cols[0] != "point") fail();
  for (std::size_t s = 1; s + result.size() <= cols.size(); ++s) {
    if (std::equal(result.begin(), result.end(), cols.begin() + static_cast<long>(s))) return s - 1;
  }
  fail();
  return 0;
}

void set_numeric_columns(SweepData& d, const std::vector<std::string>& cols) {
  for (std::size_t i = 1 + d.parameters.size(); i < cols.size(); ++i) {
    if (kTextColumns.count(cols[i])) continue;
    d.numeric.push_back(cols[i]);
  }
}

std::string point_shown(const std::string& text) { return text.size() > 40 ? text.substr(0, 37) + "..." : text; }

long point_number(double v, const std::string& file, const std::string& where) {
  if (v < 0 || v != static_cast<double>(static_cast<long>(v))) throw InputError(file, where, "expected a point number (0, 1, ...)");
  return static_cast<long>(v);
}

SweepData read_csv(const ReportSource& s) {
  const CsvTable t = parse_csv(s.text, s.path, /*allow_torn_tail=*/true);
  SweepData d;
  d.torn_tail = t.torn_tail;
  const std::size_t np = check_columns(t.header, s.path);
  d.parameters.assign(t.header.begin() + 1, t.header.begin() + 1 + static_cast<long>(np));
  set_numeric_columns(d, t.header);
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const std::size_t line = t.lines[r];
    SweepData::Row out;
    const auto p = cell_number(row[0], s.path, line, "point");
    if (!p) throw InputError(s.path, "line " + std::to_string(line) + ", column point", "expected a point number; got an empty field");
    out.point = point_number(*p, s.path, "line " + std::to_string(line) + ", column point");
    out.values.assign(row.begin() + 1, row.begin() + 1 + static_cast<long>(np));
    for (std::size_t c = 1 + np; c < t.header.size(); ++c) {
      const std::string& name = t.header[c];
      if (name == "status") out.status = row[c];
      else if (name == "reason") out.reason = row[c];
      else if (name == "cluster") out.cluster = row[c];
      else if (name == "model") out.model = row[c];
      else if (name == "dominant_stall") out.dominant = row[c];
      else out.numbers.push_back(cell_number(row[c], s.path, line, name));
    }
    d.rows.push_back(std::move(out));
  }
  return d;
}

std::string json_text(const nlohmann::ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

SweepData read_jsonl(const ReportSource& s) {
  SweepData d;
  std::vector<std::string> cols;
  std::size_t np = 0;
  std::size_t line = 0, at = 0;
  const std::string_view text = s.text;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    const bool complete = nl != std::string_view::npos;
    if (!complete) nl = text.size();
    std::string_view ln = text.substr(at, nl - at);
    at = nl + 1;
    ++line;
    if (!ln.empty() && ln.back() == '\r') ln.remove_suffix(1);
    if (ln.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string where = "line " + std::to_string(line);
    // Strict first (a NUL byte, duplicate keys, nesting), with the column of a syntax error.
    try {
      (void)ConfigDocument::parse(ln, s.path);
    } catch (const InputError& e) {
      if (!complete && line > 1) {  // a row torn by a writer that was killed
        d.torn_tail = true;
        break;
      }
      std::string msg = e.message();
      if (const std::size_t p = msg.find("line 1, column "); p != std::string::npos) msg.replace(p, 15, "column ");
      throw InputError(s.path, e.json_path() == "/" ? where : where + " " + e.json_path(), msg);
    }
    const nlohmann::ordered_json row = nlohmann::ordered_json::parse(ln);  // keeps the keys' order
    if (!row.is_object()) throw InputError(s.path, where, "expected a JSON object (one row of a sweep)");
    std::vector<std::string> keys;
    for (const auto& [k, v] : row.items()) keys.push_back(k);
    if (cols.empty()) {
      cols = keys;
      np = check_columns(cols, s.path);
      d.parameters.assign(cols.begin() + 1, cols.begin() + 1 + static_cast<long>(np));
      set_numeric_columns(d, cols);
    } else if (keys != cols) {
      throw InputError(s.path, where, "its keys are not the first row's (every row of a results file has the same columns in the same order)");
    }
    SweepData::Row out;
    const auto& p = row.at("point");
    if (!p.is_number_unsigned()) throw InputError(s.path, where + " /point", "expected a point number (0, 1, ...)");
    out.point = p.get<long>();
    for (std::size_t c = 1; c <= np; ++c) out.values.push_back(json_text(row.at(cols[c])));
    for (std::size_t c = 1 + np; c < cols.size(); ++c) {
      const std::string& name = cols[c];
      const auto& v = row.at(name);
      const std::string path = where + " " + json_pointer_append("", name);
      if (kTextColumns.count(name)) {
        if (!v.is_null() && !v.is_string()) throw InputError(s.path, path, "expected a string or null");
        std::string cell = v.is_null() ? "" : v.get<std::string>();
        if (name == "status") out.status = std::move(cell);
        else if (name == "reason") out.reason = std::move(cell);
        else if (name == "cluster") out.cluster = std::move(cell);
        else if (name == "model") out.model = std::move(cell);
        else out.dominant = std::move(cell);
      } else {
        if (!v.is_null() && !v.is_number()) throw InputError(s.path, path, "expected a number or null");
        out.numbers.push_back(v.is_null() ? std::nullopt : std::optional<double>(v.get<double>()));
      }
    }
    d.rows.push_back(std::move(out));
  }
  if (cols.empty()) throw InputError(s.path, "line 1", "no rows (a JSON Lines results file has one object per line)");
  return d;
}

// "tp" for "/plan/tp", "oversubscription" for "cluster:/fabric/oversubscription".
std::string short_name(const std::string& column) {
  const std::size_t cut = column.find_last_of("/:");
  return cut == std::string::npos || cut + 1 == column.size() ? column : column.substr(cut + 1);
}

std::string point_label(const SweepData& d, const SweepData::Row& r) {
  std::string label = "#" + std::to_string(r.point);
  for (std::size_t i = 0; i < d.parameters.size(); ++i) {
    label += ' ';
    label += short_name(d.parameters[i]);
    label += '=';
    label += point_shown(r.values[i]);
  }
  return label.size() > 80 ? label.substr(0, 77) + "..." : label;
}

}  // namespace

bool is_sweep_results(const ReportSource& s) {
  if (s.folder) return false;
  const std::string_view first = s.first_line();
  return first.rfind("point,", 0) == 0 || first.rfind("{\"point\":", 0) == 0;
}

void sweep_results_report(const ReportSource& src, ReportPage& page) {
  const SweepData d = src.first_line().rfind("point,", 0) == 0 ? read_csv(src) : read_jsonl(src);
  const auto col = [&](std::string_view name) { return d.index(name); };
  const auto value = [&](const SweepData::Row& r, std::optional<std::size_t> c) -> std::optional<double> {
    return c ? r.numbers[*c] : std::nullopt;
  };
  const auto gpus_c = col("gpus"), time_c = col("iteration_time_s"), tokens_c = col("tokens_per_s"), samples_c = col("samples_per_s"),
             mfu_c = col("mfu");
  std::vector<const SweepData::Row*> ok;
  std::map<std::string, std::size_t> by_status;
  std::set<std::string> clusters, models;
  for (const SweepData::Row& r : d.rows) {
    ++by_status[r.status.empty() ? "(empty)" : r.status];
    if (r.status == "ok" && value(r, time_c)) ok.push_back(&r);
    if (!r.cluster.empty()) clusters.insert(r.cluster);
    if (!r.model.empty()) models.insert(r.model);
  }
  bool tokens = false;
  for (const auto* r : ok) tokens = tokens || value(*r, tokens_c).value_or(0) > 0;
  const auto thr_c = tokens ? tokens_c : samples_c;
  const std::string thr_name = tokens ? "tokens/s" : "samples/s";
  const auto throughput = [&](const SweepData::Row& r) { return value(r, thr_c).value_or(0); };

  page.title = "clustersim report: sweep of " + std::to_string(d.rows.size()) + " point" + (d.rows.size() == 1 ? "" : "s");
  // ---- overview ----
  {
    ReportSection s;
    s.title = "Overview";
    std::string counts;
    for (const auto& [status, n] : by_status) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + status;
    s.facts.emplace_back("points", std::to_string(d.rows.size()) + " (" + counts + ")");
    std::string params;
    for (const std::string& p : d.parameters) params += (params.empty() ? "" : ", ") + p;
    s.facts.emplace_back("parameters", params.empty() ? "(none)" : params);
    const auto join = [](const std::set<std::string>& v) {
      std::string out;
      for (const std::string& x : v) out += (out.empty() ? "" : ", ") + x;
      return out;
    };
    if (!clusters.empty()) s.facts.emplace_back("cluster", join(clusters));
    if (!models.empty()) s.facts.emplace_back("model", join(models));
    if (!ok.empty()) {
      const auto* best = *std::max_element(ok.begin(), ok.end(), [&](const auto* a, const auto* b) { return throughput(*a) < throughput(*b); });
      std::string text = point_label(d, *best) + ": " + format_count(throughput(*best)) + " " + thr_name + ", iteration " +
                         format_seconds(*value(*best, time_c));
      if (const auto m = value(*best, mfu_c)) text += ", MFU " + format_percent(*m);
      if (const auto g = value(*best, gpus_c)) text += ", " + format_count(*g) + " GPUs";
      s.facts.emplace_back("highest throughput", text);
    }
    if (d.torn_tail) s.paragraphs.push_back("The file's last line is not a whole row (a sweep still running, or stopped): it is left out.");
    if (ok.empty()) s.paragraphs.push_back("No point ran (status ok): nothing to chart; the points are listed below.");
    page.sections.push_back(std::move(s));
  }

  // ---- scaling: throughput against GPUs, and efficiency ----
  std::map<double, const SweepData::Row*> best_at;  // GPUs -> the point with the highest throughput
  for (const auto* r : ok) {
    const auto g = value(*r, gpus_c);
    if (!g || *g <= 0) continue;
    auto& b = best_at[*g];
    if (!b || throughput(*r) > throughput(*b)) b = r;
  }
  if (best_at.size() >= 2) {
    ReportSection s;
    s.title = "Scaling";
    const double g0 = best_at.begin()->first, per_gpu0 = throughput(*best_at.begin()->second) / g0;
    nlohmann::json all = nlohmann::json::array(), best = nlohmann::json::array(), ideal = nlohmann::json::array(),
                   eff = nlohmann::json::array();
    for (const auto* r : ok) {
      if (const auto g = value(*r, gpus_c); g && *g > 0) all.push_back({{"name", point_label(d, *r)}, {"value", {*g, chart_round(throughput(*r))}}});
    }
    ReportTable t{"Scaling: the best point at each GPU count", {"GPUs", "points", "best point", thr_name, thr_name + " per GPU", "efficiency"}, {}, {}};
    std::map<double, std::size_t> count_at;
    for (const auto* r : ok) {
      if (const auto g = value(*r, gpus_c); g && *g > 0) ++count_at[*g];
    }
    for (const auto& [g, r] : best_at) {
      const double th = throughput(*r), e = per_gpu0 > 0 ? th / g / per_gpu0 : 0;
      best.push_back({{"name", point_label(d, *r)}, {"value", {g, chart_round(th)}}});
      ideal.push_back({g, chart_round(per_gpu0 * g)});
      eff.push_back({{"name", point_label(d, *r)}, {"value", {g, chart_round(100 * e, 4)}}});
      t.rows.push_back({format_count(g), std::to_string(count_at[g]), point_label(d, *r), format_count(th), format_number(th / g, 5), format_percent(e)});
    }
    const nlohmann::json x_axis = {{"type", "log"}, {"logBase", 2}, {"name", "GPUs"}, {"nameLocation", "middle"}, {"nameGap", 28},
                                   {"min", g0}, {"max", best_at.rbegin()->first}};
    ReportChart curve;
    curve.title = "Throughput against GPUs";
    curve.option = {{"tooltip", {{"trigger", "item"}, {"confine", true}}},
                    {"legend", {{"top", 0}}},
                    {"grid", {{"left", 80}, {"right", 30}, {"top", 40}, {"bottom", 50}}},
                    {"xAxis", x_axis},
                    {"yAxis", {{"type", "value"}, {"name", thr_name}}},
                    {"series", {{{"name", "every point"}, {"type", "scatter"}, {"data", all}, {"itemStyle", {{"color", "#9aa3b2"}}}},
                                {{"name", "best at each GPU count"}, {"type", "line"}, {"data", best}, {"itemStyle", {{"color", "#2b5fb4"}}}},
                                {{"name", "linear from the fewest GPUs"}, {"type", "line"}, {"data", ideal}, {"symbol", "none"},
                                 {"lineStyle", {{"type", "dashed"}, {"color", "#3a9d5d"}}}, {"itemStyle", {{"color", "#3a9d5d"}}}}}}};
    curve.note = "Every ok point, and the best at each GPU count; the dashed line scales the best at " + format_count(g0) + " GPUs linearly.";
    ReportChart efficiency;
    efficiency.title = "Scaling efficiency";
    efficiency.height_px = 300;
    efficiency.option = {{"tooltip", {{"trigger", "item"}, {"confine", true}}},
                         {"grid", {{"left", 80}, {"right", 30}, {"top", 30}, {"bottom", 50}}},
                         {"xAxis", x_axis},
                         {"yAxis", {{"type", "value"}, {"name", "efficiency (%)"}}},
                         {"series", {{{"name", "efficiency %"}, {"type", "line"}, {"data", eff}, {"itemStyle", {{"color", "#f0a030"}}}}}}};
    efficiency.note = "Per-GPU " + thr_name + " of the best point at each GPU count, relative to the best at the smallest count (" + format_count(g0) + ").";
    s.charts.push_back(std::move(curve));
    s.charts.push_back(std::move(efficiency));
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  } else if (!ok.empty()) {
    page.sections.push_back({"Scaling", {"Every point that ran uses the same number of GPUs: no scaling curve."}, {}, {}, {}});
  }

  // ---- per point: stalls and iteration time ----
  if (!ok.empty()) {
    ReportSection s;
    s.title = "Per point";
    std::vector<std::string> labels;
    std::vector<std::vector<double>> by_category(stall_columns().size());
    nlohmann::json times = nlohmann::json::array();
    const std::vector<std::string> stall_cols = stall_columns();
    std::vector<std::optional<std::size_t>> stall_idx;
    for (const std::string& c : stall_cols) stall_idx.push_back(col(c));
    for (const auto* r : ok) {
      labels.push_back(point_label(d, *r));
      for (std::size_t k = 0; k < stall_cols.size(); ++k) by_category[k].push_back(value(*r, stall_idx[k]).value_or(0));
      times.push_back(chart_round(*value(*r, time_c)));
    }
    s.charts.push_back(stall_chart("Stall breakdown per point (mean over GPUs)", labels, by_category));
    s.charts.back().note = "The points that ran (status ok); each bar adds up to the point's iteration time.";
    ReportChart it = bar_chart("Iteration time per point", labels, std::move(times), "iteration time (s)", "seconds", "#2b5fb4");
    it.note = std::to_string(ok.size()) + " of " + std::to_string(d.rows.size()) + " points ran; the others are listed below, not charted.";
    s.charts.push_back(std::move(it));
    page.sections.push_back(std::move(s));
  }

  // ---- cost and energy (later schemas) ----
  {
    ReportSection s;
    s.title = "Cost and energy";
    const auto ttt = col("time_to_train_s"), cost = col("cost_to_train_usd"), power = col("average_power_w");
    nlohmann::json pts = nlohmann::json::array();
    std::vector<std::pair<std::pair<double, double>, const SweepData::Row*>> tc;
    for (const auto* r : ok) {
      const auto a = value(*r, ttt), b = value(*r, cost);
      if (a && b) tc.push_back({{*a, *b}, r});
    }
    if (!tc.empty()) {
      std::sort(tc.begin(), tc.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      nlohmann::json front = nlohmann::json::array();
      ReportTable t{"The Pareto front: no other point is both faster and cheaper to train", {"point", "time to train", "cost to train (USD)"}, {}, {}};
      std::vector<std::pair<double, double>> xy;
      for (const auto& [tcost, r] : tc) {
        xy.push_back(tcost);
        pts.push_back({{"name", point_label(d, *r)}, {"value", {chart_round(tcost.first / 3600), chart_round(tcost.second)}}});
      }
      for (std::size_t i : pareto_front(xy)) {
        front.push_back(pts[i]);
        t.rows.push_back({point_label(d, *tc[i].second), format_seconds(tc[i].first.first), format_number(tc[i].first.second, 6)});
      }
      ReportChart c;
      c.title = "Time to train against cost to train";
      c.option = {{"tooltip", {{"trigger", "item"}, {"confine", true}}},
                  {"legend", {{"top", 0}}},
                  {"grid", {{"left", 90}, {"right", 30}, {"top", 40}, {"bottom", 50}}},
                  {"xAxis", {{"type", "value"}, {"name", "time to train (h)"}, {"nameLocation", "middle"}, {"nameGap", 28}, {"scale", true}}},
                  {"yAxis", {{"type", "value"}, {"name", "cost to train (USD)"}, {"scale", true}}},
                  {"series", {{{"name", "every point"}, {"type", "scatter"}, {"data", pts}, {"itemStyle", {{"color", "#9aa3b2"}}}},
                              pareto_series(std::move(front), 9)}}};
      c.note = "Lower left is better: the red points are those no other point beats on both time and cost to train.";
      s.charts.push_back(std::move(c));
      s.tables.push_back(std::move(t));
    }
    nlohmann::json watts = nlohmann::json::array();
    std::vector<std::string> labels;
    for (const auto* r : ok) {
      if (const auto w = value(*r, power)) {
        labels.push_back(point_label(d, *r));
        watts.push_back(chart_round(*w / 1e3));
      }
    }
    if (!labels.empty()) {
      ReportChart c = bar_chart("Average power per point", labels, std::move(watts), "average power (kW)", "kW", "#9c6b3c");
      s.charts.push_back(std::move(c));
    }
    if (s.charts.empty()) {
      s.paragraphs.push_back("The rows carry no time, cost or power to train (columns time_to_train_s, cost_to_train_usd and "
                             "average_power_w absent or empty): not charted.");
    }
    page.sections.push_back(std::move(s));
  }

  // ---- the points, as tables ----
  {
    ReportSection s;
    s.title = "Points";
    std::vector<std::string> cost_present;
    for (const char* c : kCostColumns) {
      const auto i = col(c);
      if (!i) continue;
      for (const auto& r : d.rows) {
        if (r.numbers[*i]) {
          cost_present.emplace_back(c);
          break;
        }
      }
    }
    ReportTable all{"Every point", {"point"}, {}, {}};
    for (const std::string& p : d.parameters) all.header.push_back(p);
    for (const char* h : {"status", "GPUs", "iteration time", "tokens/s", "samples/s", "MFU", "dominant stall"}) all.header.emplace_back(h);
    for (const std::string& c : cost_present) all.header.push_back(c);
    ReportTable failed{"Points that did not run (not charted)", {"point"}, {}, {}};
    for (const std::string& p : d.parameters) failed.header.push_back(p);
    failed.header.emplace_back("status");
    failed.header.emplace_back("reason");
    const auto cell = [](std::optional<double> v, auto format) { return v ? format(*v) : std::string(); };
    for (const SweepData::Row& r : d.rows) {
      std::vector<std::string> row = {std::to_string(r.point)};
      row.insert(row.end(), r.values.begin(), r.values.end());
      if (r.status != "ok") {
        std::vector<std::string> f = row;
        f.push_back(r.status);
        f.push_back(r.reason);
        failed.rows.push_back(std::move(f));
      }
      row.push_back(r.status);
      row.push_back(cell(value(r, gpus_c), [](double v) { return format_count(v); }));
      row.push_back(cell(value(r, time_c), [](double v) { return format_seconds(v); }));
      row.push_back(cell(value(r, tokens_c), [](double v) { return format_count(v); }));
      row.push_back(cell(value(r, samples_c), [](double v) { return format_number(v, 5); }));
      row.push_back(cell(value(r, mfu_c), [](double v) { return format_percent(v); }));
      row.push_back(r.dominant);
      for (const std::string& c : cost_present) row.push_back(cell(value(r, col(c)), [](double v) { return format_number(v, 6); }));
      all.rows.push_back(std::move(row));
    }
    if (!failed.rows.empty()) s.tables.push_back(std::move(failed));
    s.tables.push_back(std::move(all));
    page.sections.push_back(std::move(s));
  }
}

}  // namespace cs::results
