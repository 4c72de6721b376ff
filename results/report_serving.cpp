// The report of a serving folder (`clustersim serve --out DIR`, docs/serving.md): the headline and
// latency table (summary.json), the latency distributions (requests.csv), the deployment's state
// over time (timeline.csv) and the load on each replica. summary.json is required; a folder
// without one of the CSV files gets a note instead of its charts.
#include <algorithm>
#include <filesystem>

#include "core/config.h"
#include "core/errors.h"
#include "core/input_file.h"
#include "results/report_kinds.h"

namespace cs::results {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kCdfPoints = 400;       // points per latency distribution
constexpr std::size_t kTimelinePoints = 2000;  // samples drawn of the timeline

std::string file_in(const ReportSource& s, const char* name) { return (fs::path(s.path) / name).string(); }

double num(const ConfigNode& n, std::string_view key) { return n.at(key).as_number(); }

void headline(const ConfigNode& root, ReportPage& page) {
  page.title = "clustersim report: serving " + root.at("scenario").as_string();
  ReportSection s;
  s.title = "Headline";
  const ConfigNode d = root.at("deployment");
  s.facts.emplace_back("cluster", root.at("cluster").as_string());
  s.facts.emplace_back("model", root.at("model").as_string() + " (" + d.at("precision").as_string() + ")");
  std::string deployment = format_count(num(d, "replicas")) + " x TP " + format_count(num(d, "tp"));
  if (const auto p = d.find("prefill"); p && !p->json().is_null()) {
    deployment = format_count(num(*p, "replicas")) + " prefill x TP " + format_count(num(*p, "tp")) + " + " + deployment + " decode";
  }
  s.facts.emplace_back("replicas", deployment + ", " + format_count(num(d, "gpus")) + " GPUs, router " + d.at("router").as_string());
  const ConfigNode r = root.at("requests");
  s.facts.emplace_back("requests", format_count(num(r, "total")) + " (completed " + format_count(num(r, "completed")) + ", lost " +
                                       format_count(num(r, "lost")) + ", rejected " + format_count(num(r, "rejected")) +
                                       ", retried " + format_count(num(r, "retried")) + ", preemptions " +
                                       format_count(num(r, "preemptions")) + ")");
  const ConfigNode t = root.at("throughput");
  s.facts.emplace_back("throughput", format_number(num(t, "requests_per_s")) + " requests/s, " +
                                         format_count(num(t, "output_tokens_per_s")) + " output tokens/s");
  const ConfigNode slo = root.at("slo");
  if (!slo.at("ttft_s").json().is_null() || !slo.at("tpot_s").json().is_null()) {
    s.facts.emplace_back("goodput", format_number(num(t, "goodput_requests_per_s")) + " requests/s, " +
                                        format_percent(num(t, "slo_attainment")) + " within the SLO");
  }
  s.facts.emplace_back("GPU busy", format_percent(num(root, "gpu_utilization")));
  s.facts.emplace_back("availability", format_percent(num(root, "availability"), 3));
  const ConfigNode kv = root.at("kv_cache");
  s.facts.emplace_back("KV cache", format_percent(num(kv, "mean_occupancy")) + " mean, " + format_percent(num(kv, "peak_occupancy")) + " peak");

  ReportTable lat{"Latency (summary.json)", {"metric", "mean", "p50", "p90", "p99", "max"}, {}, {}};
  for (const auto& [key, label] : {std::pair{"ttft_s", "TTFT"}, std::pair{"tpot_s", "TPOT"}, std::pair{"e2e_latency_s", "end to end"}}) {
    const ConfigNode l = root.at(key);
    std::vector<std::string> row = {label};
    for (const char* q : {"mean", "p50", "p90", "p99", "max"}) row.push_back(format_seconds(num(l, q)));
    lat.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(lat));
  page.sections.push_back(std::move(s));
}

// The distributions of TTFT, TPOT and E2E as cumulative curves (at most kCdfPoints each).
void latency_section(const std::string& file, ReportPage& page) {
  const CsvTable t = parse_csv(read_input_file(file), file);
  ReportSection s;
  s.title = "Latency distributions";
  nlohmann::json series = nlohmann::json::array();
  const char* colours[] = {"#2b5fb4", "#f0a030", "#3a9a5b"};
  int k = 0;
  for (const auto& [column, label] : {std::pair{"ttft_s", "TTFT"}, std::pair{"tpot_s", "TPOT"}, std::pair{"e2e_s", "end to end"}}) {
    const auto c = t.column(column);
    if (!c) throw InputError(file, "line 1", std::string("no column ") + column);
    std::vector<double> v;
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      if (const auto x = cell_number(t.rows[i][*c], file, t.lines[i], column); x && *x > 0) v.push_back(*x);
    }
    std::sort(v.begin(), v.end());
    nlohmann::json data = nlohmann::json::array();
    const std::size_t n = v.size();
    const std::size_t step = std::max<std::size_t>(1, n / kCdfPoints);
    for (std::size_t i = 0; i < n; i += step) {
      data.push_back({chart_round(v[i]), chart_round(static_cast<double>(i + 1) / static_cast<double>(n), 4)});
    }
    if (n > 0) data.push_back({chart_round(v.back()), 1.0});
    series.push_back({{"name", label}, {"type", "line"}, {"showSymbol", false}, {"data", std::move(data)},
                      {"itemStyle", {{"color", colours[k++]}}}});
  }
  ReportChart c;
  c.title = "Share of completed requests within a latency (requests.csv)";
  c.option = {{"tooltip", {{"trigger", "axis"}}},
              {"legend", {{"top", 0}}},
              {"xAxis", {{"type", "log"}, {"name", "seconds"}, {"nameLocation", "middle"}, {"nameGap", 28}}},
              {"yAxis", {{"type", "value"}, {"name", "share of requests"}, {"max", 1}}},
              {"series", std::move(series)}};
  c.note = "Cumulative: a point (x, y) says y of the completed requests took at most x seconds. TPOT counts outputs of 2 tokens or more.";
  s.charts.push_back(std::move(c));
  page.sections.push_back(std::move(s));
}

