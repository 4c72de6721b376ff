// Where every GPU's time goes: a breakdown of the iteration per rank that adds up to the
// iteration time exactly.
//
// The compute stream is the reference: its busy time (compute ops, and delays on it: an imported
// trace's kernels as recorded) is `compute`. Every gap in it (before the
// first compute op, between two, after the last until the iteration ends) is attributed to what
// the next compute op (or the end of the iteration) was waiting for, following the dependency
// that finished last, backwards in time:
//   - a collective's transfer time [start, end) is exposed communication of its group's kind
//     (tp, cp, ep, dp; pp for sends and receives);
//   - a collective's wait for its peers [arrival, start) is waiting on slower peers;
//   - a receive's wait for its sender to post [arrival, start): the pipeline bubble;
//   - a delay op on the data stream: data loading; on the compute stream: compute; other delays
//     (host work) are counted idle;
//   - before an op's arrival, the same question is asked of the op it waited for.
// Each instant of a gap is charged once, to the first explanation found for it walking back
// from the gap's end; anything left is `idle`. After a rank's last op, until the iteration ends,
// a pipeline stage is in the pipeline's drain (bubble) and any other rank waits on slower peers.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "taskgraph/task_graph.h"
#include "taskgraph/timeline.h"

namespace cs::results {

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
inline constexpr EnumName<Stall> kStallNames[] = {
    {Stall::kCompute, "compute"},          {Stall::kTp, "exposed_tp"},
    {Stall::kCp, "exposed_cp"},            {Stall::kPp, "exposed_pp"},
    {Stall::kDp, "exposed_dp"},            {Stall::kEp, "exposed_ep"},
    {Stall::kBubble, "pipeline_bubble"},   {Stall::kWaitingPeers, "waiting_on_peers"},
    {Stall::kData, "data_loading"},        {Stall::kIdle, "idle"}};
inline const char* to_string(Stall s) { return enum_name(kStallNames, s); }

struct RankBreakdown {
  std::array<Duration, kStallCount> time{};  // adds up to the iteration time
  Duration total() const;
};

// One breakdown per rank; `iteration_end` is the end of the iteration (the executor's end time).
std::vector<RankBreakdown> attribute_stalls(const tg::TaskGraph& graph,
                                            const tg::Timeline& records,
                                            SimTime iteration_end);

// Seconds per stall category, the mean over ranks (zeros for no ranks).
std::array<double, kStallCount> mean_stall_seconds(const std::vector<RankBreakdown>& stalls);

}  // namespace cs::results
