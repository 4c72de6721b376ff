// The page of `clustersim report` (docs/report.md): a title, then sections of text, key facts,
// charts and tables, rendered as ONE self-contained HTML file that opens offline. Apache ECharts
// (third_party/echarts, compiled into the binary) is inlined into the page.
//
// Nothing from the input reaches the page as markup or code:
//   - text, facts and table cells are HTML-escaped (& < > " ');
//   - the charts' ECharts options are data, embedded as one JSON document in
//     <script type="application/json">, with every '<', '>' and '&' written as a \u escape (so no
//     "</script" or "<!--" can appear in it) and invalid UTF-8 replaced; the page's own script
//     (fixed text) parses it with JSON.parse and hands each option to echarts.init().setOption().
//   - A chart option cannot carry a function; a series that needs one names it by a string the
//     page's script knows: "renderItem": "gantt" (a timeline bar from [row, start, end]) and
//     "tooltip": {"formatter": "gantt"} (a span's name, start and length, escaped by ECharts'
//     encodeHTML).
// Charts are drawn at once, without animation or progressive rendering, so a screenshot taken
// when the page has loaded is final.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cs::results {

struct ReportChart {
  std::string title;
  nlohmann::json option;  // an ECharts option: data only (see above)
  int height_px = 360;
  std::string note;       // one line under the chart (what was left out, how it is aggregated)
};

struct ReportTable {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string note;
};

struct ReportSection {
  std::string title;
  std::vector<std::string> paragraphs;                       // plain text
  std::vector<std::pair<std::string, std::string>> facts;    // label, value
  std::vector<ReportChart> charts;
  std::vector<ReportTable> tables;
};

struct ReportPage {
  std::string title;
  std::string kind;   // what the input was ("run folder", "sweep results")
  std::string input;  // its path, as given
  std::vector<std::string> notes;  // lines under the title
  std::vector<ReportSection> sections;
};

// The whole HTML document.
std::string render_report_page(const ReportPage& page);

// `text` with & < > " ' as character references.
std::string html_escape(std::string_view text);
// `value` as JSON that is safe inside a <script> element: '<', '>' and '&' as \u escapes,
// invalid UTF-8 replaced by U+FFFD.
std::string script_safe_json(const nlohmann::json& value);

// The vendored echarts.min.js (generated from third_party/echarts by cmake/EmbedFiles.cmake).
std::string_view echarts_min_js();

}  // namespace cs::results
