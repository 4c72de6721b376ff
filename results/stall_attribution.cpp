#include "results/stall_attribution.h"

#include <algorithm>

namespace cs::results {
namespace {

using tg::OpId;
using tg::OpKind;

constexpr OpId kNone = UINT32_MAX;

bool posted(const tg::Op& op) { return op.kind == OpKind::kSend || op.kind == OpKind::kRecv; }

// Compute ops, and delays on the compute stream (an imported trace's GPU kernels, timed as
// recorded): the time the GPU computes.
bool on_compute_stream(const tg::Op& op) {
  return op.kind == OpKind::kCompute || (op.kind == OpKind::kDelay && op.stream == tg::Stream::kCompute);
}

Stall comm_stall(tg::Stream s) {
  switch (s) {
    case tg::Stream::kTp: return Stall::kTp;
    case tg::Stream::kCp: return Stall::kCp;
    case tg::Stream::kPp: return Stall::kPp;
    case tg::Stream::kDp: return Stall::kDp;
    case tg::Stream::kEp: return Stall::kEp;
    case tg::Stream::kData: return Stall::kData;
    case tg::Stream::kCompute: return Stall::kCompute;
    case tg::Stream::kHost: return Stall::kIdle;
  }
  return Stall::kIdle;
}

class Attributor {
 public:
  Attributor(const tg::TaskGraph& g, const tg::Timeline& rec) : g_(g), rec_(rec) {
    pred_.assign(g.size(), kNone);
    std::vector<OpId> last(static_cast<std::size_t>(g.ranks()) * tg::kStreamCount, kNone);
    for (OpId id = 0; id < g.size(); ++id) {
      const tg::Op& op = g.op(id);
      auto& l = last[op.rank * tg::kStreamCount + static_cast<std::uint32_t>(op.stream)];
      pred_[id] = l;
      l = id;
    }
  }

  // When `id` let the next op of its stream go: its end, or its arrival for posted ops.
  SimTime release(OpId id) const { return posted(g_.op(id)) ? rec_[id].arrival : rec_[id].end; }

  // The op whose finishing last held `id` back from arriving earlier (a dependency or its
  // stream predecessor), or kNone.
  OpId blocker(OpId id) const {
    OpId best = kNone;
    SimTime best_t = kTimeZero;
    auto consider = [&](OpId c, SimTime t) {
      if (best == kNone || t > best_t) {
        best = c;
        best_t = t;
      }
    };
    for (OpId d : g_.deps(id)) consider(d, rec_[d].end);
    if (pred_[id] != kNone) consider(pred_[id], release(pred_[id]));
    return best;
  }

  // Charges [a, b) of `out` by walking back from `op`, which began (or, for the end of the
  // iteration, was the last thing running) at b.
  void explain(SimTime a, SimTime b, OpId op, RankBreakdown& out) const {
    SimTime cur = b;
    auto charge = [&](SimTime from, Stall s) {
      from = std::max(from, a);
      if (from < cur) {
        out.time[static_cast<int>(s)] += cur - from;
        cur = from;
      }
    };
    for (int guard = 0; op != kNone && cur > a && guard < 1 << 20; ++guard) {
      const tg::Op& o = g_.op(op);
      const tg::OpRecord& r = rec_[op];
      if (r.end < cur) charge(r.end, Stall::kIdle);  // nothing of this op overlaps [.., cur)
      switch (o.kind) {
        case OpKind::kCompute: charge(r.start, Stall::kCompute); break;
        case OpKind::kDelay: charge(r.start, o.stream == tg::Stream::kData ? Stall::kData : o.stream == tg::Stream::kCompute ? Stall::kCompute : Stall::kIdle); break;
        case OpKind::kLoad: charge(r.start, Stall::kData); break;
        case OpKind::kCollective:
          charge(r.start, comm_stall(o.stream));
          charge(r.arrival, Stall::kWaitingPeers);
          break;
        case OpKind::kSend:
        case OpKind::kRecv:
          charge(r.start, Stall::kPp);
          charge(r.arrival, o.kind == OpKind::kRecv ? Stall::kBubble : Stall::kWaitingPeers);
          break;
      }
      op = blocker(op);
    }
    charge(a, Stall::kIdle);
  }

 private:
  const tg::TaskGraph& g_;
  const tg::Timeline& rec_;
  std::vector<OpId> pred_;
};

}  // namespace

Duration RankBreakdown::total() const {
  Duration d{0};
  for (Duration t : time) d += t;
  return d;
}

std::vector<RankBreakdown> attribute_stalls(const tg::TaskGraph& graph, const tg::Timeline& records,
                                            SimTime iteration_end) {
  const Attributor at(graph, records);
  std::vector<RankBreakdown> out(graph.ranks());
  std::vector<SimTime> busy_until(graph.ranks(), kTimeZero);
  std::vector<OpId> last_op(graph.ranks(), kNone);  // the rank's op that ended last
  std::vector<OpId> busy_ops;  // the ops that make the compute stream busy, in start order
  for (OpId id = 0; id < graph.size(); ++id) {
    const tg::Op& op = graph.op(id);
    const tg::OpRecord& r = records[id];
    if (last_op[op.rank] == kNone || r.end >= records[last_op[op.rank]].end) last_op[op.rank] = id;
    if (on_compute_stream(op)) busy_ops.push_back(id);
  }
  // In stream order the compute stream's ops start in id order; issued otherwise
  // (task_graph.h's IssueOrder) they may not, or may overlap: busy time is their union.
  std::stable_sort(busy_ops.begin(), busy_ops.end(), [&](OpId a, OpId b) { return records[a].start < records[b].start; });
  for (OpId id : busy_ops) {
    const tg::Op& op = graph.op(id);
    const tg::OpRecord& r = records[id];
    RankBreakdown& b = out[op.rank];
    if (r.start > busy_until[op.rank]) at.explain(busy_until[op.rank], r.start, at.blocker(id), b);
    if (r.end > busy_until[op.rank]) {
      b.time[static_cast<int>(Stall::kCompute)] += r.end - std::max(r.start, busy_until[op.rank]);
      busy_until[op.rank] = r.end;
    }
  }
  // After a rank's last op the others are still working: for a pipeline stage that is the
  // drain of the pipeline (bubble); otherwise it is waiting on slower peers.
  std::vector<bool> pipelined(graph.ranks(), false);
  for (const tg::Op& op : graph.ops()) pipelined[op.rank] = pipelined[op.rank] || posted(op);
  for (std::uint32_t rank = 0; rank < graph.ranks(); ++rank) {
    if (iteration_end <= busy_until[rank]) continue;
    RankBreakdown tail;
    at.explain(busy_until[rank], iteration_end, last_op[rank], tail);
    Duration& idle = tail.time[static_cast<int>(Stall::kIdle)];
    tail.time[static_cast<int>(pipelined[rank] ? Stall::kBubble : Stall::kWaitingPeers)] += idle;
    idle = Duration{0};
    for (int k = 0; k < kStallCount; ++k) out[rank].time[static_cast<std::size_t>(k)] += tail.time[static_cast<std::size_t>(k)];
  }
  return out;
}

std::array<double, kStallCount> mean_stall_seconds(const std::vector<RankBreakdown>& stalls) {
  std::array<double, kStallCount> mean{};
  if (stalls.empty()) return mean;
  for (std::size_t k = 0; k < mean.size(); ++k) {
    double sum = 0;
    for (const RankBreakdown& b : stalls) sum += to_seconds(b.time[k]);
    mean[k] = sum / static_cast<double>(stalls.size());
  }
  return mean;
}

}  // namespace cs::results
