// Runs collective schedules on a shared simulator and flow network: several collectives at once,
// contending for links (the executor's and the single-collective simulator's engine).
//
// Latency model. Each round of a schedule counts `steps` algorithm steps. The per-step latency
// of a round is  a = max over its flows of (step latency of the flow's link class, for the
// protocol) + (the flow's path latency),  where a flow's class is the slowest class on its path
// (network > pcie > nvlink). Every flow of the round then gets
//     extra latency = steps x a - (its own path latency)  [+ launch latency in the first round]
// so a round on an idle uniform network takes exactly  steps x a + bytes / rate, the closed
// forms listed in schedule.h. Protocols: Simple puts the data bytes on the wire; LL puts
// ll_wire_factor times as many, with the smaller LL step latency. NVLS rounds
// (StepLatency::kNvls, or local steps of that kind: NVLS-tree's in-server phase) take NVLS's own
// step latency in place of the class's, and a schedule that starts with one pays NVLS's base
// latency in place of the launch latency, as NCCL's cost model does; kNvls rounds also add the
// fill and drain of NCCL's NVLS pipeline (sim/collectives/nvls_pipeline.h) at the pipeline's
// idle rate (NVLS-tree's are not modelled). All come from the cluster's protocol parameters
// (sim/collectives/protocol_params.h).
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/collectives/network_fold.h"
#include "sim/collectives/network_layout.h"
#include "sim/collectives/schedule.h"
#include "sim/engine/simulator.h"
#include "sim/network/equal_flows_round.h"
#include "sim/network/flow_network.h"
#include "topology/adaptive_spread.h"
#include "topology/router.h"

namespace cs::coll {

struct CollectiveOutcome {
  SimTime start, end;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  Bytes wire_bytes{0};  // bytes put on the network by all flows (each counted once)
  // Summed over rounds: the round's last delivery less its start and its largest tail (the
  // latency a flow's delivery follows its last byte by). No round's last byte left the sender
  // before its start + this share: the part of the time the bytes on the wire set.
  Duration drain{0};
};

// Starts collectives on a shared simulator and network; several may run at once and contend.
class CollectiveRunner {
 public:
  // merge_identical: start the flows of a round that share their path and size as one weighted
  // flow (exact under max-min sharing: each gets the rate it would alone); false starts one
  // flow each (tests compare the two).
  // fold: the network is the quotient of a folded run (sim/collectives/network_fold.h): every
  // flow starts on the representatives of its links' orbits, and a route that breaks the
  // symmetry marks the fold broken.
  CollectiveRunner(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                   const NetworkLayout& layout, bool merge_identical = true, NetworkFold* fold = nullptr);
  ~CollectiveRunner();
  // The schedule is read, never changed, so a caller that runs the same collective again (a
  // training iteration's every micro-batch) may keep it and pass it each time.
  // `role`: how the run stands for the unfolded run's flows on a folded network (network_fold.h;
  // kOrbit unless a rotation folds it); ignored unfolded.
  void start(CollectiveSpec spec, std::shared_ptr<const Schedule> schedule, CollectiveAlgorithm algorithm,
             Protocol protocol, std::function<void(const CollectiveOutcome&)> on_done, FoldRole role = FoldRole::kOrbit);
  // Off: a pipeline's every member adds its whole route to the pipeline's load, also between
  // servers of one leaf each, whose shared middles are otherwise added once per pair of leaves
  // (start_round, PipelineLoad): the same loads either way (tests compare the two).
  void share_leaf_middles(bool on) { share_leaf_middles_ = on; }
  // The runner's collective runs alone on an idle network, the one `form` reads (CollectiveSimulator):
  // a round whose flows all move the same bytes with the same tail (every round but NVLS's, whose
  // pipelines' fills differ, when its flows' sizes are equal: an all-to-all, a ring's or a tree's
  // channels) ends when sim/network/equal_flows_round.h's closed form says, with no flow started:
  // the time the flows would take, to a few picoseconds, without their dynamics. Null (the
  // default, for collectives that share a network): every round starts its flows.
  void solve_alone(net::EqualFlowsRound* form) { closed_form_ = form; }
  // The flows a part of a large closed-form round holds at once (start_round streams such a
  // round, one part after another; at least 1). Tests make parts small to compare with whole.
  void set_round_part(std::size_t flows) { part_flows_ = std::max<std::size_t>(flows, 1); }
  // A round of more flows than this (Round::part_flow_count when listed in parts), equal in size,
  // outside pipelines, that takes the closed form under static ECMP on an unfolded network, is
  // prepared in parts (start_round); only such a round may be listed in parts (Round::parts).
  static constexpr std::size_t kStreamedRound = 4096;

