#include "sim/collectives/collective_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/errors.h"
#include "core/random.h"
#include "sim/collectives/nvls_pipeline.h"

namespace cs::coll {

using topo::LinkId;
using topo::NodeId;

struct CollectiveRunner::Run {
  CollectiveSpec spec;
  std::shared_ptr<const Schedule> schedule;  // shared with the caller's cache, if it keeps one
  Protocol protocol;
  std::function<void(const CollectiveOutcome&)> on_done;
  CollectiveOutcome outcome;
  std::size_t round = 0;
  std::size_t outstanding = 0;
  SimTime round_start = kTimeZero;  // when the current round started its flows
  Duration round_tail{0};           // the largest tail of its flows (CollectiveOutcome::drain)
  FoldRole role = FoldRole::kOrbit;
};

// One flow to start: a planned flow with its path (start_round).
// Its planned flow is the round's flow of the same index (bytes, pipeline, copies); 32 bytes, a
// round of a 131,072-GPU tree holding 4 million.
struct CollectiveRunner::Prepared {
  const LinkId* links = nullptr;
  std::uint32_t size = 0;
  bool shared = true;                      // the path is the router's (others never repeat)
  Duration latency{0};
  // Adaptive routing: the flow's load per link (the path then gives its latency only).
  const topo::WeightedRoute* spread = nullptr;
  std::span<const LinkId> path() const { return {links, size}; }
};

namespace {

// Whether every flow of `round` that moves bytes puts the same bytes on the wire (the closed
// form's condition: sim/network/equal_flows_round.h).
template <typename Wire>
bool equal_wire_bytes(const Round& round, const Wire& wire) {
  Bytes moved{0};
  return std::all_of(round.flows.begin(), round.flows.end(), [&](const PlannedFlow& f) {
    const Bytes b = wire(f.bytes);
    if (b.value() <= 0) return true;
    if (moved.value() == 0) moved = b;
    return b == moved;
  });
}

}  // namespace

CollectiveRunner::CollectiveRunner(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                                   const NetworkLayout& layout, bool merge_identical, NetworkFold* fold)
    : sim_(sim),
      net_(net),
      router_(router),
      layout_(layout),
      // A folded run collapses every spread onto its orbits: the spreader works on the twin
      // switches' quotient, whose routes collapse to the same loads (adaptive_spread.h).
      spreader_(fold ? topo::AdaptiveSpreader(layout.cluster(), layout.twin_quotient(fold->orbits().switch_twins()))
                     : topo::AdaptiveSpreader(layout.cluster())),
      merge_identical_(merge_identical),
      fold_(fold) {
  spreader_.set_server_twins_source([&layout] { return layout.server_twins(); });
  spreader_.set_like_switches_source([&layout] { return layout.like_switches(); });
}

CollectiveRunner::~CollectiveRunner() = default;

void CollectiveRunner::start(CollectiveSpec spec, std::shared_ptr<const Schedule> schedule, CollectiveAlgorithm algorithm,
                             Protocol protocol, std::function<void(const CollectiveOutcome&)> on_done, FoldRole role) {
  auto run = std::make_shared<Run>();
  run->role = role;
  run->spec = std::move(spec);
  run->schedule = std::move(schedule);
  run->protocol = protocol;
  run->on_done = std::move(on_done);
  run->outcome.start = sim_.now();
  run->outcome.algorithm = algorithm;
  run->outcome.protocol = protocol;
  // A run folded by the switch exchanges alone folds only what they fix (network_fold.h).
  if (fold_ && fold_->orbits().twins_only() && !twin_foldable(layout_.schedules(), *run->schedule)) fold_->mark_broken();
  start_round(run);
}

void CollectiveRunner::start_round(const std::shared_ptr<Run>& run) {
  const topo::Cluster& cluster = layout_.cluster();
  if (run->round >= run->schedule->rounds.size()) {
    // Nothing left (or nothing at all: one rank): the collective ends now.
    sim_.schedule_after(Duration{0}, sim::Phase::kCompletion, [this, run] {
      run->outcome.end = sim_.now();
      run->on_done(run->outcome);
    });
    return;
  }
  const Round& round = run->schedule->rounds[run->round];
  const ProtocolParams& protocol = layout_.protocol();
  const bool ll = run->protocol == Protocol::kLowLatency;

  std::vector<Prepared>& prepared = prepared_;
  prepared.clear();
  for (std::size_t c = 0; c < chunks_used_; ++c) path_chunks_[c].clear();
  chunks_used_ = 0;
  spreads_used_ = 0;
  Duration step{0}, local_step{0};  // local: over the flows inside one server (Round::local_steps)
  // Bytes on the wire for `data` of the schedule.
  const auto wire = [&](Bytes data) {
    return ll ? Bytes{static_cast<std::int64_t>(std::ceil(static_cast<double>(data.value()) * protocol.ll_wire_factor))}
              : data;
  };
  // A flow's path (and under adaptive routing its spread between the NICs, which the path then
  // leaves out): its latency and the class of its slowest link set the round's step.
  // Its latency and slowest class first (measure), then its entry (push).
  const auto measure = [&](std::span<const LinkId> path, const topo::WeightedRoute* fabric) {
    PathTiming t;
    for (LinkId l : path) {
      if (l.value < cluster.link_count()) {
        const topo::LinkTiming& link = cluster.link_timing(l);
        t.latency += link.latency;
        t.worst = std::max(t.worst, static_cast<int>(link.link_class));
      }
    }
    if (fabric) {
      t.latency += topo::mean_latency(cluster, *fabric);
      for (const auto& [l, w] : fabric->links) t.worst = std::max(t.worst, static_cast<int>(cluster.link(l).link_class));
    }
    return t;
  };
  const auto push = [&](std::span<const LinkId> path, bool shared, PathTiming timing) {
    const auto [latency, worst] = timing;
    const LinkClassProtocol& cls = protocol.of(static_cast<hw::LinkClass>(worst));
    const Duration own_class = ll ? cls.ll_step_latency : cls.step_latency;
    const Duration own = round.latency == StepLatency::kNvls ? protocol.nvls_step_latency : own_class;
    const Duration own_local = round.local_latency == StepLatency::kNvls ? protocol.nvls_step_latency : own_class;
    step = std::max(step, own + latency);
    if (worst < static_cast<int>(hw::LinkClass::kNetwork)) local_step = std::max(local_step, own_local + latency);
    if (path.size() > std::numeric_limits<std::uint32_t>::max() || prepared.size() == std::numeric_limits<std::uint32_t>::max()) {
      throw InternalError("a round of 2^32 flows or a path of 2^32 links");
    }
    prepared.push_back({path.data(), static_cast<std::uint32_t>(path.size()), shared, latency, nullptr});
  };
  const auto add = [&](std::span<const LinkId> path, bool shared, const topo::WeightedRoute* fabric = nullptr) {
    push(path, shared, measure(path, fabric));
  };
  // The flows of each pipeline (indices into prepared, < 2^32), in order. Under adaptive routing
  // or a fold, a pipeline that starts as one weighted flow has its load summed as its members
  // are prepared (RouteSum, in member order: the sum of the members' routes, with no route per
  // member), each member's spread mapped onto the quotient in a folded run as
  // NetworkFold::collapse maps it. Members that precede a pipeline's first spread join its sum
  // then.
  const bool adaptive = cluster.routing() == topo::Routing::kAdaptive;
  std::map<std::uint32_t, std::vector<std::uint32_t>> pipelines;
  // Members between servers of one leaf each (AdaptiveSpreader::leaf_pair) add their two end
  // links at once and their leaves' middle, the same for every member between the same two
  // leaves, once per pair of leaves: a count of its copies, added when the sum's scale is about
  // to change and at the end. The sums are integers, so the result is the one adding each
  // member's whole route gives, bit for bit: each middle's links are in the sum from its first
  // member on (the order of first additions is kept), and every rescale, exact or rounded,
  // sees the same sums. The 131,072-GPU tree's 524,256 members between servers fall on 98,256
  // (pipeline, pair of leaves): at most 50 million weights added instead of 132 million.
  struct PipelineLoad {
    explicit PipelineLoad(std::size_t dense_ids) : sum(0, dense_ids) {}
    topo::RouteSum sum;
    bool weighted = false;  // started as one weighted flow: it has a spread, or the run is folded
    std::unordered_map<std::uint64_t, std::uint32_t> middles;  // leaves' key -> copies not yet added
  };
  std::map<std::uint32_t, PipelineLoad> loads;
  // The load begun last. A round's pipelines are alike (a schedule's channels) and their members
  // come one pipeline after another, so a new load whose predecessor's sums are dense by id
  // starts dense (topo::LinkSums) instead of passing through a table first: the 131,072-GPU
  // tree's 16 pipelines of 626,688 links each. One that then stays small stops the chain (its
  // dense span is then 0), so at most one such storage per dense predecessor goes unfilled.
  const PipelineLoad* last_load = nullptr;
  const auto fold_map = [this](LinkId l) { return fold_->map(l); };
  const auto add_to = [&](PipelineLoad& load, const auto& part, std::uint32_t copies) {
    if (fold_) load.sum.add(part, copies, fold_map);
    else load.sum.add(part, copies);
  };
  const auto add_middles = [&](PipelineLoad& load) {
    for (auto& [key, copies] : load.middles) {
      if (copies == 0) continue;
      add_to(load, spreader_.spread(NodeId{static_cast<std::uint32_t>(key >> 32)}, NodeId{static_cast<std::uint32_t>(key)}),
             copies);
      copies = 0;
    }
  };
  // The pipeline of the flow just prepared: its index recorded; its load, where one is summed.
  const auto join_pipeline = [&](const PlannedFlow& pf) -> PipelineLoad* {
    const auto i = static_cast<std::uint32_t>(prepared.size() - 1);
    pipelines[pf.pipeline].push_back(i);
    if (!adaptive && !fold_) return nullptr;
    auto [it, fresh] = loads.try_emplace(pf.pipeline, last_load ? last_load->sum.dense_span() : 0);
    PipelineLoad& load = it->second;
    if (fresh) last_load = &load;
    if (fold_) load.weighted = true;
    return &load;
  };
  // A flow between servers outside pipelines under adaptive routing, whose ends and rail were
  // prepared before: the same path, timing and load (the header, flow_slots_).
  if (cached_flow_links_ > kCachedFlowLinks) {
    flow_slots_.clear();
    kept_flows_.clear();
    cached_flow_links_ = 0;
  }
  // Its flows, however listed (Round::parts).
  const std::size_t round_size = round.part_count > 0 ? round.part_flow_count : round.flows.size();
  const bool keep = adaptive && round_size <= kKeptScratch;
  // A large round of a collective alone, unfolded, takes the label-free routes between a GPU and
  // a NIC (a connection's first and last segments) from the runner's memo by GPU (end_route)
  // rather than the router's table, a cache miss each: an all-to-all's connections from one
  // proxy to every rank, or its handovers, meet the same GPU's segment again and again. (The
  // executor's rounds, which share the network, repeat every micro-batch: clearing the memo for
  // each cost the 405B iteration more than it saved.)
  const bool memo_ends = closed_form_ && !fold_ && round_size > kKeptScratch;
  if (memo_ends) end_routes_.assign(2 * static_cast<std::size_t>(cluster.node_count()), EndRoute{});
  // A large round of a collective alone that takes the closed form with no pipelines, no fold
  // and static ECMP (an all-to-all across thousands of servers) is prepared in parts: each
  // part's flows load the closed form's links and are dropped before the next part is prepared,
  // so the round holds one part's paths and entries at a time (a 16,384-rank all-to-all's round
  // lists 67 million connections, 76 bytes each here). A flow's tail is the round's, known once
  // every flow is measured, and equal for all: so each part's flows join with tail 0 and the
  // round ends at the closed form's end plus the tail. Flows of one part are not merged (an
  // equal path's weights add up on its links either way, and are integers here: the same sums).
  // Alone on an idle network, a round whose flows all move the same bytes with one tail takes
  // the closed form (solve_alone): every tail is the round's but for NVLS's fills, and a flow's
  // bytes on the wire are wire(its bytes). Asked once, for a round streamed or taken whole.
  const bool closed_round = closed_form_ && round.latency != StepLatency::kNvls && equal_wire_bytes(round, wire);
  const bool streamed = closed_round && !adaptive && !fold_ && round_size > kStreamedRound &&
                        std::none_of(round.flows.begin(), round.flows.end(),
                                     [](const PlannedFlow& f) { return f.pipeline != kNoPipeline; });
  // A flow outside pipelines counts its copies' bytes on the wire, but for a handover (its
  // transfer is counted once, as the proxy's send: PlannedFlow::handover).
  const auto count_wire = [&](const PlannedFlow& f) {
    if (!f.handover) run->outcome.wire_bytes += Bytes{wire(f.bytes).value() * f.copies};
  };
  // The flows being prepared: the round's, or the part of them listed last (Round::parts).
  std::span<const PlannedFlow> listing = round.flows;
  std::size_t part_begin = 0;  // listing[part_begin + j] is prepared[j]
  const auto load_part = [&] {
    for (std::size_t j = 0; j < prepared.size(); ++j) {
      const PlannedFlow& f = listing[part_begin + j];
      const Prepared& p = prepared[j];
      const Bytes bytes = wire(f.bytes);
      count_wire(f);
      if (p.spread) {
        start_weighted(*p.spread, f.copies, bytes, Duration{0}, run);
        continue;
      }
      const std::span<const LinkId> member[1] = {p.path()};
      const std::uint32_t copies[1] = {f.copies};
      closed_form_->add_pipeline(member, copies, bytes, Duration{0});
    }
    part_begin += prepared.size();
    prepared.clear();
    for (std::size_t c = 0; c < chunks_used_; ++c) path_chunks_[c].clear();
    chunks_used_ = 0;
    spreads_used_ = 0;
  };
  prepared.reserve(streamed ? std::min(round_size, part_flows_) : round.flows.size());
  if (streamed) {
    closed_ = closed_form_;
    closed_->clear();  // whatever a round that threw left
  }
  // One flow of the round, prepared (after the previous ones, in the round's order).
  const auto prepare = [&](const PlannedFlow& pf) {
    if (keep && pf.pipeline == kNoPipeline && !flow_slots_.empty()) {
      if (const FlowSlot& kept = flow_slot(pf.src.value, pf.dst.value, pf.rail); kept.src != FlowSlot::kFree) {
        push({kept.path, kept.path_size}, false, kept.timing);
        prepared.back().spread = kept.spread;
        return;
      }
    }
    const std::uint64_t label = hash_combine(run->spec.label, pf.channel);
    const auto nic = layout_.schedules().nic_route(pf.src, pf.dst, pf.rail);
    if (!nic) {
      bool unique = true;
      std::span<const LinkId> path = router_.route(pf.src, pf.dst, label, &unique);
      if (fold_ && !unique) fold_->label_dependent(path, run->role);
      if (pf.reduction_port.valid()) {
        const auto engine = layout_.reduction_engine(pf.dst, pf.reduction_port);
        if (!engine) throw InternalError("NVLS flow to a switch port without a reduction engine");
        const std::span<LinkId> owned = owned_path(path.size() + 1);
        std::copy(path.begin(), path.end(), owned.begin());
        owned.back() = *engine;
        path = owned;
      }
      add(path, !pf.reduction_port.valid());
      if (pf.pipeline != kNoPipeline) {
        if (PipelineLoad* load = join_pipeline(pf); load && load->weighted) load->sum.add(path, pf.copies);
      }
      return;
    }
    // Between servers: through the rail's NICs (schedule.h, NicRoute). Only the fabric between
    // the two NICs is chosen by the ECMP hash, salted with the connection: NCCL opens one
    // connection (queue pair) per pair of ranks and channel, which a PXN proxy shares among the
    // local ranks it sends for (schedule.h, ProxyRelay), so the salt is the GPU that owns the
    // connection (the proxy, else the sender) and the destination. Flows outside pipelines
    // reach here from their proxy (build_schedule relays them); a pipeline's member carries its
    // handover to the proxy inside its path.
    const NodeId owner = nic->send_proxy.valid() ? nic->send_proxy : pf.src;
    const std::uint64_t salt = hash_combine(hash_combine(label, owner.value), pf.dst.value);
    std::span<const LinkId> segments[4];
    PathTiming timings[4];  // with memo_ends, each segment's (measure): the path's is their sum, exactly
    std::size_t links = 0, parts = 0;
    // A connection outside pipelines in a large round of a collective alone (an all-to-all run
    // by CollectiveSimulator, once) is routed once: its hashed route between the NICs is not
    // cached (Router::Keep) but copied at once, before the next query. The executor's
    // collectives, which repeat every micro-batch, keep theirs.
    const topo::Router::Keep keep_hashed = closed_form_ && pf.pipeline == kNoPipeline && round_size > kKeptScratch
                                        ? topo::Router::Keep::kUnlessLabelled
                                        : topo::Router::Keep::kAlways;
    const auto segment = [&](NodeId a, NodeId b, std::uint64_t l, topo::Router::Keep k = topo::Router::Keep::kAlways) {
      bool unique = true;
      if (memo_ends && l == 0 && k == topo::Router::Keep::kAlways) {
        const EndRoute& memo = end_route(a, b, a != nic->recv_nic, measure);
        segments[parts] = {memo.path, memo.size};
        timings[parts] = memo.timing;
        links += segments[parts++].size();
        return;
      }
      segments[parts] = router_.route(a, b, l, &unique, k);
      if (!unique && k == topo::Router::Keep::kUnlessLabelled) {
        hashed_route_.assign(segments[parts].begin(), segments[parts].end());
        segments[parts] = hashed_route_;
      }
      if (memo_ends) timings[parts] = measure(segments[parts], nullptr);
      links += segments[parts++].size();
      // A folded run (adaptive routing only: network_fold.h) takes the fabric's part as the
      // spread, which is not routed here; the rest must be label-free.
      if (fold_ && a != nic->send_nic && !unique) fold_->label_dependent(segments[parts - 1], run->role);
    };
    // Adaptive routing (topology/adaptive_spread.h): between the NICs the flow spreads over
    // every equal-cost path as a fluid, and its latency there is the spread's mean (no hashed
    // path is routed); the rest of its path is as under ECMP.
    // A pipeline's member between servers of one leaf each takes its route in parts (loads).
    const std::optional<topo::AdaptiveSpreader::LeafPair> leaves =
        adaptive && share_leaf_middles_ && pf.pipeline != kNoPipeline ? spreader_.leaf_pair(nic->send_nic, nic->recv_nic) : std::nullopt;
    const topo::WeightedRoute* fabric = adaptive && !leaves ? &spreader_.spread(nic->send_nic, nic->recv_nic) : nullptr;
    if (nic->send_proxy.valid()) segment(pf.src, nic->send_proxy, 0);
    segment(owner, nic->send_nic, 0);
    if (!adaptive) segment(nic->send_nic, nic->recv_nic, salt, keep_hashed);
    segment(nic->recv_nic, pf.dst, 0);
    const std::span<LinkId> path = owned_path(links);
    auto out = path.begin();
    for (std::size_t k = 0; k < parts; ++k) out = std::copy(segments[k].begin(), segments[k].end(), out);
    PathTiming timing = measure(memo_ends ? std::span<const LinkId>() : std::span<const LinkId>(path), fabric);
    for (std::size_t k = 0; memo_ends && k < parts; ++k) {
      timing.latency += timings[k].latency;
      timing.worst = std::max(timing.worst, timings[k].worst);
    }
    if (leaves) {
      const PathTiming ends = leaf_timing(*leaves);
      timing.latency += ends.latency;
      timing.worst = std::max(timing.worst, ends.worst);
    }
    push(path, false, timing);
    PipelineLoad* load = pf.pipeline != kNoPipeline ? join_pipeline(pf) : nullptr;
    if (adaptive && load) {
      if (!load->weighted) {  // its first spread: the members so far join the sum
        load->weighted = true;
        const std::vector<std::uint32_t>& members = pipelines[pf.pipeline];
        for (std::size_t m = 0; m + 1 < members.size(); ++m) {
          load->sum.add(prepared[members[m]].path(), round.flows[members[m]].copies);
        }
      }
      // The member's route, segment by segment, in the order a route of its own lists them;
      // between servers of one leaf each, its middle once per pair of leaves (PipelineLoad).
      const auto add_fabric = [&] {
        if (!leaves) return add_to(*load, *fabric, pf.copies);
        const std::uint64_t key = std::uint64_t{leaves->from.value} << 32 | leaves->to.value;
        const auto [middle, first] = load->middles.try_emplace(key, 0);
        if (first) {
          spreader_.leaf_route(*leaves, leaf_route_);
          if (load->sum.scale() % leaf_route_.scale != 0) add_middles(*load);  // before the rescale
          return add_to(*load, leaf_route_, pf.copies);
        }
        // The middle's links are in the sum: the two end links are the new ones, in id order.
        const LinkId ends[2] = {std::min(leaves->first, leaves->last), std::max(leaves->first, leaves->last)};
        add_to(*load, std::span<const LinkId>(ends), pf.copies);
        if (middle->second > UINT32_MAX - pf.copies) topo::weight_overflow();
        middle->second += pf.copies;
      };
      for (std::size_t k = 0; k < parts; ++k) {
        if (k + 1 == parts) add_fabric();
        add_to(*load, segments[k], pf.copies);
      }
      spreader_.trim(kSpreadCacheLinks);
    } else if (adaptive) {
      topo::WeightedRoute& w = new_spread();
      topo::RoutePart route[5];
      std::size_t n = 0;
      for (std::size_t k = 0; k < parts; ++k) {
        route[n++] = {nullptr, 1, segments[k]};
        if (k + 2 == parts) route[n++] = {fabric, 1, {}};  // send NIC -> receive NIC, in order
      }
      topo::sum_routes(std::span<const topo::RoutePart>(route, n), w);
      if (fold_) fold_->collapse(w);  // held until the round starts: a few orbits, not every path
      // Copied into w: the spreader's cache is bounded (a spread per NIC pair of thousands of
      // servers, thousands of links each on a three-tier fat-tree).
      spreader_.trim(kSpreadCacheLinks);
      prepared.back().spread = &w;
      // Kept for the next flow of the same ends and rail (the header, flow_slots_).
      if (keep && cached_flow_links_ <= kCachedFlowLinks) keep_flow(pf.src.value, pf.dst.value, pf.rail, path, timing, w);
    } else if (fold_) {
      fold_->mark_broken();  // static ECMP: the hash of device ids is no automorphism's
      if (load) load->sum.add(path, pf.copies);
    } else if (pf.connections > 1) {
      // Static ECMP with the member's NCCL channels on connections of their own (schedule.h,
      // PlannedFlow::connections): the fabric part is d hashed paths, each 1/d of the bytes.
      // Built in place (a few links, so a linear merge): the same route as add_route gives.
      topo::WeightedRoute& w = new_spread();
      w.scale = pf.connections;
      const auto put = [&w](std::span<const LinkId> p, std::uint32_t weight) {
        for (LinkId l : p) {
          const auto it = std::find_if(w.links.begin(), w.links.end(), [l](const auto& e) { return e.first == l; });
          if (it == w.links.end()) w.links.emplace_back(l, weight);
          else it->second += weight;
        }
      };
      for (std::size_t k = 0; k < parts; ++k) {
        if (k + 2 != parts) {
          put(segments[k], pf.connections);
          continue;
        }
        for (std::uint32_t j = 0; j < pf.connections; ++j) {
          put(j == 0 ? segments[k] : router_.route(nic->send_nic, nic->recv_nic, hash_combine(salt, j)), 1);
        }
      }
      prepared.back().spread = &w;
    }
  };
  if (round.part_count > 0) {  // listed in parts (Round::parts): streamed, one part at a time
    if (!streamed) throw InternalError("a round listed in parts outside a streamed closed form");
    for (std::size_t k = 0; k < round.part_count; ++k) {
      load_part();
      round.parts(k, listed_part_);
      listing = listed_part_;
      part_begin = 0;
      for (std::size_t i = 0; i < listing.size(); ++i) {
        const PlannedFlow& pf = listing[i];
        if (pf.pipeline != kNoPipeline) throw InternalError("a round listed in parts with pipelines");
        // No route hint: these connections cross servers, whose routes are asked for by segment
        // (end_route, the NICs' pair), never by the pair of GPUs router_.prefetch would load.
        if (prepared.size() == part_flows_) load_part();
        prepare(pf);
      }
    }
  } else {
    const std::span<const PlannedFlow> flows = round.flows;
    for (std::size_t i = 0; i < flows.size(); ++i) {
      if (i + kRouteAhead < flows.size()) router_.prefetch(flows[i + kRouteAhead].src, flows[i + kRouteAhead].dst);
      if (streamed && prepared.size() == part_flows_) load_part();
      prepare(flows[i]);
    }
  }
  const bool nvls = round.latency == StepLatency::kNvls || (round.local_steps > 0 && round.local_latency == StepLatency::kNvls);
  const Duration base = nvls ? protocol.nvls_base_latency : protocol.launch_latency;
  const Duration launch = run->round == 0 ? base : Duration{0};
  if (streamed) {  // one delivery, when the round's last flow would be delivered
    load_part();
    run->outstanding = 1;
    run->round_start = sim_.now();
    run->round_tail = step * round.steps + local_step * round.local_steps + launch;
    sim_.schedule_after(closed_->end() + run->round_tail, sim::Phase::kCompletion, [this, run] { on_delivered(run); });
    closed_->clear();
    closed_ = nullptr;
    release_scratch();
    return;
  }
  if (prepared.empty()) {
    ++run->round;
    start_round(run);
    return;
  }
  // Pipelines: the flows of one pipeline id start as one multi-path flow whose members all
  // deliver `steps x a` after the last byte left. The other flows start with the extra latency
  // that makes their delivery fall at the same point; those with the same path and size are
  // identical under max-min sharing (each gets the same rate), so w of them start as one flow
  // of weight w (a pipeline of w equal members), which gives each exactly the rate and the
  // delivery time it has alone: an all-to-all across servers then starts one flow per
  // connection instead of one per GPU pair.
  const Duration tail = step * round.steps + local_step * round.local_steps + launch;
  std::vector<std::size_t>& singles = singles_;  // the first flow of each group of identical ones
  singles.clear();
  std::map<std::tuple<const LinkId*, std::size_t, std::int64_t>, std::size_t> single_index;
  std::vector<std::uint32_t>& weight = weight_;
  weight.clear();  // sized at the first flow outside a pipeline (a tree's round has none)
  // A round of a few flows (a point-to-point transfer's one or two) finds its identical flows
  // by a scan of the singles so far; a larger one through the index. The same first of each.
  constexpr std::size_t kScanFlows = 16;
  const auto same = [&](std::size_t a, std::size_t b) {
    return prepared[a].shared && prepared[a].links == prepared[b].links && prepared[a].size == prepared[b].size &&
           wire(round.flows[a].bytes) == wire(round.flows[b].bytes);
  };
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const Prepared& p = prepared[i];
    const PlannedFlow& f = round.flows[i];
    if (f.pipeline != kNoPipeline) continue;  // in pipelines already
    if (weight.empty()) weight.assign(prepared.size(), 0);
    count_wire(f);
    std::size_t first = i;
    if (p.shared && merge_identical_) {
      if (prepared.size() <= kScanFlows) {
        const auto it = std::find_if(singles.begin(), singles.end(), [&](std::size_t j) { return same(j, i); });
        if (it != singles.end()) first = *it;
      } else {
        first = single_index.try_emplace({p.links, std::size_t{p.size}, wire(f.bytes).value()}, i).first->second;
      }
    }
    if (first == i) singles.push_back(i);
    weight[first] += f.copies;
  }
  run->outstanding = singles.size() + pipelines.size();
  run->round_start = sim_.now();
  run->round_tail = tail;
  // The closed form (closed_round, above): every tail is `tail`.
  closed_ = nullptr;
  if (closed_round) {
    closed_ = closed_form_;
    closed_->clear();  // whatever a round that threw left
  }
  // The round's flows join their links at once (FlowNetwork::begin_batch): one block per link.
  if (!closed_) net_.begin_batch();
  for (const auto& [id, members] : pipelines) {
    std::vector<std::span<const LinkId>> paths;
    std::vector<std::uint32_t> copies;
    const Bytes bytes = wire(round.flows[members.front()].bytes);
    // A pipeline with a load (adaptive routing or a fold) starts from its sum; `spread` marks
    // the rest that start weighted: static-ECMP members over several connections.
    bool spread = false;
    for (std::size_t i : members) {
      if (wire(round.flows[i].bytes) != bytes) throw InternalError("pipeline members carry different sizes");
      paths.push_back(prepared[i].path());
      copies.push_back(round.flows[i].copies);
      spread = spread || prepared[i].spread != nullptr;
      run->outcome.wire_bytes += Bytes{bytes.value() * round.flows[i].copies};
    }
    // NVLS's fill from the members' own paths on the idle network; folded, these stay inside one
    // server, whose links the twin exchanges fix (twin_foldable), so it is the unfolded run's.
    const Duration fill = round.latency == StepLatency::kNvls ? nvls_fill_time(run->spec, paths, copies, bytes) : Duration{0};
    run->round_tail = std::max(run->round_tail, tail + fill);
    if (const auto load = loads.find(id); load != loads.end()) {
      if (load->second.weighted) {
        add_middles(load->second);
        // The sum's table is freed before the network takes the route, so the heap reuses it:
        // every pipeline's table is alive at once only until the round starts.
        const topo::WeightedRoute route = load->second.sum.finish();
        loads.erase(load);
        start_weighted(route, 1, bytes, tail + fill, run);
        continue;
      }
    } else if (spread) {  // static ECMP, a member over several connections
      std::vector<topo::RoutePart> parts;
      parts.reserve(members.size());
      for (std::size_t i : members) parts.push_back({prepared[i].spread, round.flows[i].copies, prepared[i].path()});
      start_weighted(topo::sum_routes(parts), 1, bytes, tail + fill, run);
      continue;
    }
    launch_pipeline(paths, copies, bytes, tail + fill, run);
  }
  for (std::size_t i : singles) {
    const Prepared& p = prepared[i];
    const std::span<const LinkId> path = p.path();
    const Bytes bytes = wire(round.flows[i].bytes);
    if (p.spread) {
      start_weighted(*p.spread, weight[i], bytes, tail, run);
      continue;
    }
    if (fold_) {
      start_weighted(topo::weighted_path(path), weight[i], bytes, tail, run);
      continue;
    }
    if (weight[i] == 1 || path.empty()) {
      launch_flow(path, bytes, tail - p.latency, run);
      continue;
    }
    if (!merge_identical_) {
      // One flow per copy (tests compare this with the weighted flow).
      run->outstanding += weight[i] - 1;
      for (std::uint32_t k = 0; k < weight[i]; ++k) launch_flow(path, bytes, tail - p.latency, run);
      continue;
    }
    const std::span<const LinkId> member[1] = {path};
    const std::uint32_t copies[1] = {weight[i]};
    launch_pipeline(member, copies, bytes, tail, run);
  }
  if (closed_) {  // one delivery, when the round's last flow would be delivered
    run->outstanding = 1;
    sim_.schedule_after(closed_->end(), sim::Phase::kCompletion, [this, run] { on_delivered(run); });
    closed_->clear();
    closed_ = nullptr;
  } else {
    net_.end_batch();
  }
  if (prepared.size() > kKeptScratch) release_scratch();  // a large round's scratch goes back to the heap
}

