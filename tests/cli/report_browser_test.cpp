// `clustersim report` in a real browser (label `browser`; docs/report.md, "The browser test"): each
// kind of report, made from fresh outputs (a `clustersim run --out` of a small pipelined GPT and
// the 12-point sweep tests/data/sweep/gpt-small.json) and from the bundled sweep files
// (tests/data/report: JSON Lines of schema 1; CSV with cost columns and hostile names), is opened in headless
// Chromium. A copy of each page gets a collector at the top of <head> that records every script
// error (window.onerror, error events, unhandled rejections, console.error) and, once the page
// has loaded, whether each chart container drew (an ECharts instance with series, and a canvas
// with painted pixels); Chromium's --dump-dom returns it in a <pre> element. The screenshot of
// each page is kept in the build tree (CS_ARTIFACT_DIR) as the test's artifact.
//
// Chromium (Debian's `chromium`, scripts/install-deps.sh as root) absent: the test skips and says
// so, unless CS_REQUIRE_CHROMIUM=1 (CI, .ci/run), where it fails.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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
const fs::path kArtifacts = CS_ARTIFACT_DIR;

// The first of `names` found on PATH, or "".
std::string find_on_path(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (const std::string& name : names) {
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
      if (::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p.string();
    }
  }
  return "";
}

// Inserted right after <meta charset> of a copy of the page, before any other script.
const char* const kCollector = R"js(<script>
window.__csErrors = [];
window.onerror = function (m, src, line, col) { window.__csErrors.push("onerror: " + m + " at " + line + ":" + col); };
window.addEventListener("error", function (e) { if (!(e instanceof ErrorEvent)) window.__csErrors.push("resource error: " + (e.target && (e.target.src || e.target.href || e.target.tagName))); }, true);
window.addEventListener("unhandledrejection", function (e) { window.__csErrors.push("unhandled rejection: " + e.reason); });
(function () {
  var original = console.error;
  console.error = function () { window.__csErrors.push("console.error: " + Array.prototype.join.call(arguments, " ")); return original.apply(console, arguments); };
})();
window.addEventListener("load", function () {
  setTimeout(function () {
    var charts = [];
    document.querySelectorAll(".cs-chart").forEach(function (el) {
      var r = {id: el.id, instance: false, series: 0, painted: 0};
      try {
        var inst = window.echarts && echarts.getInstanceByDom(el);
        if (inst) { r.instance = true; r.series = (inst.getOption().series || []).length; }
        el.querySelectorAll("canvas").forEach(function (cv) {
          if (!cv.width || !cv.height) return;
          var d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
          for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) r.painted++;
        });
        if (el.querySelector("svg path")) r.painted += 1000000;
      } catch (e) { window.__csErrors.push("check: " + e); }
      charts.push(r);
    });
    var pre = document.createElement("pre");
    pre.id = "cs-check";
    pre.style.display = "none";
    pre.textContent = encodeURIComponent(JSON.stringify({errors: window.__csErrors, charts: charts, xss: !!window.__csXss}));
    document.body.appendChild(pre);
  }, 300);
});
</script>
)js";

std::string percent_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

class ReportBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_on_path({"chromium", "chromium-browser", "google-chrome"});
    if (chromium_.empty()) {
      if (const char* req = std::getenv("CS_REQUIRE_CHROMIUM"); req != nullptr && std::string(req) == "1") {
        FAIL() << "CS_REQUIRE_CHROMIUM=1 but no chromium on PATH (scripts/install-deps.sh installs Debian's chromium as root)";
      }
      GTEST_SKIP() << "chromium is not installed: the report's browser test is skipped (install Debian's chromium, "
                      "or run scripts/install-deps.sh as root; CS_REQUIRE_CHROMIUM=1 makes this a failure)";
    }
    fs::create_directories(kArtifacts);
  }

  cs::test::RunResult clustersim(const std::vector<std::string>& args) {
    const auto r = cs::test::run_binary(kBinary, args);
    EXPECT_EQ(r.exit_code, 0) << cs::test::describe(kBinary, args, r);
    return r;
  }

  // Opens `html` in headless Chromium with the collector; keeps its screenshot as <name>.png;
  // expects no script error and at least `min_charts` chart containers, every one drawn.
  void open_in_browser(const fs::path& html, const std::string& name, std::size_t min_charts, const TempDir& dir) {
    std::string page = cs::test::read_text(html);
    const std::string meta = "<meta charset=\"utf-8\">\n";
    const std::size_t at = page.find(meta);
    ASSERT_NE(at, std::string::npos) << name;
    page.insert(at + meta.size(), kCollector);
    const fs::path checked = dir.path() / (name + "-checked.html");
    cs::test::write_text(checked, page);
    const fs::path shot = kArtifacts / (name + ".png");
    fs::remove(shot);
    const std::vector<std::string> args = {
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions", "--hide-scrollbars",
        "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND",  // offline: nothing may be fetched
        "--user-data-dir=" + (dir.path() / ("profile-" + name)).string(), "--window-size=1280,4000",
        "--virtual-time-budget=5000", "--screenshot=" + shot.string(), "--dump-dom", "file://" + checked.string()};
    const auto r = cs::test::run_binary(chromium_, args, {}, 90);
    ASSERT_EQ(r.exit_code, 0) << cs::test::describe(chromium_, args, r);
    const std::size_t pre = r.out.find("<pre id=\"cs-check\"");
    ASSERT_NE(pre, std::string::npos) << name << ": the collector left no result (the page did not load?)\n" << r.err.substr(0, 4000);
    const std::size_t a = r.out.find('>', pre) + 1, b = r.out.find("</pre>", pre);
    ASSERT_NE(b, std::string::npos);
    const nlohmann::json result = nlohmann::json::parse(percent_decode(r.out.substr(a, b - a)));
    EXPECT_TRUE(result["errors"].empty()) << name << ": script errors: " << result["errors"].dump(1);
    EXPECT_FALSE(result["xss"].get<bool>()) << name << ": a string from the input ran as script";
    EXPECT_GE(result["charts"].size(), min_charts) << name << ": " << result["charts"].dump();
    for (const auto& c : result["charts"]) {
      EXPECT_TRUE(c["instance"].get<bool>()) << name << ": " << c.dump();
      EXPECT_GT(c["series"].get<int>(), 0) << name << ": " << c.dump();
      EXPECT_GT(c["painted"].get<long>(), 2000) << name << ": chart " << c["id"] << " drew (almost) nothing";
    }
    EXPECT_TRUE(fs::exists(shot) && fs::file_size(shot) > 10000) << name << ": no screenshot at " << shot;
  }

  std::string chromium_;
};

TEST_F(ReportBrowser, EveryKindOfReportDrawsWithoutScriptErrors) {
  TempDir dir("report_browser");
  // A run: GPT 1.7B on 32 A100s in two pipeline stages (a timeline of two ranks, a bubble).
  const fs::path run = dir.path() / "run";
  clustersim({"run", kSource + "/configs/examples/gpt-1.7b-32.json", "--set", "/plan/pp=2", "--set", "/plan/dp=16",
              "--out", run.string()});
  const fs::path run_html = dir.path() / "run.html";
  clustersim({"report", run.string(), "-o", run_html.string()});
  open_in_browser(run_html, "report-run", 4, dir);

  // The 12-point sweep: GPU counts 4 to 32 (a scaling curve), every status.
  const fs::path rows = dir.path() / "sweep.csv";
  clustersim({"sweep", kData + "/sweep/gpt-small.json", "--out", rows.string(), "--jobs", "2"});
  const fs::path sweep_html = dir.path() / "sweep.html";
  clustersim({"report", rows.string(), "-o", sweep_html.string()});
  open_in_browser(sweep_html, "report-sweep", 4, dir);

  // JSON Lines of schema 1 (tests/data/report): the same charts, no cost columns.
  const fs::path jsonl_html = dir.path() / "sweep-jsonl.html";
  clustersim({"report", kData + "/report/sweep-schema1.jsonl", "-o", jsonl_html.string()});
  open_in_browser(jsonl_html, "report-sweep-jsonl", 4, dir);

  // Cost and energy columns (a later schema) and a parameter whose name and values are markup.
  const fs::path costs_html = dir.path() / "costs.html";
  clustersim({"report", kData + "/report/sweep-costs-hostile.csv", "-o", costs_html.string()});
  open_in_browser(costs_html, "report-sweep-costs", 6, dir);

  // A disaggregated serving run: latency distributions, the timeline, the replicas.
  const fs::path serve = dir.path() / "serve";
  clustersim({"serve", kSource + "/configs/examples/serve-70b-disaggregated.json", "--set", "/requests/count=300", "--out",
              serve.string()});
  const fs::path serve_html = dir.path() / "serve.html";
  clustersim({"report", serve.string(), "-o", serve_html.string()});
  open_in_browser(serve_html, "report-serve", 5, dir);

  // The sizing advisor's result: candidates against capital, the finalists' time and power.
  const auto sized = cs::test::run_binary(kBinary, {"size", kSource + "/configs/examples/size-7b-finetune.json", "--json"});
  ASSERT_EQ(sized.exit_code, 0) << sized.err;
  const fs::path size_json = dir.path() / "size.json";
  { std::ofstream(size_json) << sized.out; }
  const fs::path size_html = dir.path() / "size.html";
  clustersim({"report", size_json.string(), "-o", size_html.string()});
  open_in_browser(size_html, "report-size", 3, dir);
}

}  // namespace