 private:
  struct Run;
  struct Prepared;
  void start_round(const std::shared_ptr<Run>& run);
  void release_scratch();  // start_round's scratch back to the heap
  void on_delivered(const std::shared_ptr<Run>& run);
  // A flow of `times` x the route's per-link weights (topology/adaptive_spread.h).
  void start_weighted(const topo::WeightedRoute& route, std::uint32_t times, Bytes bytes, Duration tail,
                      const std::shared_ptr<Run>& run);
  // A flow or pipeline of the round: started on the network, or added to the closed form when the
  // round takes it (solve_alone; closed_).
  void launch_flow(std::span<const topo::LinkId> path, Bytes bytes, Duration extra_latency, const std::shared_ptr<Run>& run);
  void launch_pipeline(std::span<const std::span<const topo::LinkId>> members, std::span<const std::uint32_t> copies,
                       Bytes bytes, Duration tail, const std::shared_ptr<Run>& run);
  // NVLS: the fill and drain of NCCL's pipeline (sim/collectives/nvls_pipeline.h) at the
  // pipeline's rate on the idle network (an approximation under contention).
  Duration nvls_fill_time(const CollectiveSpec& spec, std::span<const std::span<const topo::LinkId>> members,
                          std::span<const std::uint32_t> copies, Bytes member_bytes) const;

  sim::Simulator& sim_;
  net::FlowNetwork& net_;
  topo::Router& router_;
  const NetworkLayout& layout_;
  topo::AdaptiveSpreader spreader_;  // adaptive routing's spreads, cached per NIC pair
  // Links the spreader's cache may hold after a flow is prepared (8 bytes each; AdaptiveSpreader::trim).
  static constexpr std::size_t kSpreadCacheLinks = std::size_t{1} << 24;
  bool merge_identical_ = true;
  bool share_leaf_middles_ = true;
  NetworkFold* fold_ = nullptr;
  net::EqualFlowsRound* closed_form_ = nullptr;  // solve_alone
  net::EqualFlowsRound* closed_ = nullptr;       // the current round's, while it takes the closed form
  // start_round's scratch, kept between rounds of up to kKeptScratch flows (every
  // point-to-point transfer is a run of one such round), released after a larger one.
  static constexpr std::size_t kKeptScratch = 4096;
  std::size_t part_flows_ = std::size_t{1} << 16;  // set_round_part
  // How many flows ahead start_round hints the router's cache slot of a flow's ends
  // (Router::prefetch): a few flows' preparation covers a miss to memory.
  static constexpr std::size_t kRouteAhead = 8;
  std::vector<Prepared> prepared_;
  std::vector<std::size_t> singles_;
  std::vector<std::uint32_t> weight_;
  // start_round's paths that are not in the router's cache (a relay's, an NVLS flow's with its
  // reduction engine) and its weighted routes: the network copies both when a flow starts, so
  // they live for one round. Chunks that never move (a span into one stays valid while the
  // round is built), growing from 64 links to 16,384, and routes reused with their capacity:
  // a point-to-point transfer, thousands of them per training iteration, allocates none.
  std::span<topo::LinkId> owned_path(std::size_t links);
  topo::WeightedRoute& new_spread();
  std::vector<std::vector<topo::LinkId>> path_chunks_;
  std::size_t chunks_used_ = 0;  // path_chunks_[0, chunks_used_) hold this round's paths
  std::vector<std::unique_ptr<topo::WeightedRoute>> spreads_;
  std::size_t spreads_used_ = 0;
  std::vector<net::WeightedLink> weighted_links_;  // start_weighted's scratch
  std::vector<topo::LinkId> hashed_route_;          // start_round's: a connection's uncached route
  // The router's label-free route from a to b (Keep::kAlways), through a memo of the last route
  // met per GPU and direction (end_routes_; start_round's large rounds, in which the router's
  // paths stay where they are): the GPU is a when from_gpu, else b.
  // Kept with its timing (`measure`'s).
  struct EndRoute;
  template <typename Measure>
  const EndRoute& end_route(topo::NodeId a, topo::NodeId b, bool from_gpu, const Measure& measure);