template <typename Measure>
const CollectiveRunner::EndRoute& CollectiveRunner::end_route(NodeId a, NodeId b, bool from_gpu, const Measure& measure) {
  EndRoute& memo = end_routes_[2 * static_cast<std::size_t>(from_gpu ? a.value : b.value) + (from_gpu ? 0 : 1)];
  const std::uint32_t other = from_gpu ? b.value : a.value;
  if (memo.other != other || memo.path == nullptr) {
    const std::span<const LinkId> path = router_.route(a, b, 0);
    if (path.size() > UINT32_MAX) throw InternalError("a path of 2^32 links");
    memo = {other, static_cast<std::uint32_t>(path.size()), path.data(), measure(path, nullptr)};
  }
  return memo;
}

void CollectiveRunner::release_scratch() {
  end_routes_ = {};
  listed_part_ = {};
  prepared_ = {};
  singles_ = {};
  weight_ = {};
  path_chunks_ = {};
  chunks_used_ = 0;
  spreads_ = decltype(spreads_){};
  spreads_used_ = 0;
}

CollectiveRunner::PathTiming CollectiveRunner::leaf_timing(const topo::AdaptiveSpreader::LeafPair& pair) {
  const topo::Cluster& cluster = layout_.cluster();
  // Bounded: a pair of leaves costs one pass over its middle to measure again.
  if (middle_timings_.size() >= kMiddleTimings) middle_timings_.clear();
  const std::uint64_t key = std::uint64_t{pair.from.value} << 32 | pair.to.value;
  auto [it, fresh] = middle_timings_.try_emplace(key);
  MiddleTiming& middle = it->second;
  if (fresh) {
    const topo::WeightedRoute& route = spreader_.spread(pair.from, pair.to);
    middle.scale = route.scale;
    middle.weighted_ps = topo::weighted_latency_ps(cluster, route);
    for (const auto& [l, w] : route.links) middle.worst = std::max(middle.worst, static_cast<int>(cluster.link(l).link_class));
  }
  // topo::mean_latency over the whole route: the end links carry weight K each.
  double sum = middle.weighted_ps;
  PathTiming t;
  t.worst = middle.worst;
  for (const LinkId end : {pair.first, pair.last}) {
    sum += static_cast<double>(middle.scale) * static_cast<double>(cluster.link(end).latency.count());
    t.worst = std::max(t.worst, static_cast<int>(cluster.link(end).link_class));
  }
  t.latency = Duration{std::llround(sum / middle.scale)};
  return t;
}

