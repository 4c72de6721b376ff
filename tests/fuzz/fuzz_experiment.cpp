// Fuzzes experiment files: the reader, the plan's parse and every check `run`, `plan` and
// `scale` make before simulating (drv::check_plan_fits against the bundled cluster and model the
// experiment names), the memory estimate, and for plans of at most 64 GPUs the iteration's task
// graph.
//
// Contract under test: an experiment is either refused with the project's input errors or its
// checks pass and the graph builds. Another exception, a crash or a sanitizer report (an integer
// overflow in a product of parallel degrees, say) aborts and is a finding. Seeds:
// tests/fuzz/experiment_corpus (the bundled examples, trimmed).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/config.h"
#include "core/errors.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"
#include "sim/collectives/machine.h"
#include "workloads/memory.h"
#include "workloads/training_graph.h"

namespace {

[[noreturn]] void finding(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz_experiment finding: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void check(const std::string_view text) {
  const cs::ConfigDocument doc = cs::ConfigDocument::parse(text, "fuzz.json");
  const cs::drv::Experiment e = cs::drv::parse_experiment(doc.root(), std::string(CS_CONFIG_DIR) + "/examples");
  const cs::coll::Machine machine = cs::coll::load_machine(e.cluster, e.cluster_overrides, cs::drv::experiment_catalog(e));
  const cs::wl::Model model = cs::drv::load_model(e);
  cs::drv::check_plan_fits(e, machine.cluster, model);
  const auto& gpu = machine.cluster.gpu_spec(machine.cluster.gpus()[0]);
  (void)cs::wl::peak_memory(cs::wl::estimate_memory(model, e.plan, gpu));
  if (e.plan.gpus() <= 64) (void)cs::wl::build_training_graph(model, e.plan, e.file, e.at("plan"), true);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Small task graphs: an input may otherwise ask for a million layer passes, and the allocator of
  // a sanitized process keeps the peak (the fuzzer's RSS grew past 1.3 GB).
  ::setenv("CLUSTERSIM_LIMITS", "gpus=4096,links=200000,connections=4096,micro_batches=256,layer_passes=4096,file=64KiB", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const cs::InputError&) {
    return 0;  // refused with the file and a path: the contract
  } catch (const std::exception& e) {
    finding("an experiment raised something other than an input error", e.what());
  }
  return 0;
}
