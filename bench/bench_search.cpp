// The plan search's speed (docs/performance.md, "Plan search"): `clustersim search` on
// bench/experiments/search-gpt-175b-512.json (GPT-3 175B, 512 A100s, the whole plan space), in
// this process: plans formed, the pre-filter's rate (enumeration, memory checks and estimates),
// the full simulations' time and the total, and the rank correlation. Reports, never asserts.
//   bench_search [--experiment FILE] [--simulate N]
#include <chrono>
#include <cstdio>
#include <string>

#include "core/huge_pages.h"
#include "drivers/experiment.h"
#include "drivers/plan_search.h"

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  std::string file = std::string(CS_BENCH_DIR) + "/experiments/search-gpt-175b-512.json";
  cs::drv::SearchOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--experiment") file = argv[i + 1];
    else if (a == "--simulate") o.simulate = std::stoi(argv[i + 1]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const cs::drv::Experiment e = cs::drv::load_experiment(file);
  const cs::drv::SearchResult r = cs::drv::search_plans(e, o);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate = static_cast<double>(r.considered) / r.prefilter_seconds;
  std::printf("search %s: %zu plans formed, %zu kept; pre-filter %.3f s (%.0f plans/s); %zu simulated in %.2f s; total %.2f s; Spearman %.2f\n",
              e.name.c_str(), r.considered, r.kept, r.prefilter_seconds, rate, r.ranked.size(), r.simulate_seconds, total,
              r.rank_correlation.value_or(0));
  std::printf("{\"bench\":\"search\",\"considered\":%zu,\"kept\":%zu,\"prefilter_s\":%.4f,\"plans_per_s\":%.0f,\"simulated\":%zu,\"simulate_s\":%.3f,\"total_s\":%.3f}\n",
              r.considered, r.kept, r.prefilter_seconds, rate, r.ranked.size(), r.simulate_seconds, total);
  return 0;
}
