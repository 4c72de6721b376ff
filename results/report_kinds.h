// The kinds of input `clustersim report` knows, each told from its content and each one function
// that fills a page (docs/report.md). To add a kind (the sizing advisor's `clustersim size --json`):
// write `bool is_<kind>(const ReportSource&)` that looks at the content only (cheaply: the first
// line, a schema key), a `void <kind>_report(const ReportSource&, ReportPage&)` that reads it
// strictly (InputErrors naming the file and the JSON path or line) and adds sections, and list
// both in kReportKinds (results/report_html.cpp). The shared chart helpers are below.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "results/report_input.h"
#include "results/report_page.h"

namespace cs::results {

struct ReportKind {
  const char* name;                                  // "run folder", said on the page and in errors
  bool (*recognizes)(const ReportSource&);           // from the content, without failing
  void (*fill)(const ReportSource&, ReportPage&);    // throws InputError on bad content
};

// `clustersim run --out DIR` (docs/outputs.md): summary.json, per_gpu.csv, links.csv, trace.json;
// a replay's (`run --trace`, docs/chakra.md) with per_rank.csv instead of per_gpu.csv.
bool is_run_folder(const ReportSource& s);
void run_folder_report(const ReportSource& s, ReportPage& page);

// `clustersim sweep --out results.csv|.jsonl` (docs/outputs.md, "Sweep results", schema 1 and
// later schemas, which add columns at the end).
bool is_sweep_results(const ReportSource& s);
void sweep_results_report(const ReportSource& s, ReportPage& page);

// `clustersim size --json` (docs/sizing.md, schema 1): "kind": "size".
bool is_size_result(const ReportSource& s);
void size_result_report(const ReportSource& s, ReportPage& page);

// `clustersim serve --out DIR` (docs/serving.md): summary.json of schema "clustersim-serving",
// requests.csv, timeline.csv, trace.json. Tried before the run folder.
bool is_serving_folder(const ReportSource& s);
void serving_folder_report(const ReportSource& s, ReportPage& page);

// ---- helpers the kinds share (results/report_charts.cpp) ----

// The assumed and fitted values a summary.json lists ("assumptions"): a section for the end of
// the page.
ReportSection assumptions_section(const ConfigNode& root);

// The stall categories as per_gpu.csv and the sweep rows name their columns ("compute_s", ...),
// in the attribution's order, and the colour each is drawn in.
std::vector<std::string> stall_columns();
std::string stall_label(std::size_t k);  // "compute", "exposed_tp", ...
const char* stall_colour(std::size_t k);

// A value rounded to `digits` significant digits, for chart data (a smaller page; the tables keep
// more).
double chart_round(double v, int digits = 6);

// People's numbers: "1.234 s", "12.3 ms"; "1,234,567"; "42.1%"; "1.50 GB".
std::string format_seconds(double s);
std::string format_count(double v);
std::string format_percent(double fraction, int decimals = 1);
std::string format_bytes_decimal(double bytes);
std::string format_number(double v, int significant = 4);

// The ECharts option of bars over category labels (the series given): rotated labels when there
// are more than 3, zoom (wheel and slider) when more than 40, a legend when asked.
nlohmann::json category_bars_option(const std::vector<std::string>& labels, std::string y_name, nlohmann::json series, bool legend);
// One series of bars over `labels`.
ReportChart bar_chart(std::string title, const std::vector<std::string>& labels, nlohmann::json values, std::string series_name,
                      std::string y_name, const char* colour);

// Of points sorted by (x, y), lower being better on both: the indices of the Pareto front, each
// point strictly below (in y) every point before it.
std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& sorted);
// The red step line that draws a Pareto front over a scatter (`data`: the front's items).
nlohmann::json pareto_series(nlohmann::json data, int symbol_size);
// A dashed, labelled line across a chart at `value` on the "xAxis" or the "yAxis" (a series' markLine).
nlohmann::json dashed_mark_line(const char* axis, double value, const char* label);

// A stacked bar chart of the stall categories over `labels` (one vector of seconds per category,
// each as long as `labels`); zoomable when there are many bars.
ReportChart stall_chart(std::string title, const std::vector<std::string>& labels,
                        const std::vector<std::vector<double>>& seconds_by_category);

}  // namespace cs::results