std::span<LinkId> CollectiveRunner::owned_path(std::size_t links) {
  constexpr std::size_t kFirstChunk = 64, kChunk = 16384;
  // The round's current chunk if it has room, else the next one kept from earlier rounds (all
  // empty when a round starts), else a new one, twice the last up to kChunk links.
  while (chunks_used_ == 0 || path_chunks_[chunks_used_ - 1].capacity() - path_chunks_[chunks_used_ - 1].size() < links) {
    if (chunks_used_ == path_chunks_.size()) {
      const std::size_t grown = path_chunks_.empty() ? kFirstChunk : std::min(kChunk, 2 * path_chunks_.back().capacity());
      path_chunks_.emplace_back().reserve(std::max(grown, links));
    }
    ++chunks_used_;
  }
  std::vector<LinkId>& chunk = path_chunks_[chunks_used_ - 1];
  chunk.resize(chunk.size() + links);  // within its capacity: the chunk's buffer stays put
  return {chunk.data() + chunk.size() - links, links};
}

CollectiveRunner::FlowSlot& CollectiveRunner::flow_slot(std::uint32_t src, std::uint32_t dst, std::int32_t rail) {
  const std::size_t mask = flow_slots_.size() - 1;
  for (std::size_t i = hash_combine(std::uint64_t{src} << 32 | dst, static_cast<std::uint32_t>(rail)) & mask;;
       i = (i + 1) & mask) {
    FlowSlot& slot = flow_slots_[i];
    if (slot.src == FlowSlot::kFree || (slot.src == src && slot.dst == dst && slot.rail == rail)) return slot;
  }
}

