// What running a TaskGraph gives back: when each op arrived, started and ended. The executor
// (sim/runtime) records it; results (stall attribution, traces, tables) read it, knowing
// nothing of how it was produced.
//
// An op arrives when it is first in its (rank, stream) and its dependencies have finished; it
// starts when its peers have arrived too (collectives, send/recv pairs; compute starts on
// arrival); start - arrival is time spent waiting for peers.
#pragma once

#include <vector>

#include "core/units.h"

namespace cs::tg {

struct OpRecord {
  SimTime arrival = kTimeNever;
  SimTime start = kTimeNever;
  SimTime end = kTimeNever;
};

// One record per op of a TaskGraph, indexed by OpId.
using Timeline = std::vector<OpRecord>;

}  // namespace cs::tg
