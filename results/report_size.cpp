// `clustersim report` on the sizing advisor's result (`clustersim size --json`, docs/sizing.md):
// the answer, the paper estimates, the estimated candidates (time to train against capital, with
// the deadline and the Pareto front) and the simulated finalists (time, cost, power).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "results/report_kinds.h"

namespace cs::results {
namespace {

std::string days(double seconds) { return format_number(seconds / 86400, 4) + " days"; }
std::string dollars(double v) { return "$" + format_count(v); }

}  // namespace

bool is_size_result(const ReportSource& s) {
  if (s.folder) return false;
  const nlohmann::json j = nlohmann::json::parse(s.text, nullptr, false);
  return j.is_object() && j.contains("kind") && j["kind"] == "size" && j.contains("schema");
}

void size_result_report(const ReportSource& src, ReportPage& page) {
  const ConfigDocument doc = ConfigDocument::parse(src.text, src.path);
  const ConfigNode root = doc.root();
  if (root.at("schema").as_int(1, 1000) != 1) root.at("schema").fail_expected("size result schema 1");
  const std::string name = root.at("name").as_string();
  page.title = "Sizing: " + name;
  const ConfigNode goal = root.at("goal");
  const double deadline = goal.at("deadline_s").as_number();

  // ---- the answer ----
  {
    ReportSection s;
    s.title = "Answer";
    s.paragraphs.push_back(root.at("answer").as_string());
    s.facts.push_back({"tokens", format_count(goal.at("tokens").as_number())});
    s.facts.push_back({"deadline", days(deadline)});
    if (!goal.at("budget_usd").json().is_null()) s.facts.push_back({"budget", dollars(goal.at("budget_usd").as_number())});
    s.facts.push_back({"no cluster needed", root.at("no_cluster_needed").as_bool() ? "yes" : "no"});
    page.sections.push_back(std::move(s));
  }
  // ---- on paper ----
  {
    const ConfigNode e = root.at("estimates");
    ReportSection s;
    s.title = "On paper";
    s.facts.push_back({"parameters", format_count(e.at("parameters").as_number())});
    s.facts.push_back({"active parameters", format_count(e.at("active_parameters").as_number())});
    s.facts.push_back({"iterations", format_count(e.at("iterations").as_number())});
    s.facts.push_back({"FLOPs to train", format_number(e.at("flops_to_train").as_number(), 4)});
    s.facts.push_back({"6ND", format_number(e.at("flops_6nd").as_number(), 4)});
    s.facts.push_back({"model states (16 B per parameter)", format_bytes_decimal(e.at("model_state_bytes").as_number())});
    s.facts.push_back({"data", format_bytes_decimal(e.at("data_volume_bytes").as_number())});
    s.facts.push_back({"storage read rate for the deadline", format_bytes_decimal(e.at("storage_read_rate_bytes_per_s").as_number()) + "/s"});
    s.facts.push_back({"GPU", e.at("gpu").as_string()});
    s.facts.push_back({"GPUs for memory (lower bound)", format_count(e.at("gpus_for_memory").as_number())});
    s.facts.push_back({"GPUs for the deadline at peak (lower bound)", format_count(e.at("gpus_for_deadline").as_number())});
    page.sections.push_back(std::move(s));
  }
  // ---- candidates ----
  {
    ReportSection s;
    s.title = "Candidates (the plan search's estimate)";
    std::map<std::string, nlohmann::json> by_cluster;
    std::vector<std::pair<std::pair<double, double>, std::string>> points;
    ReportTable t{"Every candidate", {"cluster", "GPUs", "servers", "plan", "time to train (estimate)", "capital", "meets"}, {}, {}};
    for (const ConfigNode& c : root.at("candidates").elements()) {
      const std::string cluster = c.at("cluster").as_string();
      const double gpus = c.at("gpus").as_number();
      if (auto skipped = c.find("skipped")) {
        t.rows.push_back({cluster, format_count(gpus), format_count(c.at("servers").as_number()), "skipped: " + skipped->as_string(), "", "", ""});
        continue;
      }
      const double time = c.at("estimated_time_to_train_s").as_number();
      const double capital = c.at("capital_usd").as_number();
      const std::string label = cluster + ", " + format_count(gpus) + " GPUs";
      by_cluster[cluster].push_back({{"name", label}, {"value", {chart_round(time / 86400), chart_round(capital)}}});
      points.push_back({{time, capital}, label});
      t.rows.push_back({cluster, format_count(gpus), format_count(c.at("servers").as_number()), c.at("plan").at("label").as_string(),
                        days(time), dollars(capital), c.at("meets_deadline").as_bool() ? "yes" : "no"});
    }
    if (!points.empty()) {
      std::sort(points.begin(), points.end());
      std::vector<std::pair<double, double>> xy;
      for (const auto& pt : points) xy.push_back(pt.first);
      nlohmann::json front = nlohmann::json::array();
      for (std::size_t i : pareto_front(xy)) {
        front.push_back({{"name", points[i].second},
                         {"value", {chart_round(points[i].first.first / 86400), chart_round(points[i].first.second)}}});
      }
      nlohmann::json series = nlohmann::json::array();
      for (auto& [cluster, data] : by_cluster) {
        series.push_back({{"name", cluster}, {"type", "scatter"}, {"data", data}, {"symbolSize", 10}});
      }
      nlohmann::json line = pareto_series(std::move(front), 6);
      line["markLine"] = dashed_mark_line("xAxis", chart_round(deadline / 86400), "deadline");
      series.push_back(std::move(line));
      ReportChart c;
      c.title = "Time to train against capital";
      c.option = {{"tooltip", {{"trigger", "item"}, {"confine", true}}},
                  {"legend", {{"top", 0}}},
                  {"grid", {{"left", 100}, {"right", 30}, {"top", 50}, {"bottom", 50}}},
                  {"xAxis", {{"type", "value"}, {"name", "time to train (days)"}, {"nameLocation", "middle"}, {"nameGap", 28}, {"scale", true}}},
                  {"yAxis", {{"type", "value"}, {"name", "capital (USD)"}, {"scale", true}}},
                  {"series", series}};
      c.note = "Left of the dashed line meets the deadline; lower left is better (red: no other candidate is both faster and cheaper).";
      s.charts.push_back(std::move(c));
    }
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
  // ---- finalists ----
  {
    ReportSection s;
    s.title = "Finalists (simulated in full)";
    std::vector<std::string> labels;
    nlohmann::json times = nlohmann::json::array(), power = nlohmann::json::array();
    ReportTable t{"Finalists", {"cluster", "GPUs", "plan", "time to train", "MFU", "capital", "cost to train", "power (full load)", "limited by"}, {}, {}};
    for (const ConfigNode& f : root.at("finalists").elements()) {
      const std::string cluster = f.at("cluster").as_string();
      const double gpus = f.at("gpus").as_number();
      const std::string plan = f.at("plan").at("label").as_string();
      if (auto failure = f.find("failure")) {
        t.rows.push_back({cluster, format_count(gpus), plan, "refused: " + failure->as_string(), "", "", "", "", ""});
        continue;
      }
      const double time = f.at("time_to_train_s").as_number();
      labels.push_back(cluster + ", " + format_count(gpus) + " GPUs");
      times.push_back(chart_round(time / 86400));
      power.push_back(chart_round(f.at("power_full_load_w").as_number() / 1e3));
      const nlohmann::json& stall = f.at("dominant_stall").json();
      t.rows.push_back({cluster, format_count(gpus), plan, days(time), format_percent(f.at("mfu").as_number()),
                        dollars(f.at("capital_usd").as_number()), dollars(f.at("cost_to_train_usd").as_number()),
                        format_number(f.at("power_full_load_w").as_number() / 1e3, 4) + " kW",
                        stall.is_string() ? stall.get<std::string>() + " (" + format_percent(f.at("dominant_stall_share").as_number()) + ")" : ""});
    }
    if (!labels.empty()) {
      ReportChart c = bar_chart("Time to train per finalist", labels, std::move(times), "time to train (days)", "days", "#2b5fb4");
      c.option["series"][0]["markLine"] = dashed_mark_line("yAxis", chart_round(deadline / 86400), "deadline");
      s.charts.push_back(std::move(c));
      s.charts.push_back(bar_chart("Power at full load per finalist", labels, std::move(power), "IT power (kW)", "kW", "#9c6b3c"));
    }
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
}

}  // namespace cs::results
