// Training-iteration benchmarks of issue 3: wall time and peak memory of one simulated
// iteration per experiment, each in its own process (so the peak RSS is the case's own).
// Usage: bench_training [EXPERIMENT.json ...]   (default: the reference cases of issues 3 and 11)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif
#ifndef CS_BENCH_DIR
#define CS_BENCH_DIR "bench"
#endif

namespace {

struct Case {
  const char* dir;
  const char* file;
  const char* target;  // from the issues
};

const Case kCases[] = {
    {CS_CONFIG_DIR "/examples/", "resnet50-512.json", "<= 1 s"},
    {CS_CONFIG_DIR "/examples/", "megatron-145b-1536.json", "<= 5 s, 2 GiB"},
    {CS_CONFIG_DIR "/examples/", "megatron-1t-3072.json", "<= 30 s"},
    {CS_CONFIG_DIR "/examples/", "llama3-405b-16384.json", "<= 60 s, 8 GiB"},
    // Issue 11: the 405B iteration at 32k and 65k GPUs (DP 256 and 512), x2.2 per doubling at most.
    {CS_BENCH_DIR "/experiments/", "llama3-405b-32768.json", "x2.2 of 16,384"},
    {CS_BENCH_DIR "/experiments/", "llama3-405b-65536.json", "<= 60 s"},
};

int run_one(const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  const cs::drv::Experiment e = cs::drv::load_experiment(path);
  const cs::results::TrainingRun s = cs::drv::simulate_training(e);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("{\"bench\":\"training\",\"experiment\":\"%s\",\"gpus\":%d,\"simulated_ranks\":%d,\"ops\":%zu,\"events\":%llu,"
              "\"wall_s\":%.3f,\"peak_rss_mib\":%.1f,\"iteration_s\":%.6f,\"tflops_per_gpu\":%.2f}\n",
              e.name.c_str(), s.result.gpus, s.result.simulated_ranks, s.result.ops,
              static_cast<unsigned long long>(s.result.events), wall, static_cast<double>(ru.ru_maxrss) / 1024.0,
              cs::to_seconds(s.result.iteration), s.result.tflops_per_gpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  std::vector<std::pair<std::string, std::string>> cases;
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) cases.emplace_back(argv[i], "");
  } else {
    for (const Case& c : kCases) cases.emplace_back(std::string(c.dir) + c.file, c.target);
  }
  int status = 0;
  for (const auto& [path, target] : cases) {
    if (!target.empty()) std::printf("# %s (target %s)\n", path.c_str(), target.c_str());
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      int code = 1;
      try {
        code = run_one(path);
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "bench_training: %s: %s\n", path.c_str(), ex.what());
      }
      std::fflush(stdout);  // _exit does not flush stdio
      _exit(code);
    }
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) status = 1;
  }
  return status;
}
