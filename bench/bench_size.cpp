// The sizing advisor's speed (docs/performance.md, "Sizing"): `clustersim size` on
// bench/experiments/size-70b-all-sizes.json (Llama 3 70B over 1 to 16,384 GPUs on three fabrics,
// a deadline nothing meets, so every count is estimated) and on configs/examples/
// size-70b-pretrain.json (30 days: three finalists simulated), in this process. Reports, never
// asserts.
//   bench_size [--goal FILE]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "drivers/sizing.h"

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  std::vector<std::string> goals = {std::string(CS_BENCH_DIR) + "/experiments/size-70b-all-sizes.json",
                                    std::string(CS_CONFIG_DIR) + "/examples/size-70b-pretrain.json"};
  if (argc == 3 && std::string(argv[1]) == "--goal") goals = {argv[2]};
  for (const std::string& goal : goals) {
    const auto t0 = std::chrono::steady_clock::now();
    const cs::drv::SizingSpec spec = cs::drv::load_sizing(goal);
    const cs::drv::SizingResult r = cs::drv::size_cluster(spec);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::size_t estimated = 0;
    for (const auto& c : r.candidates) estimated += c.estimated ? 1 : 0;
    std::printf("size %s: %zu candidates estimated, %zu finalists simulated, total %.2f s\n  %s\n", spec.name.c_str(),
                estimated, r.finalists.size(), total, r.answer.c_str());
    std::printf("{\"bench\":\"size\",\"goal\":\"%s\",\"estimated\":%zu,\"simulated\":%zu,\"total_s\":%.3f}\n", spec.name.c_str(),
                estimated, r.finalists.size(), total);
  }
  return 0;
}
