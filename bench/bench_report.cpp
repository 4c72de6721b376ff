// The report's speed and size (docs/performance.md, "Report (issue 14)"): a synthetic sweep results
// file of N rows (default 1,000: schema 1's columns, the cost and energy columns of a later schema,
// three parameters, 1 point in 20 invalid), written to a temporary folder and made into a page by
// results::report_html, the function `clustersim report` calls; the best of three. With --run DIR
// it also reports a run folder; with --html FILE it writes the sweep's page there (to time it in a
// browser), with --csv FILE the synthetic results file (to time `clustersim report` on it). Prints seconds and bytes; reports, never asserts (the targets: a 1,000-row sweep in at
// most 2 s and a page under 5 MB).
//   bench_report [--rows N] [--run DIR] [--html FILE] [--csv FILE]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "results/report_html.h"
#include "results/sweep_row.h"

namespace {

namespace fs = std::filesystem;

std::string synthetic_sweep(int rows) {
  const std::vector<std::string> params = {"/plan/tp", "/plan/pp", "/plan/dp"};
  std::string text = cs::results::sweep_header(cs::results::RowFormat::kCsv, params);
  text.pop_back();
  text += ",energy_per_iteration_j,average_power_w,time_to_train_s,energy_to_train_j,cost_to_train_usd,tokens_per_usd\n";
  const std::size_t metrics = cs::results::sweep_result_columns().size();
  char buf[1024];
  for (int p = 0; p < rows; ++p) {
    const int tp = 1 << (p % 4), pp = 1 << ((p / 4) % 4), dp = 1 << ((p / 16) % 6);
    const int gpus = tp * pp * dp;
    text += std::to_string(p) + "," + std::to_string(tp) + "," + std::to_string(pp) + "," + std::to_string(dp);
    if (p % 20 == 19) {
      text += ",invalid,\"config error in gpt.json at /plan/dp: needs " + std::to_string(gpus) + " GPUs, more than the cluster has\"";
      text += std::string(metrics - 2 + 6, ',') + "\n";
      continue;
    }
    const double t = 40.0 / gpus * (1 + 0.05 * tp + 0.08 * pp) * (1 + 0.001 * (p % 37));
    const double tokens = 512.0 * 2048 / t, compute = 0.62 * t, rest = t - compute;
    const double power = gpus * 700.0, energy = power * t, ttt = 3e11 / tokens, cost = ttt / 3600 * gpus * 2.2;
    std::snprintf(buf, sizeof buf,
                  ",ok,,a100-superpod,gpt-18.4b,%d,%.17g,%.17g,%.17g,%.17g,%.17g,40000000000,85899345920,"
                  "%.17g,%.17g,0,%.17g,%.17g,0,%.17g,%.17g,0,0,%.0f,%.0f,%.0f,0,exposed_dp,%.17g,0,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                  gpus, t, 512 / t, tokens, 130.0 / (1 + 0.01 * pp), 0.42 / (1 + 0.01 * pp), compute, rest * 0.2, rest * 0.1,
                  rest * 0.35, rest * 0.25, rest * 0.1, 1e8 * gpus, 5e7 * gpus, 2e7 * gpus, 0.35 * rest / t, energy,
                  power, ttt, energy * ttt / t, cost, 3e11 / cost);
    text += buf;
  }
  return text;
}

std::string measure(const std::string& what, const std::string& input) {
  double best = 1e9;
  std::string page;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    page = cs::results::report_html(input);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("%-44s %8.3f s %10zu bytes (%.2f MB)\n", what.c_str(), best, page.size(), static_cast<double>(page.size()) / 1e6);
  return page;
}

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  int rows = 1000;
  std::string run, html, keep_csv;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc) rows = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--run") == 0 && i + 1 < argc) run = argv[++i];
    else if (std::strcmp(argv[i], "--html") == 0 && i + 1 < argc) html = argv[++i];
    else if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) keep_csv = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_report [--rows N] [--run DIR] [--html FILE] [--csv FILE]\n");
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("bench_report_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path csv = dir / "sweep.csv";
  std::ofstream(csv, std::ios::binary) << synthetic_sweep(rows);
  std::printf("report of (best of 3, in process)                  time      page\n");
  const std::string page =
      measure("sweep, " + std::to_string(rows) + " rows (" + std::to_string(fs::file_size(csv) / 1024) + " KiB of CSV)", csv.string());
  if (!html.empty()) std::ofstream(html, std::ios::binary) << page;
  if (!keep_csv.empty()) fs::copy_file(csv, keep_csv, fs::copy_options::overwrite_existing);
  if (!run.empty()) measure("run folder " + run, run);
  fs::remove_all(dir);
  return 0;
}
