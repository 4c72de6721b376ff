// Where every GPU's time goes: a breakdown of the iteration per rank that adds up to the
// iteration time exactly.
//
// The compute stream is the reference: its busy time is `compute`. Every gap in it (before the
// first compute op, between two, after the last until the iteration ends) is attributed to what
// the next compute op (or the end of the iteration) was waiting for, following the dependency
// that finished last, backwards in time:
//   - a collective's transfer time [start, end) is exposed communication of its group's kind
//     (tp, cp, ep, dp; pp for sends and receives);
//   - a collective's wait for its peers [arrival, start) is waiting on slower peers;
//   - a receive's wait for its sender to post [arrival, start): the pipeline bubble;
//   - a delay op on the data stream: data loading; other delays: host time;
//   - before an op's arrival, the same question is asked of the op it waited for.
// Each instant of a gap is charged once, to the first explanation found for it walking back
// from the gap's end; anything left is `idle`. After a rank's last op, until the iteration ends,
// a pipeline stage is in the pipeline's drain (bubble) and any other rank waits on slower peers.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/units.h"
#include "sim/runtime/executor.h"
#include "sim/taskgraph/task_graph.h"

namespace cs::report {

enum class Stall : std::uint8_t {
  kCompute,
  kTp,
  kCp,
  kPp,
  kDp,
  kEp,
  kBubble,
  kWaitingPeers,
  kData,
  kIdle,
};
inline constexpr int kStallCount = 10;
const char* to_string(Stall s);  // "compute", "exposed_tp", ..., "pipeline_bubble", ...

struct RankBreakdown {
  std::array<Duration, kStallCount> time{};  // adds up to the iteration time
  Duration total() const;
};

// One breakdown per rank; `iteration_end` is the end of the iteration (the executor's end time).
std::vector<RankBreakdown> attribute_stalls(const tg::TaskGraph& graph,
                                            const std::vector<rt::OpRecord>& records,
                                            SimTime iteration_end);

}  // namespace cs::report
