// Flow-level network model: max-min fair sharing of directed links (progressive filling).
//
// A flow moves B bytes along a path of directed links. A *pipeline* is several such transfers
// (the edges of one ring channel, of one tree, of one NVLS reduction) that advance at one common
// rate, because each edge forwards what the previous one delivered: the model treats it as one
// flow that crosses link l w_l times (w_l = how many of its edges use l), each member moving B
// bytes. While active, every flow f has a rate r_f; the rates are the max-min fair allocation
// for the link capacities c_l:
//
//     for every link l:   sum_{f through l} w_{f,l} r_f  <=  c_l
//     and no r_f can grow without shrinking some r_g <= r_f.
//
// Progressive filling computes it: all unfrozen flows grow together; the link with the smallest
// fair share  s_l = (c_l - frozen load on l) / (unfrozen weight on l)  saturates first, its flows
// freeze at s_l, and the process repeats on the rest. Cost O(F·h + L log L) for F flows of
// h hops on L links. Links that cannot saturate (the narrowest capacities of their flows add up
// to less than theirs) take no part: they neither constrain nor couple flows.
//
// Timing of one flow started at t0:
//     bandwidth phase: from t0 until its bytes have drained at its (changing) rate, t1;
//     delivery:        the receiver has the last byte at  t1 + path latency + extra latency.
// The links are free again at t1 (the tail is in flight, not queued). Rates are recomputed only
// when flows start or finish, only for the flows that share links that can saturate with them,
// transitively (the connected component), once per instant: every start and end at one simulated time is batched
// into one solve in the engine's kRateUpdate phase. Remaining bytes are tracked in double
// precision; completion times are rounded up to the next picosecond (core/units.h's rule).
//
// *Removals.* When the only change since the last solve is that flows finished, every flow whose
// rate is below the slowest finished flow's rate r keeps its rate, so the solve leaves those
// flows alone (a fixed load on their links) and refills the others. Why: a finished flow
// crossed no link that saturated below its own rate (else it would have frozen there), so
// progressive filling without it runs exactly as before up to level r, and max-min allocations
// are unique. An all-to-all over a fabric with ECMP collisions ends in many small steps, each
// the departure of the fastest flows, and each now costs the flows still above it, not all.
//
// Finding those flows costs what they are, not what shares their links: on a link with more than
// 16 flows they are the top of a max-heap by rate, found by a walk that stops under r, and the
// load of the fixed ones is the link's total rate less theirs (equal to the sum of theirs but
// for rounding). The heap is kept from one walk to the next (a departure or a new rate moves one
// entry) unless a solve scans the link or changes most of its flows; the next walk then
// restores it. Without it each such solve scanned every flow on every link it touched (a NIC's
// link carries one flow per remote server in an all-to-all), and a run's cost grew as flows x
// solves (docs/performance.md, "Departures under static ECMP").
//
// *Weighted flows* generalise the multiplicity w_l to any weight: a flow that puts a fraction
// weight_l / K of its rate on link l, as a flow sprayed by adaptive routing over equal-cost paths
// (topo::adaptive_spread) does, K being the spread's common denominator. The constraint above
// holds with w_{f,l} = weight_l / K, a rational the solver keeps as a double, and the filling runs
// on every flow's own rate r: spreads of different K on one link (an intra-pod spread over a
// leaf's 64 uplinks, K = 64, and an inter-pod one over 4,096 paths, K = 4,096, each putting 1/64
// of its rate on an uplink) share it as max-min over their rates says, equally, not in the ratio
// of their integer weights. Link l carries weight_l x B / K bytes. With K = 1 and weights the
// members' multiplicities it is exactly a pipeline (integer weights, exact in a double).
//
// Per link the model accumulates bytes carried and busy time (time with at least one active
// flow); utilization = bytes / (capacity x elapsed) <= 1. Known limits: no packet effects
// (queueing delay, head-of-line blocking, congestion control dynamics, incast collapse).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/units.h"
#include "sim/network/pooled_lists.h"
#include "sim/engine/simulator.h"