void CollectiveRunner::keep_flow(std::uint32_t src, std::uint32_t dst, std::int32_t rail,
                                 std::span<const LinkId> path, PathTiming timing, const topo::WeightedRoute& spread) {
  if (2 * (kept_flows_.size() + 1) > flow_slots_.size()) {  // at most half full: doubled, refilled
    std::vector<FlowSlot> old(std::max<std::size_t>(64, 2 * flow_slots_.size()));
    old.swap(flow_slots_);
    for (const FlowSlot& s : old) {
      if (s.src != FlowSlot::kFree) flow_slot(s.src, s.dst, s.rail) = s;
    }
  }
  FlowSlot& slot = flow_slot(src, dst, rail);
  if (slot.src != FlowSlot::kFree) return;  // kept already
  CachedFlow& kept = kept_flows_.emplace_back(CachedFlow{{path.begin(), path.end()}, spread});
  slot = {src, dst, rail, static_cast<std::uint32_t>(kept.path.size()), kept.path.data(), &kept.spread, timing};
  cached_flow_links_ += kept.path.size() + kept.spread.links.size();
}

topo::WeightedRoute& CollectiveRunner::new_spread() {
  if (spreads_used_ == spreads_.size()) spreads_.push_back(std::make_unique<topo::WeightedRoute>());
  topo::WeightedRoute& w = *spreads_[spreads_used_++];
  w.links.clear();
  w.scale = 1;
  w.exact = true;
  return w;
}

