// The scheduler's speed (docs/performance.md, "Scheduling"): 20,000 jobs on 6,496 GPUs (812 DGX
// H100 on the 2:1 leaf-spine), the size of the Alibaba PAI simulator's published run (20,000 jobs,
// 6,500 GPUs, 52-110 s of Python with no network), in this process:
//   fixed     jobs of fixed length (exponential, mean 1 h): no network
//   classes   data-parallel GPT 1.7B jobs (lognormal iterations): every placement's all-reduce
//             simulated alone, interference re-solved at every start and stop, for the packed
//             and topology placements
// plus the Alibaba v2023 replay of configs/examples. Sizes 1-64 GPUs. Reports, never asserts.
#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/huge_pages.h"
#include "drivers/cluster_scheduler.h"
#include "results/schedule_report.h"

namespace {

void report(const char* name, const cs::drv::ScheduleScenario& s) {
  const auto t0 = std::chrono::steady_clock::now();
  const cs::results::ScheduleRun run = cs::drv::simulate_schedule(s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const cs::results::ScheduleMetrics m = cs::results::schedule_metrics(run);
  std::printf("schedule %s: %zu jobs on %d GPUs in %.3f s (%.0f jobs/s); mean JCT %.0f s, utilization %.3f, %llu components solved\n",
              name, run.jobs.size(), run.gpus, wall, static_cast<double>(run.jobs.size()) / wall, m.jct.mean, m.gpu_utilization,
              static_cast<unsigned long long>(run.joint_runs));
  std::printf("{\"bench\":\"schedule\",\"case\":\"%s\",\"jobs\":%zu,\"gpus\":%d,\"wall_s\":%.4f,\"completed\":%lld,\"components\":%llu}\n", name,
              run.jobs.size(), run.gpus, wall, static_cast<long long>(m.completed), static_cast<unsigned long long>(run.joint_runs));
}

nlohmann::json base(const char* placement) {
  return {{"cluster", "h100-leafspine-2to1"},
          {"cluster_overrides", {"/servers/0/count=812"}},
          {"classes",
           {{"gpt-1.7b-ddp",
             {{"model", "gpt-1.7b"},
              {"plan", {{"tp", 1}, {"pp", 1}, {"micro_batch", 2}, {"global_batch", 2}, {"sequence_length", 2048}, {"flash_attention", true}}}}}}},
          {"policy", "fifo"},
          {"placement", placement}};
}

const nlohmann::json kSizes = {{"choice", {1, 2, 4, 8, 16, 32, 64}}, {"weights", {40, 10, 10, 20, 10, 6, 4}}};

}  // namespace

int main(int, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  report("alibaba-v2023-example", cs::drv::load_schedule_scenario(std::string(CS_CONFIG_DIR) + "/examples/schedule-alibaba-2023.json"));
  {
    nlohmann::json j = base("packed");
    j["jobs"] = {{"rate", 0.17}, {"count", 20000}, {"gpus", kSizes}, {"duration", {{"exponential", "1h"}}}, {"seed", 1}};
    const cs::ConfigDocument doc = cs::ConfigDocument::from_json(j, "bench");
    report("fixed-20000", cs::drv::parse_schedule_scenario(doc.root(), ""));
  }
  for (const char* placement : {"topology", "packed"}) {
    nlohmann::json j = base(placement);
    j["jobs"] = {{"rate", 0.6}, {"count", 20000}, {"gpus", kSizes}, {"class", "gpt-1.7b-ddp"},
                 {"iterations", {{"lognormal", {{"median", 5000}, {"sigma", 1}}}}}, {"seed", 1}};
    const cs::ConfigDocument doc = cs::ConfigDocument::from_json(j, "bench");
    report((std::string("classes-20000-") + placement).c_str(), cs::drv::parse_schedule_scenario(doc.root(), ""));
  }
  return 0;
}