void timeline_section(const std::string& file, ReportPage& page) {
  const CsvTable t = parse_csv(read_input_file(file), file);
  const char* cols[] = {"time_s", "waiting", "running", "kv_blocks_used", "replicas_up"};
  std::vector<std::size_t> idx;
  for (const char* c : cols) {
    const auto i = t.column(c);
    if (!i) throw InputError(file, "line 1", std::string("no column ") + c);
    idx.push_back(*i);
  }
  nlohmann::json waiting = nlohmann::json::array(), running = nlohmann::json::array(), kv = nlohmann::json::array(),
                 up = nlohmann::json::array();
  const std::size_t step = std::max<std::size_t>(1, t.rows.size() / kTimelinePoints);
  for (std::size_t r = 0; r < t.rows.size(); r += step) {
    double v[5];
    for (std::size_t k = 0; k < 5; ++k) v[k] = cell_number(t.rows[r][idx[k]], file, t.lines[r], cols[k]).value_or(0);
    waiting.push_back({chart_round(v[0]), v[1]});
    running.push_back({chart_round(v[0]), v[2]});
    kv.push_back({chart_round(v[0]), v[3]});
    up.push_back({chart_round(v[0]), v[4]});
  }
  ReportSection s;
  s.title = "Over time (timeline.csv)";
  ReportChart q;
  q.title = "Requests waiting and running, replicas up";
  q.option = {{"tooltip", {{"trigger", "axis"}}},
              {"legend", {{"top", 0}}},
              {"xAxis", {{"type", "value"}, {"name", "time (s)"}, {"nameLocation", "middle"}, {"nameGap", 28}}},
              {"yAxis", {{{"type", "value"}, {"name", "requests"}}, {{"type", "value"}, {"name", "replicas up"}, {"minInterval", 1}}}},
              {"dataZoom", {{{"type", "inside"}}, {{"type", "slider"}}}},
              {"series", {{{"name", "waiting"}, {"type", "line"}, {"showSymbol", false}, {"data", waiting}, {"itemStyle", {{"color", "#c0392b"}}}},
                          {{"name", "running"}, {"type", "line"}, {"showSymbol", false}, {"data", running}, {"itemStyle", {{"color", "#2b5fb4"}}}},
                          {{"name", "replicas up"}, {"type", "line"}, {"step", "end"}, {"showSymbol", false}, {"yAxisIndex", 1},
                           {"data", up}, {"itemStyle", {{"color", "#888888"}}}}}}};
  s.charts.push_back(std::move(q));
  ReportChart k;
  k.title = "KV-cache blocks in use, all replicas";
  k.option = {{"tooltip", {{"trigger", "axis"}}},
              {"xAxis", {{"type", "value"}, {"name", "time (s)"}, {"nameLocation", "middle"}, {"nameGap", 28}}},
              {"yAxis", {{"type", "value"}, {"name", "blocks"}}},
              {"dataZoom", {{{"type", "inside"}}, {{"type", "slider"}}}},
              {"series", {{{"name", "KV blocks"}, {"type", "line"}, {"showSymbol", false}, {"areaStyle", nlohmann::json::object()},
                           {"data", kv}, {"itemStyle", {{"color", "#3a9a5b"}}}}}}};
  s.charts.push_back(std::move(k));
  page.sections.push_back(std::move(s));
}