void CollectiveRunner::start_weighted(const topo::WeightedRoute& route, std::uint32_t times, Bytes bytes, Duration tail,
                                      const std::shared_ptr<Run>& run) {
  std::vector<net::WeightedLink>& links = weighted_links_;  // the network copies them
  links.clear();
  std::uint32_t scale = route.scale;
  if (fold_ && run->role == FoldRole::kOwnLinks) {
    for (const auto& [link, weight] : route.links) links.push_back({fold_->own(link), weight * times});
  } else if (fold_) {
    for (const auto& [link, weight] : route.links) links.push_back({fold_->map(link), weight * times});
    if (run->role == FoldRole::kInvariant) {  // 1/N of the load (network_fold.h)
      const std::uint64_t n = std::uint64_t{scale} * fold_->servers();
      if (n > UINT32_MAX) fold_->mark_broken();
      else scale = static_cast<std::uint32_t>(n);
    }
  } else {
    for (const auto& [link, weight] : route.links) links.push_back({link, weight * times});
  }
  if (closed_) closed_->add_weighted(links, scale, bytes, tail);
  else net_.start_weighted(links, scale, bytes, tail, [this, run] { on_delivered(run); });
}

void CollectiveRunner::launch_flow(std::span<const LinkId> path, Bytes bytes, Duration extra_latency,
                                   const std::shared_ptr<Run>& run) {
  if (closed_) closed_->add_flow(path, bytes, extra_latency);
  else net_.start_flow(path, bytes, extra_latency, [this, run] { on_delivered(run); });
}