namespace cs::net {

using topo::LinkId;

struct LinkCapacity {
  Bandwidth bandwidth{0};  // usable rate (line rate x class efficiency)
  Duration latency{0};     // one traversal
};

// A link of a weighted flow and its weight: the flow puts weight / scale of its rate on it.
struct WeightedLink {
  LinkId link;
  std::uint32_t weight = 0;
};

struct LinkStats {
  Bytes bytes{0};          // carried so far
  Duration busy{0};        // time with at least one active flow
};

// A busy interval of one link, recorded when tracing is on.
struct BusyInterval {
  SimTime begin, end;
  Bytes bytes{0};
};

class FlowNetwork {
 public:
  FlowNetwork(sim::Simulator& simulator, std::vector<LinkCapacity> links);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Makes this network what a new FlowNetwork(simulator, the same links) would be: no flows, the
  // links' original capacities, no statistics, busy intervals off. Costs O(links used since the
  // last reset + flows), not O(links): a caller that simulates many short runs on a large
  // machine (the tuner's candidates) reuses one network instead of building one per run.
  void reset(sim::Simulator& simulator);
  // The simulator the network's events run on.
  sim::Simulator& simulator() const { return *sim_; }

  // Starts a flow of `bytes` along `path` now. `on_delivered` runs when the receiver has the
  // last byte: path latency + extra latency after the bandwidth phase. An empty path
  // (src == dst) or zero bytes skips the bandwidth phase.
  void start_flow(std::span<const LinkId> path, Bytes bytes, Duration extra_latency,
                  sim::Callback on_delivered);
  // Starts a pipeline: every member path moves `bytes_per_member` at one common rate.
  // `on_delivered` runs `tail` after the last byte has left (the caller's latency model).
  void start_pipeline(std::span<const std::span<const LinkId>> members, Bytes bytes_per_member,
                      Duration tail, sim::Callback on_delivered);
  // The same with member i standing for copies[i] identical members (same path and bytes): its
  // links carry copies[i] x the common rate. Empty `copies`: one each.
  void start_pipeline(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies,
                      Bytes bytes_per_member, Duration tail, sim::Callback on_delivered);

  // Starts a flow of `bytes` that puts weight_l / scale of its rate r on each link l: a flow
  // spread over several paths (adaptive routing), or a pipeline (scale 1, each member moving
  // `bytes`, weights the multiplicities). A link listed twice adds its weights; weight 0 is no
  // load. Link l carries weight_l x bytes / scale in all. `on_delivered` runs `tail` after the
  // last byte has left; no links or zero bytes skips the bandwidth phase. scale > 0.
  void start_weighted(std::span<const WeightedLink> links, std::uint32_t scale, Bytes bytes,
                      Duration tail, sim::Callback on_delivered);

  // A batch of starts: the flows started between begin_batch() and end_batch() join their
  // links' flow lists at end_batch(), in the order they started, each list grown once to hold
  // them all (PooledLists::reserve) instead of once per doubling: the state is the one attaching
  // each as it starts gives, bit for bit, since only starts may come in between (nothing else
  // reads the lists; any other call throws InternalError). A collective's round starts its
  // pipelines so: on the 131,072-GPU tree, 2.9 million heap blocks and 1.6 million frees for the
  // lists' growth became 1.3 million blocks and no free (docs/performance.md, "A round's flows
  // join their links at once").
  void begin_batch();
  void end_batch();

  // The common rate a pipeline of these members would get alone on an idle network: the smallest
  // capacity / (members crossing the link) over its links, per member; 0 for no links.
  Bandwidth idle_rate(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies = {});

  // Changes a link's usable rate from now on (degraded or failed links; > 0).
  void set_capacity(LinkId link, Bandwidth bandwidth);

  std::size_t link_count() const { return links_.size(); }
  Bandwidth capacity(LinkId link) const { return Bandwidth{links_[link.value].capacity}; }
  Duration path_latency(std::span<const LinkId> path) const;
  // Statistics up to now.
  LinkStats link_stats(LinkId link) const;
  // The links a flow or a caller touched since the last reset, in link order (every link that
  // may have carried bytes): O(those links), so a run on a large machine reports what it used
  // without visiting the rest.
  std::vector<LinkId> touched_links() const;
  std::size_t active_flows() const { return active_flows_; }
  std::uint64_t flows_started() const { return flows_started_; }
  std::uint64_t solves() const { return solves_; }
  // Current rate of the flows on a link, bytes/s (after the last solve).
  Bandwidth link_rate(LinkId link) const { return Bandwidth{links_[link.value].rate_sum}; }