void replica_section(const ConfigNode& root, ReportPage& page) {
  std::vector<std::string> labels;
  nlohmann::json completed = nlohmann::json::array(), busy = nlohmann::json::array();
  ReportTable t{"Replicas (summary.json, replicas)", {"replica", "role", "GPUs", "completed", "busy", "down", "failures", "preemptions", "KV peak"}, {}, {}};
  std::size_t k = 0;
  for (const ConfigNode& r : root.at("replicas").elements()) {
    const std::string label = std::to_string(k++);
    labels.push_back(label);
    completed.push_back(num(r, "completed"));
    busy.push_back(chart_round(100 * num(r, "utilization"), 4));
    std::string gpus;
    const ConfigNode g = r.at("gpus");
    if (g.size() > 0) gpus = format_count(g.at(std::size_t{0}).as_number()) + "-" + format_count(g.at(g.size() - 1).as_number());
    t.rows.push_back({label, r.at("role").as_string(), gpus, format_count(num(r, "completed")), format_seconds(num(r, "busy_s")),
                      format_seconds(num(r, "down_s")), format_count(num(r, "failures")), format_count(num(r, "preemptions")),
                      format_count(num(r, "kv_peak_blocks")) + " of " + format_count(num(r, "kv_blocks"))});
  }
  ReportSection s;
  s.title = "Load per replica";
  s.charts.push_back(bar_chart("Requests completed per replica", labels, std::move(completed), "completed", "requests", "#2b5fb4"));
  s.charts.push_back(bar_chart("Time in iterations per replica (%)", labels, std::move(busy), "busy", "%", "#f0a030"));
  s.tables.push_back(std::move(t));
  page.sections.push_back(std::move(s));
}

}  // namespace

bool is_serving_folder(const ReportSource& s) {
  if (!s.folder) return false;
  std::error_code ec;
  const std::string summary = file_in(s, "summary.json");
  if (!fs::is_regular_file(summary, ec)) return false;
  try {
    return read_input_file(summary).find("\"schema\": \"clustersim-serving\"") != std::string::npos;
  } catch (const std::exception&) {
    return false;  // the run folder's reader reports what is wrong with it
  }
}

void serving_folder_report(const ReportSource& s, ReportPage& page) {
  const ConfigDocument summary = ConfigDocument::load(file_in(s, "summary.json"));
  const ConfigNode root = summary.root();
  headline(root, page);
  std::error_code ec;
  const std::string requests = file_in(s, "requests.csv"), timeline = file_in(s, "timeline.csv");
  if (fs::exists(requests, ec)) {
    latency_section(requests, page);
  } else {
    page.sections.push_back({"Latency distributions", {"requests.csv is not in the folder: the distributions are not charted."}, {}, {}, {}});
  }
  if (fs::exists(timeline, ec)) {
    timeline_section(timeline, page);
  } else {
    page.sections.push_back({"Over time", {"timeline.csv is not in the folder: the timeline is not charted."}, {}, {}, {}});
  }
  replica_section(root, page);
  page.sections.push_back(assumptions_section(root));
}

}  // namespace cs::results
