// Chart helpers the report kinds share (results/report_kinds.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/config.h"
#include "results/report_kinds.h"
#include "results/stall_attribution.h"

namespace cs::results {

std::vector<std::string> stall_columns() {
  std::vector<std::string> c;
  for (int k = 0; k < kStallCount; ++k) c.push_back(std::string(to_string(static_cast<Stall>(k))) + "_s");
  return c;
}

std::string stall_label(std::size_t k) { return to_string(static_cast<Stall>(k)); }

const char* stall_colour(std::size_t k) {
  // compute green; the exposed communication blues and purples; bubble orange; waiting red;
  // data brown; idle grey.
  static const char* kColours[kStallCount] = {"#3a9d5d", "#4a7bd0", "#6a5acd", "#8e6cc0", "#2fa4c4",
                                              "#1f5f8b", "#f0a030", "#d9534f", "#9c6b3c", "#b0b6c0"};
  return k < static_cast<std::size_t>(kStallCount) ? kColours[k] : "#888888";
}

double chart_round(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return std::isfinite(v) ? v : 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

std::string format_seconds(double s) {
  char buf[48];
  const double a = std::fabs(s);
  if (a >= 3600 * 48) std::snprintf(buf, sizeof buf, "%.2f days", s / 86400);
  else if (a >= 3600) std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  else if (a >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f \xC2\xB5s", s * 1e6);
  return buf;
}

std::string format_count(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f", std::fabs(v));
  std::string digits = buf, out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[i];
    if ((n - 1 - i) % 3 == 0 && i + 1 < n) out += ',';
  }
  return (v < 0 ? "-" : "") + out;
}

std::string format_percent(double fraction, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, fraction * 100);
  return buf;
}

std::string format_bytes_decimal(double bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (std::fabs(bytes) >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, kUnits[u]);
  return buf;
}

std::string format_number(double v, int significant) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

nlohmann::json category_bars_option(const std::vector<std::string>& labels, std::string y_name, nlohmann::json series, bool legend) {
  const bool many = labels.size() > 40;
  nlohmann::json option = {
      {"tooltip", {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}, {"confine", true}}},
      {"grid", {{"left", 20}, {"right", 30}, {"top", legend ? 40 : 30}, {"bottom", many ? 40 : 10}, {"containLabel", true}}},
      {"xAxis", {{"type", "category"}, {"data", labels}, {"axisLabel", {{"rotate", labels.size() > 3 ? 30 : 0}, {"hideOverlap", true}}}}},
      {"yAxis", {{"type", "value"}, {"name", std::move(y_name)}}},
      {"series", std::move(series)}};
  if (legend) option["legend"] = {{"top", 0}, {"type", "scroll"}};
  // Many bars: the first 100 drawn, the rest a drag of the slider away (a 1,000-point page stays
  // quick to open: ECharts lays out and labels only the window).
  if (many) {
    const nlohmann::json window = {{"startValue", 0}, {"endValue", std::min<std::size_t>(labels.size(), 100) - 1}};
    option["dataZoom"] = nlohmann::json::array({window, window});
    option["dataZoom"][0]["type"] = "inside";
    option["dataZoom"][1].update({{"type", "slider"}, {"height", 18}, {"bottom", 6}});
  }
  return option;
}

ReportChart bar_chart(std::string title, const std::vector<std::string>& labels, nlohmann::json values, std::string series_name,
                      std::string y_name, const char* colour) {
  ReportChart c;
  c.title = std::move(title);
  nlohmann::json series = nlohmann::json::array(
      {{{"name", std::move(series_name)}, {"type", "bar"}, {"data", std::move(values)}, {"itemStyle", {{"color", colour}}}}});
  c.option = category_bars_option(labels, std::move(y_name), std::move(series), false);
  return c;
}

ReportChart stall_chart(std::string title, const std::vector<std::string>& labels,
                        const std::vector<std::vector<double>>& seconds_by_category) {
  ReportChart c;
  c.title = std::move(title);
  nlohmann::json series = nlohmann::json::array();
  for (std::size_t k = 0; k < seconds_by_category.size(); ++k) {
    bool any = false;
    nlohmann::json data = nlohmann::json::array();
    for (double s : seconds_by_category[k]) {
      any = any || s > 0;
      data.push_back(chart_round(s));
    }
    if (!any) continue;  // a category no bar has: kept out of the legend
    series.push_back({{"name", stall_label(k)}, {"type", "bar"}, {"stack", "time"}, {"data", std::move(data)},
                      {"itemStyle", {{"color", stall_colour(k)}}}, {"emphasis", {{"focus", "series"}}}});
  }
  c.option = category_bars_option(labels, "seconds", std::move(series), true);
  c.height_px = 400;
  return c;
}

std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& sorted) {
  std::vector<std::size_t> front;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (front.empty() || sorted[i].second < sorted[front.back()].second) front.push_back(i);
  }
  return front;
}

nlohmann::json pareto_series(nlohmann::json data, int symbol_size) {
  return {{"name", "Pareto front"}, {"type", "line"}, {"step", "end"}, {"data", std::move(data)}, {"symbolSize", symbol_size},
          {"itemStyle", {{"color", "#d9534f"}}}, {"lineStyle", {{"color", "#d9534f"}}}};
}

nlohmann::json dashed_mark_line(const char* axis, double value, const char* label) {
  return {{"symbol", "none"}, {"label", {{"formatter", label}}}, {"lineStyle", {{"color", "#333"}, {"type", "dashed"}}},
          {"data", {{{axis, value}}}}};
}

// The assumed and fitted values the prediction rests on: a section for the end of the page.
ReportSection assumptions_section(const ConfigNode& root) {
  ReportSection rests_on;
  rests_on.title = "What the prediction rests on";
  if (const auto a = root.find("assumptions"); a && a->is_array() && a->size() > 0) {
    ReportTable t{"Assumed and fitted values (summary.json, assumptions)", {"value of", "file", "value", "kind", "status"}, {}, {}};
    for (const ConfigNode& e : a->elements()) {
      std::vector<std::string> row;
      for (const char* k : {"value_of", "file", "value", "kind", "status"}) {
        const auto v = e.find(k);
        row.push_back(!v ? "" : v->is_string() ? v->as_string() : v->json().dump());
      }
      t.rows.push_back(std::move(row));
    }
    rests_on.tables.push_back(std::move(t));
  }
  if (rests_on.tables.empty()) rests_on.paragraphs.push_back("summary.json lists no assumed or fitted values.");
  return rests_on;
}

}  // namespace cs::results