  // Busy intervals per link (recorded only after enable_busy_intervals()).
  // A link busy at the call records its interval from the call on.
  void enable_busy_intervals();
  const std::vector<BusyInterval>& busy_intervals(LinkId link);

 private:
  // A flow on a link, with copies of its weight there and its rate, so that a solve reads a
  // link's flows without visiting them. Unless the link is stale, its FlowRefs form a max-heap
  // by rate ("Removals").
  struct FlowRef {
    std::uint32_t flow;
    std::uint32_t hop;     // index into the flow's hops
    double weight;         // = flows_[flow].hops[hop].weight
    double rate;           // = flows_[flow].rate
  };
  struct Hop {
    std::uint32_t link;
    std::uint32_t slot;    // index of this flow in the link's flow list
    double weight;         // the flow's load on the link per unit of its rate (crossings / scale)
  };
  // 64 bytes, one cache line: what a solve reads of every link it reaches (the flows, the
  // capacity, the total rate, the saturation bound, the epoch mark), and the bytes, which a
  // flow's end adds to. The solve's working values live in work_, one entry per link it touched
  // (Link::scratch), the busy periods in accounts_, written when a link turns busy or idle, and
  // the latencies in latencies_ (read by start_flow alone). At 128 bytes the links of a
  // 32,768-GPU iteration took 59 MB, more than a 32 MiB last-level cache; at 64, 29 MB
  // (docs/performance.md, "A link in one cache line").
  struct alignas(64) Link {
    PooledLists<FlowRef>::List flows;  // active flows through this link (storage: flow_refs_)
    double capacity = 0;            // bytes/s
    double rate_sum = 0;            // bytes/s of the flows on it (after the last solve)
    // Sum over its flows of weight x the flow's rate bound: a link whose sum stays below its
    // capacity can never saturate, so progressive filling skips it.
    double bound_sum = 0;
    // Bytes carried by the flows that ended: each adds weight x its bytes (the integral of the
    // link's rate over the flow's life).
    double bytes = 0;
    std::uint32_t mark = 0;         // the epoch that last marked it
    // Valid while mark == epoch_: its entry in work_ during a solve; its hop's index in
    // merge_hops; in end_batch, how many of the batch's flows will join it.
    std::uint32_t scratch = 0;
    // Its flows are not kept in heap order (never walked yet, or a solve scanned it or changed
    // most of its flows): the next walk restores it.
    bool stale = true;
    bool walked = false;            // the current solve walked it (its candidates: its Work's)
    bool used = false;              // a flow or a caller changed it since the last reset (in used_)
    bool capacity_set = false;      // set_capacity changed it (its original is in original_capacity_)
  };
  static_assert(sizeof(Link) == 64);
  // A solve's values for a link it touched.
  struct Work {
    double residual = 0;
    double unfrozen = 0;               // weight of the unfrozen flows
    std::uint32_t unfrozen_flows = 0;  // how many (exact, where the weights' sum rounds)
    // A walked link: the flows it may change are cand_[cand_begin, +cand_count).
    std::uint32_t cand_begin = 0;
    std::uint32_t cand_count = 0;
  };
  // A link's busy time: it is busy from the start of a flow on it while idle to the end of its
  // last (the header's definition: at least one active flow).
  struct Account {
    SimTime since = kTimeZero;  // the start of the current busy period (while it has flows)
    Duration busy{0};           // of the busy periods that ended
  };
  // Busy intervals live apart from Link (one vector per link, allocated only when recording):
  // the tuner builds a network per candidate, and a small Link keeps that cheap
  // (docs/performance.md, "NVLS reduction engines").
  // The busy interval a link has open, while recording.
  struct OpenInterval {
    SimTime since = kTimeZero;
    double bytes = 0;  // the link's bytes (ended flows, and the active ones' so far) at `since`
  };
  struct Flow {
    std::vector<Hop> hops;          // distinct links, in first-use order
    double bytes = 0;               // per member, at the start
    double remaining = 0;           // bytes (per member)
    double rate = 0;                // bytes/s (per member)
    double bound = 0;               // min over its links of capacity / weight (rate never exceeds it)
    SimTime updated = kTimeZero;    // when `remaining` was last advanced
    Duration tail{0};               // path latency + extra latency
    sim::EventHandle completion;
    sim::Callback on_delivered;
    std::uint32_t mark = 0;
    bool active = false;
    bool frozen = false;
  };

