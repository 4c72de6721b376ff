// Fuzzes cluster files end to end: the JSON reader, the cluster loader's parse, validate and build
// stages with the hardware catalog and the protocol parameters, then, for a cluster that was
// accepted, a 1 MiB all-reduce and an all-to-all over its first GPUs (up to 8).
//
// Contract under test: a cluster file is either refused with the project's input errors
// (InputError and its kinds, RangeError included) or simulated to a finite, positive time.
// Anything else (another exception, a crash, a sanitizer report, a non-finite result) aborts and
// is a finding. The limits are lowered (LLVMFuzzerInitialize) so that a small file cannot ask for
// a cluster that takes seconds to build: the fuzzer explores shapes, not sizes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "core/config.h"
#include "core/errors.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"

namespace {

[[noreturn]] void finding(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz_cluster finding: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void simulate(const cs::coll::Machine& machine, cs::CollectiveOp op) {
  const auto gpus = machine.cluster.gpus();
  if (gpus.size() < 2) return;
  cs::coll::CollectiveSpec spec;
  spec.op = op;
  spec.size = cs::mebibytes(1);
  spec.ranks.assign(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(8, gpus.size())));
  cs::coll::CollectiveSimulator sim(machine);
  try {
    const cs::coll::CollectiveResult r = sim.run(spec);
    const double t = cs::to_seconds(r.time);
    if (!(std::isfinite(t) && t > 0)) finding("a collective on an accepted cluster took no time or a non-finite one", std::to_string(t));
  } catch (const cs::InputError&) {
    // An algorithm the cluster cannot run, or a RangeError (a time beyond the clock): refused.
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("CLUSTERSIM_LIMITS", "gpus=512,links=20000,connections=4096,file=64KiB", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<cs::coll::Machine> machine;
  try {
    machine.emplace(cs::coll::build_machine(cs::ConfigDocument::parse(text, "fuzz.json")));
  } catch (const cs::InputError&) {
    return 0;  // refused with the file and a path: the contract
  } catch (const std::exception& e) {
    finding("loading a cluster raised something other than an input error", e.what());
  }
  try {
    simulate(*machine, cs::CollectiveOp::kAllReduce);
    simulate(*machine, cs::CollectiveOp::kAllToAll);
  } catch (const std::exception& e) {
    finding("simulating an accepted cluster raised", e.what());
  }
  return 0;
}