  // A flow's path latency and the slowest link class on it (the header's latency model).
  struct PathTiming {
    Duration latency{0};
    int worst = 0;  // hw::LinkClass
  };
  // Under adaptive routing, what start_round prepares for a flow between servers outside any
  // pipeline is a function of its ends and rail alone: its NICs (ScheduleContext::nic_route),
  // the router's paths to and from them (label 0), the spread between them and the fold's
  // collapse of their sum, all fixed for the runner's life (the fold's marks are sticky, set
  // the first time). Kept here per (src, dst, rail) for rounds of up to kKeptScratch flows, a
  // training iteration's point-to-point transfer, which repeats once per micro-batch and
  // direction, prepares each once: on the 405B iteration at 16,384 GPUs the lookups, sums and
  // collapses were 11% of its instructions. A larger round (an all-to-all of thousands of
  // GPUs, whose pairs rarely repeat) neither reads nor fills it. Filled up to kCachedFlowLinks
  // links (8 bytes each) and emptied at the start of the next round, so that a round's
  // references into it stay valid.
  // Open addressing (linear probing, at most half full), each slot holding what push needs, so
  // that a lookup touches one slot (an unordered_map's bucket and node were two cache misses,
  // 6-9% of the iteration's wall time); the path and spread live in kept_flows_, whose
  // elements never move.
  struct FlowSlot {
    static constexpr std::uint32_t kFree = UINT32_MAX;
    std::uint32_t src = kFree, dst = 0;
    std::int32_t rail = 0;
    std::uint32_t path_size = 0;
    const topo::LinkId* path = nullptr;
    const topo::WeightedRoute* spread = nullptr;
    PathTiming timing;
  };
  struct CachedFlow {
    std::vector<topo::LinkId> path;
    topo::WeightedRoute spread;
  };
  // The slot of (src, dst, rail): its own, else the free one where it goes.
  FlowSlot& flow_slot(std::uint32_t src, std::uint32_t dst, std::int32_t rail);
  // Keeps a flow's path, timing and spread (not yet kept).
  void keep_flow(std::uint32_t src, std::uint32_t dst, std::int32_t rail, std::span<const topo::LinkId> path,
                 PathTiming timing, const topo::WeightedRoute& spread);
  // The latency and slowest class of a pair between servers of one leaf each over its route
  // (AdaptiveSpreader::leaf_pair): its middle's, kept per pair of leaves (a sum of integers in
  // picoseconds, so the mean is mean_latency's of the whole route exactly), and its two links'.
  PathTiming leaf_timing(const topo::AdaptiveSpreader::LeafPair& pair);
  struct EndRoute {
    std::uint32_t other = UINT32_MAX;  // the route's other end
    std::uint32_t size = 0;
    const topo::LinkId* path = nullptr;
    PathTiming timing;
  };
  std::vector<EndRoute> end_routes_;  // [2 x node + (0: from it, 1: to it)]
  std::vector<PlannedFlow> listed_part_;  // start_round's: the part of a round listed in parts
  struct MiddleTiming {
    double weighted_ps = 0;  // topo::weighted_latency_ps of the middle
    std::uint32_t scale = 1;
    int worst = 0;
  };
  std::unordered_map<std::uint64_t, MiddleTiming> middle_timings_;  // by leaves, from << 32 | to
  static constexpr std::size_t kMiddleTimings = std::size_t{1} << 20;  // then cleared
  topo::WeightedRoute leaf_route_;  // start_round's scratch: a pipeline member's whole route
  static constexpr std::size_t kCachedFlowLinks = std::size_t{1} << 22;
  std::vector<FlowSlot> flow_slots_;  // empty, or a power of two
  std::deque<CachedFlow> kept_flows_;
  std::size_t cached_flow_links_ = 0;
};

}  // namespace cs::coll
