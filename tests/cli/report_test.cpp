// `clustersim report` end to end, without a browser (the browser test is report_browser_test.cpp;
// bad input is in the malformed-input corpus, tests/data/malformed/cases.json):
//  - a run folder's page has its four charts, its headline and finding, and no fetch of anything;
//  - a sweep's page in CSV and JSON Lines; the charts of cost and power appear when a later
//    schema's columns do, a note when they do not; a torn last row is left out, not an error;
//  - strings from the input (a parameter named "</script>...", values with markup) reach the
//    page escaped: never as markup in HTML, never as "</" in the chart data;
//  - "-o -" writes the page alone on standard output; "-o" naming the input is refused.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"

namespace {

namespace fs = std::filesystem;
using cs::test::TempDir;

const std::string kBinary = CS_CLUSTERSIM_BIN;
const std::string kData = CS_TEST_DATA_DIR;
const std::string kSource = CS_SOURCE_DIR;
const std::string kCosts = kData + "/report/sweep-costs-hostile.csv";
const std::string kSchema1 = kData + "/report/sweep-schema1.jsonl";

cs::test::RunResult clustersim(const std::vector<std::string>& args) { return cs::test::run_binary(kBinary, args); }

// Runs `report INPUT -o DIR/name` and returns the page (asserting success).
std::string report(const std::string& input, const TempDir& dir, const std::string& name = "r.html") {
  const std::vector<std::string> args{"report", input, "-o", dir.file(name)};
  const auto r = clustersim(args);
  EXPECT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
  EXPECT_TRUE(r.err.empty()) << r.err;
  return cs::test::read_text(dir.file(name));
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The chart data element's JSON.
nlohmann::json chart_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"cs-report-data\">";
  const std::size_t a = page.find(open);
  EXPECT_NE(a, std::string::npos);
  const std::size_t b = page.find("</script>", a);
  const std::string text = page.substr(a + open.size(), b - a - open.size());
  EXPECT_EQ(text.find('<'), std::string::npos) << "a '<' in the chart data";
  return nlohmann::json::parse(text);
}

std::vector<std::string> chart_titles(const std::string& page) {
  std::vector<std::string> titles;
  for (std::size_t at = page.find("<h3>"); at != std::string::npos; at = page.find("<h3>", at + 1)) {
    titles.push_back(page.substr(at + 4, page.find("</h3>", at) - at - 4));
  }
  return titles;
}

TEST(Report, RunFolderHasItsChartsAndHeadline) {
  TempDir dir("report_run");
  const fs::path run = dir.path() / "run";
  const std::vector<std::string> args{"run", kSource + "/configs/examples/gpt-1.7b-32.json", "--set", "/plan/pp=2", "--set",
                                      "/plan/dp=16", "--out", run.string()};
  const auto r = clustersim(args);
  ASSERT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
  const std::string page = report(run.string(), dir);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(chart_titles(page), (std::vector<std::string>{"Stall breakdown per GPU (one iteration)",
                                                          "Timeline of one iteration (compute and communication streams)",
                                                          "Link utilization by tier", "The hottest links"}));
  EXPECT_EQ(chart_data(page)["charts"].size(), 4u);
  EXPECT_NE(page.find("<dt>iteration time</dt>"), std::string::npos);
  EXPECT_NE(page.find("<dt>MFU</dt>"), std::string::npos);
  EXPECT_NE(page.find("<p>Finding: "), std::string::npos);
  // Offline: nothing is fetched (no external script, style sheet or image).
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(count(page, "<script"), 3u);  // the chart data, ECharts, the page's own
  // A folder without trace.json and links.csv: notes instead of those charts.
  fs::remove(run / "trace.json");
  fs::remove(run / "links.csv");
  const std::string partial = report(run.string(), dir, "partial.html");
  EXPECT_EQ(chart_titles(partial), (std::vector<std::string>{"Stall breakdown per GPU (one iteration)"}));
  EXPECT_NE(partial.find("trace.json is not in the folder"), std::string::npos);
  EXPECT_NE(partial.find("links.csv is not in the folder"), std::string::npos);
}

TEST(Report, ServingFolderHasItsDistributionsTimelineAndReplicas) {
  TempDir dir("report_serve");
  const fs::path out = dir.path() / "serve";
  const std::vector<std::string> args{"serve", kSource + "/configs/examples/serve-70b-disaggregated.json", "--set",
                                      "/requests/count=300", "--out", out.string()};
  const auto r = clustersim(args);
  ASSERT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
  const std::string page = report(out.string(), dir);
  EXPECT_NE(page.find("serving folder (clustersim serve --out)"), std::string::npos);
  EXPECT_EQ(chart_titles(page), (std::vector<std::string>{"Share of completed requests within a latency (requests.csv)",
                                                          "Requests waiting and running, replicas up",
                                                          "KV-cache blocks in use, all replicas", "Requests completed per replica",
                                                          "Time in iterations per replica (%)"}));
  const auto data = chart_data(page);
  // Three distributions, each ending at the share 1.
  const auto& cdf = data["charts"][0]["option"]["series"];
  ASSERT_EQ(cdf.size(), 3u);
  for (const auto& series : cdf) EXPECT_EQ(series["data"].back()[1], 1.0);
  // Eight replicas: four decode (they complete the requests), four prefill.
  EXPECT_EQ(data["charts"][3]["option"]["series"][0]["data"].size(), 8u);
  EXPECT_NE(page.find("<dt>goodput</dt>"), std::string::npos);
  EXPECT_NE(page.find("<td>prefill</td>"), std::string::npos);
  // Without requests.csv: a note instead of the distributions.
  fs::remove(out / "requests.csv");
  const std::string partial = report(out.string(), dir, "partial.html");
  EXPECT_NE(partial.find("requests.csv is not in the folder"), std::string::npos);
}

TEST(Report, SweepWithCostColumnsChartsThemAndEscapesTheInput) {
  TempDir dir("report_costs");
  const std::string page = report(kCosts, dir);
  EXPECT_EQ(chart_titles(page), (std::vector<std::string>{"Throughput against GPUs", "Scaling efficiency",
                                                          "Stall breakdown per point (mean over GPUs)", "Iteration time per point",
                                                          "Time to train against cost to train", "Average power per point"}));
  // The Pareto front: of the 6 ok points, those no other beats on both time and cost.
  const nlohmann::json charts = chart_data(page)["charts"];
  const nlohmann::json& pareto = charts[4]["option"]["series"][1]["data"];
  EXPECT_GE(pareto.size(), 2u);
  for (std::size_t i = 1; i < pareto.size(); ++i) {
    EXPECT_GT(pareto[i]["value"][0].get<double>(), pareto[i - 1]["value"][0].get<double>());
    EXPECT_LT(pareto[i]["value"][1].get<double>(), pareto[i - 1]["value"][1].get<double>());
  }
  // The points that did not run are listed with their reasons, not charted.
  EXPECT_NE(page.find("Points that did not run (not charted) (2 rows)"), std::string::npos);
  EXPECT_EQ(charts[3]["option"]["series"][0]["data"].size(), 6u);
  // Input strings: escaped in the HTML, never markup; the hostile name survives as data.
  EXPECT_EQ(page.find("<img src=x"), std::string::npos);
  EXPECT_EQ(page.find("<b>bold</b>"), std::string::npos);
  EXPECT_EQ(page.find("</script><script>window"), std::string::npos);
  EXPECT_EQ(page.find("<i>a100</i>"), std::string::npos);
  EXPECT_NE(page.find("&lt;img src=x onerror=&quot;window.__csXss=1&quot;&gt;"), std::string::npos);
  EXPECT_NE(page.find("&lt;/script&gt;&lt;script&gt;window.__csXss=1&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(charts[2]["option"]["xAxis"]["data"][0].get<std::string>().find("<img src=x"), std::string::npos);
}

TEST(Report, SweepOfSchemaOneInJsonLinesNotesWhatIsNotCharted) {
  TempDir dir("report_jsonl");
  const std::string page = report(kSchema1, dir);
  EXPECT_EQ(chart_titles(page), (std::vector<std::string>{"Throughput against GPUs", "Scaling efficiency",
                                                          "Stall breakdown per point (mean over GPUs)", "Iteration time per point"}));
  EXPECT_NE(page.find("absent or empty): not charted."), std::string::npos);
  // A torn last line (a sweep still writing, or killed) is left out with a note.
  const std::string text = cs::test::read_text(kSchema1);
  const fs::path torn = dir.path() / "torn.jsonl";
  cs::test::write_text(torn, text.substr(0, text.size() - 60));
  const std::string partial = report(torn.string(), dir, "torn.html");
  EXPECT_NE(partial.find("last line is not a whole row"), std::string::npos);
  EXPECT_NE(partial.find("Every point (7 rows)"), std::string::npos);
  const std::string csv = cs::test::read_text(kCosts);
  const fs::path torn_csv = dir.path() / "torn.csv";
  cs::test::write_text(torn_csv, csv.substr(0, csv.size() - 60));
  EXPECT_NE(report(torn_csv.string(), dir, "torn-csv.html").find("Every point (7 rows)"), std::string::npos);
}

TEST(Report, RefusesToReplaceItsInput) {
  TempDir dir("report_self");
  const fs::path rows = dir.path() / "rows.jsonl";
  fs::copy_file(kSchema1, rows);
  const auto r = clustersim({"report", rows.string(), "-o", rows.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_EQ(cs::test::read_text(rows), cs::test::read_text(kSchema1));
}

TEST(Report, SizingResultShowsTheAnswerCandidatesAndFinalists) {
  TempDir dir("report_size");
  const std::vector<std::string> args{"size", kSource + "/configs/examples/size-7b-finetune.json", "--json"};
  const auto sized = clustersim(args);
  ASSERT_EQ(sized.exit_code, 0) << cs::test::describe(kBinary, args, sized);
  const std::string goal = dir.file("size.json");
  { std::ofstream(goal) << sized.out; }
  const std::string page = report(goal, dir);
  const nlohmann::json result = nlohmann::json::parse(sized.out);
  EXPECT_NE(page.find("No cluster needed"), std::string::npos);
  const std::vector<std::string> titles = chart_titles(page);
  for (const char* t : {"Time to train against capital", "Time to train per finalist", "Power at full load per finalist"}) {
    EXPECT_NE(std::find(titles.begin(), titles.end(), t), titles.end()) << t;
  }
  // One scatter point per estimated candidate.
  const nlohmann::json data = chart_data(page);
  std::size_t estimated = 0;
  for (const auto& c : result["candidates"]) estimated += c.contains("skipped") ? 0 : 1;
  std::size_t points = 0;
  for (const auto& chart : data["charts"]) {
    const nlohmann::json& option = chart["option"];
    if (!option.contains("series")) continue;
    for (const auto& series : option["series"]) {
      if (series.value("type", "") == "scatter") points += series["data"].size();
    }
  }
  EXPECT_EQ(points, estimated);
}

TEST(Report, ToStandardOutput) {
  const auto r = clustersim({"report", kSchema1, "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(r.out.substr(r.out.size() - 8), "</html>\n");
}

}  // namespace
