// The serving simulator's speed (docs/performance.md, "Serving"): simulated requests per second
// of wall time on configs/examples/serve-llama3-70b-azure.json (the Azure conversation hour at
// twice its rate, 19,366 requests, 4 TP-4 replicas) and on synthetic streams of 10^4 to 10^6
// requests spread over 1 to 64 replicas (Llama 3 8B, TP 1, ~60% load), in this process. Reports,
// never asserts.
#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/huge_pages.h"
#include "drivers/serving_sim.h"
#include "results/serving_report.h"

namespace {

void report(const char* name, const cs::drv::ServingScenario& s) {
  const auto t0 = std::chrono::steady_clock::now();
  const cs::results::ServingRun run = cs::drv::simulate_serving(s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const cs::results::ServingMetrics m = cs::results::serving_metrics(run);
  std::printf("serve %s: %zu requests, %d replicas, %lld iterations in %.3f s: %.0f requests/s, %.2f M iterations/s\n", name,
              run.requests.size(), run.replicas, static_cast<long long>(run.iterations_total), wall,
              static_cast<double>(run.requests.size()) / wall, static_cast<double>(run.iterations_total) / wall / 1e6);
  std::printf("{\"bench\":\"serving\",\"case\":\"%s\",\"requests\":%zu,\"replicas\":%d,\"iterations\":%lld,\"wall_s\":%.4f,\"completed\":%lld}\n",
              name, run.requests.size(), run.replicas, static_cast<long long>(run.iterations_total), wall,
              static_cast<long long>(m.completed));
}

}  // namespace

int main(int, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  report("azure-conv-2x", cs::drv::load_serving_scenario(std::string(CS_CONFIG_DIR) + "/examples/serve-llama3-70b-azure.json"));
  for (const auto& [requests, replicas] : {std::pair{10000, 1}, std::pair{100000, 8}, std::pair{1000000, 64}}) {
    // One Llama 3 8B replica serves about 20 requests/s of 512 + 128 tokens; offer 12 per replica.
    const nlohmann::json j = {
        {"cluster", "h100-rail-512"},
        {"model", "llama3-8b"},
        {"replicas", {{"count", replicas}, {"tp", 1}}},
        {"requests", {{"arrival", "poisson"}, {"rate", 12.0 * replicas}, {"count", requests},
                      {"prompt_tokens", {{"lognormal", {{"median", 512}, {"sigma", 0.8}}}, {"max", 8000}}},
                      {"output_tokens", {{"lognormal", {{"median", 128}, {"sigma", 0.8}}}, {"max", 2000}}}}}};
    const cs::ConfigDocument doc = cs::ConfigDocument::from_json(j, "bench");
    const std::string name = std::to_string(requests) + "x" + std::to_string(replicas);
    report(name.c_str(), cs::drv::parse_serving_scenario(doc.root(), ""));
  }
  return 0;
}
