#include "results/report_page.h"

namespace cs::results {
namespace {

// Tables longer than this start folded (a 1,000-point sweep stays readable).
constexpr std::size_t kOpenTableRows = 25;

constexpr std::string_view kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:16px 24px;color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:0.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #d8dce4;padding-bottom:4px}
h3{font-size:1em;margin:1.2em 0 0.4em}.cs-sub{color:#5a6272;margin:0.2em 0}
.cs-chart{width:100%;border:1px solid #eceef2;border-radius:4px;margin:8px 0 2px}
.cs-note{color:#5a6272;font-size:0.9em;margin:2px 0 10px}
dl.cs-facts{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:8px 0}
dl.cs-facts dt{color:#5a6272}dl.cs-facts dd{margin:0;font-variant-numeric:tabular-nums}
.cs-scroll{overflow-x:auto}table.cs-table{border-collapse:collapse;font-size:0.85em;margin:6px 0 12px;font-variant-numeric:tabular-nums}
table.cs-table th,table.cs-table td{border:1px solid #dde1e8;padding:2px 8px;text-align:left;vertical-align:top}
table.cs-table th{background:#f3f5f8}details summary{cursor:pointer;color:#2b5fb4;margin:6px 0}
footer{color:#8a91a0;font-size:0.8em;margin-top:3em}
)css";

// The page's own script: fixed text, no input in it. It reads the charts from the JSON element.
constexpr std::string_view kScript = R"js(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("cs-report-data").textContent);
  function gantt(params, api) {
    var row = api.value(0), a = api.coord([api.value(1), row]), b = api.coord([api.value(2), row]);
    var h = api.size([0, 1])[1] * 0.6, cs = params.coordSys;
    var shape = echarts.graphic.clipRectByRect(
      {x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 0.5), height: h},
      {x: cs.x, y: cs.y, width: cs.width, height: cs.height});
    return shape && {type: "rect", shape: shape, style: api.style()};
  }
  function ganttTooltip(p) {
    var v = p.value, us = function (x) { return x >= 1000 ? (x / 1000).toFixed(3) + " ms" : x.toFixed(1) + " \u00b5s"; };
    return echarts.format.encodeHTML(p.seriesName + ": " + p.name) + "<br>start " + us(v[1]) + ", length " + us(v[2] - v[1]);
  }
  var named = {renderItem: {gantt: gantt}, formatter: {gantt: ganttTooltip}};
  function resolve(o) {
    if (!o || typeof o !== "object") return;
    if (typeof o.renderItem === "string") o.renderItem = named.renderItem[o.renderItem];
    if (o.tooltip && typeof o.tooltip.formatter === "string" && named.formatter[o.tooltip.formatter]) {
      o.tooltip.formatter = named.formatter[o.tooltip.formatter];
    }
  }
  var charts = [];
  data.charts.forEach(function (c) {
    var el = document.getElementById(c.id);
    if (!el) return;
    resolve(c.option);
    (c.option.series || []).forEach(resolve);
    var chart = echarts.init(el, null, {renderer: "canvas"});
    chart.setOption(c.option);
    charts.push(chart);
  });
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
})();
)js";

void render_table(std::string& out, const ReportTable& t) {
  out += t.rows.size() > kOpenTableRows ? "<details>" : "<details open>";
  out += "<summary>" + html_escape(t.title) + " (" + std::to_string(t.rows.size()) + (t.rows.size() == 1 ? " row" : " rows") +
         ")</summary>\n<div class=\"cs-scroll\"><table class=\"cs-table\"><thead><tr>";
  for (const std::string& h : t.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + html_escape(cell) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>";
  if (!t.note.empty()) out += "<p class=\"cs-note\">" + html_escape(t.note) + "</p>";
  out += "</details>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& value) {
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  // '<', '>' and '&' occur only inside JSON strings, where \u003c reads back the same.
  for (const char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_report_page(const ReportPage& page) {
  std::string out;
  const std::string_view js = echarts_min_js();
  out.reserve(js.size() + 64 * 1024);
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"clustersim report\">\n<title>";
  out += html_escape(page.title);
  out += "</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n<header><h1>" + html_escape(page.title) + "</h1>\n";
  out += "<p class=\"cs-sub\">" + html_escape(page.kind) + ": <code>" + html_escape(page.input) + "</code></p>\n";
  for (const std::string& n : page.notes) out += "<p class=\"cs-sub\">" + html_escape(n) + "</p>\n";
  out += "</header>\n";

  nlohmann::json charts = nlohmann::json::array();
  for (const ReportSection& s : page.sections) {
    out += "<section>\n<h2>" + html_escape(s.title) + "</h2>\n";
    for (const std::string& p : s.paragraphs) out += "<p>" + html_escape(p) + "</p>\n";
    if (!s.facts.empty()) {
      out += "<dl class=\"cs-facts\">\n";
      for (const auto& [label, value] : s.facts) out += "<dt>" + html_escape(label) + "</dt><dd>" + html_escape(value) + "</dd>\n";
      out += "</dl>\n";
    }
    for (const ReportChart& c : s.charts) {
      const std::string id = "cs-chart-" + std::to_string(charts.size());
      out += "<h3>" + html_escape(c.title) + "</h3>\n<div class=\"cs-chart\" id=\"" + id + "\" style=\"height:" +
             std::to_string(c.height_px) + "px\"></div>\n";
      if (!c.note.empty()) out += "<p class=\"cs-note\">" + html_escape(c.note) + "</p>\n";
      nlohmann::json option = c.option;
      // Drawn at once, without animation or progressive (frame by frame) rendering: the page is
      // final when it has loaded (a screenshot, a headless browser's virtual time).
      option["animation"] = false;
      if (option.contains("series") && option["series"].is_array()) {
        for (nlohmann::json& series : option["series"]) series["progressive"] = 0;
      }
      charts.push_back({{"id", id}, {"option", std::move(option)}});
    }
    for (const ReportTable& t : s.tables) render_table(out, t);
    out += "</section>\n";
  }
  out += "<footer>Made by <code>clustersim report</code>. Charts: Apache ECharts 5.5.1 (Apache License 2.0), inlined.</footer>\n";
  out += "<script type=\"application/json\" id=\"cs-report-data\">";
  out += script_safe_json({{"charts", std::move(charts)}});
  out += "</script>\n<script>";
  out += js;
  out += "</script>\n<script>";
  out += kScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace cs::results
