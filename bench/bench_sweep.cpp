// The sweep engine's speed (docs/performance.md, "Sweeps"): bench/experiments/sweep-gpt-512.json,
// 200 plans of GPT 18.4B on 512 A100s, run in this process with --jobs 1 and --jobs 2 into
// temporary files. Reports points per second per core, the speedup of two threads, and whether
// the two files are the same bytes (they must be). Reports, never asserts.
//   bench_sweep [--sweep FILE] [--jobs N]   (N: the second run's threads, default 2)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "core/huge_pages.h"
#include "drivers/sweep.h"
#include "drivers/sweep_output.h"
#include "drivers/sweep_runner.h"

namespace {

namespace fs = std::filesystem;
using namespace cs;

struct Timing {
  double seconds = 0;
  drv::SweepCounts counts;
  std::string bytes;
};

Timing run(const drv::Sweep& s, int jobs, const fs::path& out) {
  fs::remove(out);
  std::vector<std::string> keys;
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    todo.push_back(i);
    keys.push_back(drv::sweep_point_key(s, i, results::RowFormat::kCsv));
  }
  Timing t;
  const auto t0 = std::chrono::steady_clock::now();
  {
    drv::SweepResultsFile file(out.string(), results::RowFormat::kCsv, results::sweep_header(results::RowFormat::kCsv, s.columns()),
                               s.parameters.size(), keys, drv::SweepResultsFile::Mode::kFresh, "--out");
    drv::SweepWork work(s, results::RowFormat::kCsv, todo, file);
    work.run(jobs);
    t.counts = work.counts();
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  t.bytes = ss.str();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  std::string sweep = std::string(CS_BENCH_DIR) + "/experiments/sweep-gpt-512.json";
  int jobs = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--sweep") sweep = argv[i + 1];
    else if (a == "--jobs") jobs = std::stoi(argv[i + 1]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const drv::Sweep s = drv::load_sweep(sweep);
  const double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const fs::path dir = fs::temp_directory_path() / ("bench_sweep_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Timing one = run(s, 1, dir / "one.csv");
  const Timing many = run(s, jobs, dir / "many.csv");
  fs::remove_all(dir);
  const double rate1 = static_cast<double>(s.points.size()) / one.seconds;
  const double rate_n = static_cast<double>(s.points.size()) / many.seconds;
  std::printf("sweep %s: %zu points (%zu ok, %zu invalid, %zu out of memory); checks on load %.2f s\n", s.name.c_str(), s.points.size(),
              one.counts.ok, one.counts.invalid, one.counts.out_of_memory, load);
  std::printf("  --jobs 1: %.2f s, %.1f points/s\n", one.seconds, rate1);
  std::printf("  --jobs %d: %.2f s, %.1f points/s, speedup %.2f, same bytes: %s\n", jobs, many.seconds, rate_n, one.seconds / many.seconds,
              one.bytes == many.bytes ? "yes" : "NO");
  std::printf("{\"bench\":\"sweep\",\"points\":%zu,\"load_s\":%.3f,\"jobs1_s\":%.3f,\"points_per_s\":%.2f,\"jobs\":%d,\"jobs_s\":%.3f,\"speedup\":%.3f,\"same_bytes\":%s}\n",
              s.points.size(), load, one.seconds, rate1, jobs, many.seconds, one.seconds / many.seconds, one.bytes == many.bytes ? "true" : "false");
  return 0;
}