void CollectiveRunner::launch_pipeline(std::span<const std::span<const LinkId>> members,
                                       std::span<const std::uint32_t> copies, Bytes bytes, Duration tail,
                                       const std::shared_ptr<Run>& run) {
  if (closed_) closed_->add_pipeline(members, copies, bytes, tail);
  else net_.start_pipeline(members, copies, bytes, tail, [this, run] { on_delivered(run); });
}

Duration CollectiveRunner::nvls_fill_time(const CollectiveSpec& spec, std::span<const std::span<const LinkId>> members,
                                          std::span<const std::uint32_t> copies, Bytes member_bytes) const {
  // The pipeline's rate per member on the idle network; in bytes of S per second, that rate x S /
  // member_bytes.
  const double member_rate = net_.idle_rate(members, copies).value();
  if (!(member_rate > 0) || member_bytes.value() <= 0) return Duration{0};
  const ProtocolParams& protocol = layout_.protocol();
  const Bytes fill = nvls_fill_bytes(spec.size, protocol.nvls_channels, static_cast<int>(spec.ranks.size()),
                                     protocol.nvls_max_chunk);
  const double fill_per_member = static_cast<double>(fill.value()) * static_cast<double>(member_bytes.value()) /
                                 static_cast<double>(spec.size.value());
  return duration_from_seconds(fill_per_member / member_rate);
}

void CollectiveRunner::on_delivered(const std::shared_ptr<Run>& run) {
  if (--run->outstanding > 0) return;
  run->outcome.drain += std::max(Duration{0}, sim_.now() - run->round_start - run->round_tail);
  ++run->round;
  start_round(run);
}

}  // namespace cs::coll
