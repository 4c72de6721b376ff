#include "sim/collectives/collective_simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/checked.h"
#include "core/errors.h"
#include "sim/collectives/collective_runner.h"
#include "sim/engine/simulator.h"

namespace cs::coll {

using topo::LinkId;

CollectiveSimulator::CollectiveSimulator(const Machine& machine, Folding folding, Rounds rounds)
    : layout_(machine), router_(machine.cluster), folding_(folding), rounds_(rounds) {
  router_.set_server_twins_source([this] { return layout_.server_twins(); });
}

const topo::ServerOrbits* CollectiveSimulator::fold_for(const CollectiveSpec& spec, CollectiveAlgorithm algorithm) {
  const topo::Cluster& cluster = layout_.cluster();
  if (folding_ != Folding::kSymmetric) return nullptr;
  if (!fabric_folds_) fabric_folds_ = fabric_folds(cluster);
  if (!*fabric_folds_) return nullptr;
  if (!symmetry_) symmetry_.emplace(cluster);
  if (algorithm == CollectiveAlgorithm::kDirect && all_pairs_op(spec.op)) {
    if (fold_ranks_ != spec.ranks) {
      fold_ = symmetry_->orbits(spec.ranks);
      fold_ranks_ = spec.ranks;
    }
    if (fold_) return &*fold_;
  }
  // Any other schedule (or servers no group permutes): the switch exchanges alone, which fold
  // links, not servers (network_fold.h); simulate() checks the schedule's flows first.
  if (!twin_fold_) twin_fold_ = symmetry_->twin_orbits();
  return *twin_fold_ ? &**twin_fold_ : nullptr;
}

std::uint32_t CollectiveSimulator::fold_servers(const CollectiveSpec& spec, CollectiveAlgorithm algorithm) {
  const topo::ServerOrbits* orbits = fold_for(spec, algorithm);
  return orbits && !orbits->twins_only() ? orbits->servers() : 0;
}

namespace {

// Every byte count of a run (a flow's, a link's, the wire total) is at most S x ranks x a small
// factor: refuse what could overflow 64 bits (docs/cli.md, "Limits") rather than sum it.
void check_byte_range(const CollectiveSpec& spec) {
  if (saturating_product({spec.size.value(), static_cast<std::int64_t>(spec.ranks.size()), 8}) > (std::int64_t{1} << 62)) {
    throw RangeError("a collective of " + format_bytes(spec.size) + " over " + std::to_string(spec.ranks.size()) +
                     " ranks moves more bytes than clustersim counts (2^62)");
  }
}

}  // namespace

// Why this bounds the simulated time from below (CollectiveRunner::start_round): the rounds run
// one after another, each starting when the last flow of the one before was delivered. A round
// that starts flows starts all of them at once and delivers each `tail` after its last byte
// left, tail >= steps x step, where step >= own + path latency for every flow of the round, own
// being the step latency (LL's under LL) of the path's worst link class (the largest in
// hw::LinkClass's order) or NVLS's; so tail >= steps x the largest, over the round's flows, of
// the smallest own each could have: a flow between servers crosses a link between servers, so
// its worst class is at least the smallest class of those links. And no cut of the network moves bytes faster than the summed capacity of
// its links: every byte of a flow from src != dst leaves src over one of src's out-links and
// reaches dst over one of dst's in-links, and a flow between two servers leaves its server
// over a link out of it and enters the other over a link into it (a weighted or spread flow
// puts all its rate across each such cut; a member of copies c moves c times its bytes). The
// round's last byte arrives no earlier than the largest (bytes across a cut) / (the cut's
// capacity) over those four cuts of every device and server, LL's bytes being its wire bytes.
// The bound is the sum over rounds of both, less a relative 1e-6 and a picosecond per round
// for rounding.
CollectiveSimulator::FloorParts CollectiveSimulator::floor_parts(const Schedule& schedule, Protocol protocol) {
  const topo::Cluster& cluster = layout_.cluster();
  const ProtocolParams& params = layout_.protocol();
  const bool ll = protocol == Protocol::kLowLatency;
  const std::size_t devices = cluster.node_count();
  if (cut_capacity_.empty()) {
    // Cuts: [0, devices) out of each device, [devices, 2 devices) into it; then out of and into
    // each server.
    std::size_t servers = 0;
    for (std::uint32_t v = 0; v < devices; ++v) {
      servers = std::max<std::size_t>(servers, static_cast<std::size_t>(cluster.node(topo::NodeId{v}).server + 1));
    }
    cut_capacity_.assign(2 * devices + 2 * servers, 0.0);
    cross_class_ = hw::kLinkClassCount;
    cut_bytes_.assign(cut_capacity_.size(), 0.0);
    const std::vector<net::LinkCapacity> caps = layout_.capacities();
    for (std::uint32_t l = 0; l < cluster.link_count(); ++l) {
      const topo::LinkInfo& link = cluster.link(LinkId{l});
      const double c = caps[l].bandwidth.value();
      cut_capacity_[link.src.value] += c;
      cut_capacity_[devices + link.dst.value] += c;
      const int a = cluster.node(link.src).server, b = cluster.node(link.dst).server;
      if (a == b) continue;
      cross_class_ = std::min(cross_class_, static_cast<int>(link.link_class));
      if (a >= 0) cut_capacity_[2 * devices + 2 * static_cast<std::size_t>(a)] += c;
      if (b >= 0) cut_capacity_[2 * devices + 2 * static_cast<std::size_t>(b) + 1] += c;
    }
  }
  // The smallest step latency of a worst class of at least `from`.
  const auto smallest_step = [&](int from) {
    double step = std::numeric_limits<double>::infinity();
    for (int c = from; c < hw::kLinkClassCount; ++c) {
      const LinkClassProtocol& p = params.of(static_cast<hw::LinkClass>(c));
      step = std::min(step, to_seconds(ll ? p.ll_step_latency : p.step_latency));
    }
    return step;
  };
  const double any_step = smallest_step(0);
  const double cross_step = cross_class_ < hw::kLinkClassCount ? smallest_step(cross_class_) : any_step;
  FloorParts parts;
  parts.rounds = schedule.rounds.size();
  for (const Round& round : schedule.rounds) {
    if (round.flows.empty()) continue;  // the runner moves on at once
    const bool nvls = round.latency == StepLatency::kNvls;
    double own = nvls ? to_seconds(params.nvls_step_latency) : any_step;
    cuts_.clear();
    const auto cross = [&](std::size_t cut, double bytes) {
      if (cut_bytes_[cut] == 0) cuts_.push_back(cut);
      cut_bytes_[cut] += bytes;
    };
    for (const PlannedFlow& f : round.flows) {
      if (f.src == f.dst || f.bytes.value() == 0) continue;
      const double data = static_cast<double>(f.bytes.value());
      parts.scales = parts.scales && std::ceil(data * params.ll_wire_factor) == data * params.ll_wire_factor;
      const double bytes = (ll ? std::ceil(data * params.ll_wire_factor) : data) * f.copies;
      cross(f.src.value, bytes);
      cross(devices + f.dst.value, bytes);
      const int a = cluster.node(f.src).server, b = cluster.node(f.dst).server;
      if (a != b && !nvls) own = std::max(own, cross_step);
      if (a >= 0 && b >= 0 && a != b) {
        cross(2 * devices + 2 * static_cast<std::size_t>(a), bytes);
        cross(2 * devices + 2 * static_cast<std::size_t>(b) + 1, bytes);
      }
    }
    double drain = 0;
    for (std::size_t cut : cuts_) {
      if (cut_capacity_[cut] > 0) drain = std::max(drain, cut_bytes_[cut] / cut_capacity_[cut]);
      cut_bytes_[cut] = 0;
    }
    parts.drain += drain;
    parts.latency += std::max(0, round.steps) * own;
  }
  return parts;
}

Duration CollectiveSimulator::floor_of(const Schedule& schedule, Protocol protocol) {
  return floor_from(floor_parts(schedule, protocol));
}

Duration CollectiveSimulator::floor_from(const FloorParts& parts) {
  const double rounds = static_cast<double>(parts.rounds);
  return duration_from_seconds(std::max(0.0, (parts.drain + parts.latency) * (1 - 1e-6) - rounds * 1e-12));
}

// Why this bounds the other protocol's time from below: both runs start the same flows on the
// same paths in the same rounds (the schedule and the routes do not depend on the protocol;
// CollectiveRunner::start_round), each round's flows all at its start, on a network holding
// nothing else; only the sizes differ, LL's being the wire factor f times Simple's (exactly,
// when every f x size is integral), and the tails. Max-min rates depend on which flows are
// active, not on their sizes, so with every size scaled by f the same flows finish in the same
// order at f times the delays from the round's start: each round's bandwidth phase stretches by
// f exactly. The measured drain (CollectiveOutcome::drain) is at most the measured rounds'
// bandwidth phases, so f (or 1/f) x it bounds the other protocol's, and the latencies are
// floor_parts' for the other protocol. Less a relative 1e-6 and 4 picoseconds per event and
// round for the runs' rounding to the picosecond (each completion rounds up, in either run).
Duration CollectiveSimulator::implied_floor(const FloorParts& parts, Duration floor, const CollectiveResult& measured,
                                            Protocol other) const {
  if (measured.protocol == other || !parts.scales) return floor;
  const double f = layout_.protocol().ll_wire_factor;
  const double ratio = other == Protocol::kLowLatency ? f : 1 / f;
  const double slack = 4e-12 * (static_cast<double>(measured.events) + static_cast<double>(parts.rounds)) * std::max(1.0, ratio);
  const double scaled = (to_seconds(measured.drain) * ratio + parts.latency) * (1 - 1e-6) - slack;
  return std::max(floor, duration_from_seconds(std::max(0.0, scaled)));
}

std::optional<Duration> CollectiveSimulator::protocol_floor(const CollectiveSpec& spec, CollectiveAlgorithm algorithm,
                                                            const CollectiveResult& measured, Protocol other) {
  if (simple_protocol_only(algorithm) && other != Protocol::kSimple) return std::nullopt;
  check_byte_range(spec);
  const auto schedule = build_schedule(layout_.schedules(), spec, algorithm, nullptr, -1);
  if (!schedule) return std::nullopt;
  const FloorParts parts = floor_parts(*schedule, other);
  return implied_floor(parts, floor_from(parts), measured, other);
}

std::optional<Duration> CollectiveSimulator::time_floor(const CollectiveSpec& spec, CollectiveAlgorithm algorithm,
                                                        Protocol protocol) {
  if (simple_protocol_only(algorithm) && protocol != Protocol::kSimple) return std::nullopt;
  check_byte_range(spec);
  const auto schedule = build_schedule(layout_.schedules(), spec, algorithm, nullptr, -1);
  if (!schedule) return std::nullopt;
  return floor_of(*schedule, protocol);
}

std::optional<CollectiveResult> CollectiveSimulator::run_fixed(const CollectiveSpec& spec,
                                                               CollectiveAlgorithm algorithm, Protocol protocol,
                                                               std::string* why_not,
                                                               std::vector<LinkActivity>* activity) {
  if (simple_protocol_only(algorithm) && protocol != Protocol::kSimple) {
    if (why_not) *why_not = std::string(to_string(algorithm)) + " runs the Simple protocol only";
    return std::nullopt;
  }
  check_byte_range(spec);
  if (const topo::ServerOrbits* orbits = fold_for(spec, algorithm)) {
    bool broken = false;
    auto folded = simulate(spec, algorithm, protocol, why_not, activity, orbits, &broken);
    if (!broken) return folded;
  }
  return simulate(spec, algorithm, protocol, why_not, activity, nullptr, nullptr);
}

bool CollectiveSimulator::prepares_in_parts(const CollectiveSpec& spec, CollectiveAlgorithm algorithm, bool activity) const {
  const std::size_t ranks = spec.ranks.size();
  return rounds_ == Rounds::kClosedForm && !activity && algorithm == CollectiveAlgorithm::kDirect &&
         layout_.cluster().routing() != topo::Routing::kAdaptive && ranks > 1 &&
         ranks * (ranks - 1) > CollectiveRunner::kStreamedRound && lists_by_server(layout_.cluster(), spec);
}

std::optional<CollectiveResult> CollectiveSimulator::simulate(const CollectiveSpec& spec, CollectiveAlgorithm algorithm,
                                                              Protocol protocol, std::string* why_not,
                                                              std::vector<LinkActivity>* activity,
                                                              const topo::ServerOrbits* orbits, bool* broken) {
  // An all-pairs round of many ranks taking the closed form under static ECMP, unfolded, is
  // listed in parts, one sending server's at a time, so that the runner never holds it whole.
  const bool in_parts = !orbits && prepares_in_parts(spec, algorithm, activity != nullptr);
  std::optional<Schedule> schedule = in_parts ? direct_in_parts(layout_.schedules(), spec) : std::nullopt;
  if (!schedule) schedule = build_schedule(layout_.schedules(), spec, algorithm, why_not, orbits ? orbits->representative() : -1);
  if (!schedule) return std::nullopt;
  if (orbits && orbits->twins_only() && !twin_foldable(layout_.schedules(), *schedule)) orbits = nullptr;
  sim::Simulator sim;
  // One network for every run, reset to new (O(links the last run used)), rather than one of
  // all the machine's links per run: the tuner runs thousands of small candidates on a
  // 100,000-GPU machine.
  if (net_) {
    net_->reset(sim);
  } else {
    net_.emplace(sim, layout_.capacities());
  }
  net::FlowNetwork& net = *net_;
  if (activity) net.enable_busy_intervals();
  std::optional<NetworkFold> fold;
  if (orbits) fold.emplace(layout_.cluster(), *orbits, net, fold_scratch_);
  CollectiveRunner runner(sim, net, router_, layout_, true, fold ? &*fold : nullptr);
  // Alone on the idle network: rounds of equal flows in closed form, unless every link's
  // activity is asked for (the closed form gives the time, not the links' busy intervals).
  if (rounds_ == Rounds::kClosedForm && !activity) {
    if (!closed_form_) closed_form_.emplace(net);
    runner.solve_alone(&*closed_form_);
    if (round_part_) runner.set_round_part(*round_part_);
  }
  // Counted here, where it is reported: a runner's start does not walk the schedule for it (the
  // executor starts every transfer's shared schedule again and again, and reports no count).
  const std::size_t flows = schedule->flow_count();
  CollectiveOutcome outcome;
  bool done = false;
  runner.start(spec, std::make_shared<const Schedule>(std::move(*schedule)), algorithm, protocol, [&](const CollectiveOutcome& o) {
    outcome = o;
    done = true;
  });
  sim.run();
  if (fold && fold->broken()) {  // stopped at the first flow that broke it (NetworkFold::mark_broken)
    *broken = true;
    return std::nullopt;
  }
  if (!done) throw InternalError("collective did not complete");
  CollectiveResult r;
  r.time = outcome.end - outcome.start;
  r.algorithm = algorithm;
  r.protocol = protocol;
  r.flows = flows;
  r.wire_bytes = outcome.wire_bytes;
  r.events = sim.events_executed();
  r.drain = outcome.drain;
  if (fold) {
    // Every server's flows as many as the representative's (flow_count counts its copies).
    const std::uint32_t n = fold->servers();
    r.flows *= n;
    r.wire_bytes = Bytes{saturating_product({r.wire_bytes.value(), static_cast<std::int64_t>(n)})};
    r.folded_servers = fold->orbits().twins_only() ? 0 : n;
    r.twin_folded = fold->orbits().twins_only();
  }
  if (activity) {
    activity->clear();
    for (LinkId l : net.touched_links()) {  // a link no flow touched carried nothing
      const auto st = net.link_stats(l);
      if (st.bytes.value() == 0) continue;
      if (!fold) {
        activity->push_back({l, st.bytes, st.busy, net.busy_intervals(l)});
        continue;
      }
      // The orbit's links share what its representative carried in the quotient, N / |L| each.
      const NetworkFold::Unfolded members = fold->unfold(l, st.bytes);
      std::vector<net::BusyInterval> intervals = net.busy_intervals(l);
      for (auto& iv : intervals) iv.bytes = members.share_of(iv.bytes);
      for (const LinkId m : members.links) activity->push_back({m, members.bytes, st.busy, intervals});
    }
    if (fold) std::sort(activity->begin(), activity->end(), [](const auto& a, const auto& b) { return a.link.value < b.link.value; });
  }
  return r;
}

CollectiveResult CollectiveSimulator::run(const CollectiveSpec& spec, const std::string& spec_origin,
                                          std::vector<LinkActivity>* activity) {
  std::vector<CollectiveAlgorithm> algorithms;
  if (spec.algorithm == CollectiveAlgorithm::kAuto) {
    algorithms = auto_candidates(layout_.schedules(), spec);
  } else {
    algorithms = {spec.algorithm};
  }
  // NCCL's tuner picks the protocol of collectives; point-to-point operations (send/recv, and
  // all_to_all, which NCCL runs as grouped sends and receives) take LL when a peer's bytes per
  // channel are at most NCCL_P2P_LL_THRESHOLD (16 KiB, src/enqueue.cc), else Simple. The
  // direct schedules send each peer's bytes on one channel.
  std::vector<Protocol> protocols{Protocol::kSimple, Protocol::kLowLatency};
  if (spec.op == CollectiveOp::kAllToAll || spec.op == CollectiveOp::kSendRecv) {
    constexpr std::int64_t kP2pLLThreshold = 16384;
    const auto peers = static_cast<std::int64_t>(spec.op == CollectiveOp::kAllToAll ? std::max<std::size_t>(spec.ranks.size(), 1) : 1);
    const std::int64_t per_peer = (spec.size.value() + peers - 1) / peers;
    protocols = {per_peer <= kP2pLLThreshold ? Protocol::kLowLatency : Protocol::kSimple};
  }
  // Candidates: with more than one (algorithm, protocol), each is bounded below first
  // (time_floor) and they run in increasing order of bound; one whose bound exceeds the best
  // time so far cannot win and is skipped (the ring's 2(N-1) steps at 131,072 GPUs, against a
  // tree's milliseconds). The choice is the one running them all in NCCL's order gives: the
  // fastest, the earlier candidate on a tie.
  struct Candidate {
    CollectiveAlgorithm algorithm;
    Protocol protocol;
    Duration floor{0};
    FloorParts parts{};
  };
  std::vector<Candidate> candidates;
  std::string why;
  for (CollectiveAlgorithm a : algorithms) {
    for (Protocol p : protocols) {
      if (!simple_protocol_only(a) || p == Protocol::kSimple) candidates.push_back({a, p});
    }
  }
  if (candidates.size() > 1) {
    check_byte_range(spec);  // before building schedules of what run_fixed would refuse
    std::vector<Candidate> bounded;
    for (CollectiveAlgorithm a : algorithms) {
      std::string reason;
      const auto schedule = build_schedule(layout_.schedules(), spec, a, &reason, -1);
      if (!schedule) {
        if (why.empty()) why = reason;
        continue;
      }
      for (const Candidate& c : candidates) {
        if (c.algorithm != a) continue;
        const FloorParts parts = floor_parts(*schedule, c.protocol);
        bounded.push_back({a, c.protocol, floor_from(parts), parts});
      }
    }
    std::stable_sort(bounded.begin(), bounded.end(), [](const Candidate& x, const Candidate& y) { return x.floor < y.floor; });
    candidates = std::move(bounded);
  }
  std::optional<CollectiveResult> best;
  std::uint32_t simulated = 0;
  std::size_t best_rank = 0;  // index of best's candidate in NCCL's order (algorithm, then protocol)
  const auto rank_of = [&](const Candidate& c) {
    const auto a = static_cast<std::size_t>(std::find(algorithms.begin(), algorithms.end(), c.algorithm) - algorithms.begin());
    const auto p = static_cast<std::size_t>(std::find(protocols.begin(), protocols.end(), c.protocol) - protocols.begin());
    return a * protocols.size() + p;
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    const std::size_t rank = rank_of(c);
    if (best && (c.floor > best->time || (c.floor == best->time && rank > best_rank))) continue;
    std::string reason;
    auto r = run_fixed(spec, c.algorithm, c.protocol, &reason);
    if (!r) {
      if (why.empty()) why = reason;
      continue;
    }
    ++simulated;
    // The same algorithm under the other protocol is this run stretched (protocol_floor): at
    // 131,072 GPUs a 1 GiB tree's LL run is bounded above the Simple run's time and skipped.
    for (std::size_t j = i + 1; j < candidates.size(); ++j) {
      Candidate& o = candidates[j];
      if (o.algorithm == c.algorithm) o.floor = implied_floor(o.parts, o.floor, *r, o.protocol);
    }
    if (!best || r->time < best->time || (r->time == best->time && rank < best_rank)) {
      best = r;
      best_rank = rank;
    }
  }
  if (!best) throw ConfigError("", spec_origin, why.empty() ? "no algorithm applies" : why);
  if (activity) run_fixed(spec, best->algorithm, best->protocol, nullptr, activity);
  best->simulated_candidates = simulated;
  best->candidates = static_cast<std::uint32_t>(candidates.size());
  return *best;
}

}  // namespace cs::coll