  std::uint32_t new_flow(Bytes bytes, Duration tail, sim::Callback on_delivered);
  void activate(std::uint32_t f);
  // The distinct links of `members` with their multiplicity, in first-use order (deterministic).
  void merge_hops(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies,
                  std::vector<Hop>& hops);
  // Adds `weight` crossings of `link` to `hops` (a hop per distinct link, in first-use order);
  // valid between one ++epoch_ and the next.
  void add_hop(std::vector<Hop>& hops, std::uint32_t link, double weight);
  // The heap of a link's flows by rate: puts `r` at `pos` (noting the slot in its flow's hop),
  // and restores the order after the entry at `pos` changed or arrived.
  void place(Link& link, std::uint32_t pos, const FlowRef& r);
  void sift(Link& link, std::uint32_t pos);
  void sift_down(Link& link, std::uint32_t pos);
  void heapify(Link& link);
  // Appends the flows of `link` whose rate is at least `floor` > 0 to cand_ (a walk from the top
  // of its heap, put in order first if stale, that stops under floor); returns the sums of their
  // weights on the link and of their loads (rate x weight).
  std::pair<double, double> collect(Link& link, double floor);
  // Adds flow f to its links' lists. kStart: a flow starting now (an idle link begins a busy
  // period); kStartInBatch: the same from end_batch, where a link whose scratch holds the batch's
  // flows still to join it first makes room for them all; kRebound: back after set_capacity.
  enum class Attach { kStart, kStartInBatch, kRebound };
  void attach(std::uint32_t f, Attach how);
  void detach(std::uint32_t f);
  void request_solve();
  void solve();
  void finish_bandwidth_phase(std::uint32_t f);
  // What flow f has delivered by now (per member), between solves.
  double delivered(const Flow& f) const;
  // Bytes link l carried up to now: its ended flows' and its active ones' so far.
  double carried(std::uint32_t l) const;
  static bool can_saturate(const Link& l);

  // The link `l`, noted as one reset must restore.
  Link& use(std::uint32_t l) {
    Link& link = links_[l];
    if (!link.used) {
      link.used = true;
      used_.push_back(l);
    }
    return link;
  }

  sim::Simulator* sim_;
  std::vector<Link> links_;
  std::vector<Account> accounts_;  // per link
  std::vector<Duration> latencies_;  // per link
  std::vector<std::uint32_t> used_;
  std::vector<std::pair<std::uint32_t, double>> original_capacity_;  // of links set_capacity changed, for reset
  std::vector<std::vector<BusyInterval>> intervals_;  // per link once recording; reset empties the used ones
  std::vector<OpenInterval> open_;                    // per link once recording
  std::vector<Flow> flows_;
  PooledLists<FlowRef> flow_refs_;  // the storage of the links' flow lists
  std::vector<std::uint32_t> free_flows_;
  std::vector<std::uint32_t> dirty_links_;
  bool batching_ = false;               // between begin_batch and end_batch
  std::vector<std::uint32_t> batched_;  // the flows started in the batch, to attach at its end
  void check_not_batching(const char* what) const;
  bool solve_pending_ = false;
  // Since the last solve: only flows finished (no start, no capacity change), the slowest of
  // them at removed_min_rate_ (the solve's "Removals" rule).
  bool only_removals_ = true;
  double removed_min_rate_ = std::numeric_limits<double>::infinity();
  bool record_intervals_ = false;
  std::uint32_t epoch_ = 0;
  std::vector<Hop> scratch_hops_;  // idle_rate's
  std::size_t active_flows_ = 0;
  std::uint64_t flows_started_ = 0;
  std::uint64_t solves_ = 0;
  // solver scratch, kept to avoid allocation
  std::vector<std::uint32_t> comp_links_, comp_flows_, touched_, stack_, cand_, walk_;
  std::vector<Work> work_;  // per link touched by the solve (Link::scratch), in touched_ order
  std::vector<std::pair<double, std::uint32_t>> heap_;
  std::vector<double> old_rate_;
};

}  // namespace cs::net
