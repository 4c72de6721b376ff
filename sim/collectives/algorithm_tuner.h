// NCCL's tuner as the executor uses it: for a collective on given GPUs, the algorithm and
// protocol that an isolated simulation finds fastest (CollectiveSimulator::run), as NCCL decides
// from a static cost model rather than from the congestion of the moment. Callers cache the
// choice per communicator, operation and size, as NCCL does.
#pragma once

#include <string>

#include "sim/collectives/collective_simulator.h"

namespace cs::coll {

struct TunedChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
};

class AlgorithmTuner {
 public:
  // The machine must outlive the tuner.
  explicit AlgorithmTuner(const Machine& machine) : simulator_(machine) {}
  // `spec.algorithm` kAuto: the fastest of NCCL's candidates; a fixed one: its faster protocol.
  // A fixed algorithm that does not apply is an InputError naming `origin`.
  TunedChoice choose(const CollectiveSpec& spec, const std::string& origin) {
    const CollectiveResult best = simulator_.run(spec, origin);
    return {best.algorithm, best.protocol};
  }

 private:
  CollectiveSimulator simulator_;
};

}  // namespace cs::coll
