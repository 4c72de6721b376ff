#include "sim/collectives/collective_simulator.h"

#include <algorithm>

#include "core/checked.h"
#include "core/errors.h"
#include "sim/collectives/collective_runner.h"
#include "sim/engine/simulator.h"

namespace cs::coll {

using topo::LinkId;

CollectiveSimulator::CollectiveSimulator(const Machine& machine, Folding folding)
    : layout_(machine), router_(machine.cluster), folding_(folding) {}

const topo::ServerOrbits* CollectiveSimulator::fold_for(const CollectiveSpec& spec, CollectiveAlgorithm algorithm) {
  const topo::Cluster& cluster = layout_.cluster();
  if (folding_ != Folding::kSymmetric || algorithm != CollectiveAlgorithm::kDirect || !all_pairs_op(spec.op) ||
      cluster.routing() != topo::Routing::kAdaptive) {
    return nullptr;
  }
  if (!latency_per_tier_) latency_per_tier_ = fabric_latency_per_tier(cluster);
  if (!*latency_per_tier_) return nullptr;
  if (!symmetry_) symmetry_.emplace(cluster);
  if (fold_ranks_ != spec.ranks) {
    fold_ = symmetry_->orbits(spec.ranks);
    fold_ranks_ = spec.ranks;
  }
  return fold_ ? &*fold_ : nullptr;
}

std::uint32_t CollectiveSimulator::fold_servers(const CollectiveSpec& spec, CollectiveAlgorithm algorithm) {
  const topo::ServerOrbits* orbits = fold_for(spec, algorithm);
  return orbits ? orbits->servers() : 0;
}

std::optional<CollectiveResult> CollectiveSimulator::run_fixed(const CollectiveSpec& spec,
                                                               CollectiveAlgorithm algorithm, Protocol protocol,
                                                               std::string* why_not,
                                                               std::vector<LinkActivity>* activity) {
  if (simple_protocol_only(algorithm) && protocol != Protocol::kSimple) {
    if (why_not) *why_not = std::string(to_string(algorithm)) + " runs the Simple protocol only";
    return std::nullopt;
  }
  // Every byte count below (a flow's, a link's, the wire total) is at most S x ranks x a small
  // factor: refuse what could overflow 64 bits (docs/cli.md, "Limits") rather than sum it.
  if (saturating_product({spec.size.value(), static_cast<std::int64_t>(spec.ranks.size()), 8}) > (std::int64_t{1} << 62)) {
    throw RangeError("a collective of " + format_bytes(spec.size) + " over " + std::to_string(spec.ranks.size()) +
                     " ranks moves more bytes than clustersim counts (2^62)");
  }
  if (const topo::ServerOrbits* orbits = fold_for(spec, algorithm)) {
    bool broken = false;
    auto folded = simulate(spec, algorithm, protocol, why_not, activity, orbits, &broken);
    if (!broken) return folded;
  }
  return simulate(spec, algorithm, protocol, why_not, activity, nullptr, nullptr);
}

std::optional<CollectiveResult> CollectiveSimulator::simulate(const CollectiveSpec& spec, CollectiveAlgorithm algorithm,
                                                              Protocol protocol, std::string* why_not,
                                                              std::vector<LinkActivity>* activity,
                                                              const topo::ServerOrbits* orbits, bool* broken) {
  auto schedule = build_schedule(layout_.schedules(), spec, algorithm, why_not, orbits ? orbits->representative() : -1);
  if (!schedule) return std::nullopt;
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
  CollectiveOutcome outcome;
  bool done = false;
  runner.start(spec, std::move(*schedule), algorithm, protocol, [&](const CollectiveOutcome& o) {
    outcome = o;
    done = true;
  });
  sim.run();
  if (!done) throw InternalError("collective did not complete");
  if (fold && fold->broken()) {
    *broken = true;
    return std::nullopt;
  }
  CollectiveResult r;
  r.time = outcome.end - outcome.start;
  r.algorithm = algorithm;
  r.protocol = protocol;
  r.flows = outcome.flows;
  r.wire_bytes = outcome.wire_bytes;
  r.events = sim.events_executed();
  if (fold) {
    // Every server's flows as many as the representative's (flow_count counts its copies).
    const std::uint32_t n = fold->servers();
    r.flows *= n;
    r.wire_bytes = Bytes{saturating_product({r.wire_bytes.value(), static_cast<std::int64_t>(n)})};
    r.folded_servers = n;
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
      const auto members = fold->orbits().members(l);
      const double share = static_cast<double>(fold->servers()) / static_cast<double>(members.size());
      const auto scaled = [share](Bytes b) { return Bytes{static_cast<std::int64_t>(static_cast<double>(b.value()) * share + 0.5)}; };
      std::vector<net::BusyInterval> intervals = net.busy_intervals(l);
      for (auto& iv : intervals) iv.bytes = scaled(iv.bytes);
      for (const LinkId m : members) activity->push_back({m, scaled(st.bytes), st.busy, intervals});
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
  std::optional<CollectiveResult> best;
  std::string why;
  for (CollectiveAlgorithm a : algorithms) {
    for (Protocol p : protocols) {
      if (simple_protocol_only(a) && p != Protocol::kSimple) continue;
      std::string reason;
      auto r = run_fixed(spec, a, p, &reason);
      if (!r) {
        if (why.empty()) why = reason;
        break;  // the other protocol does not apply either
      }
      if (!best || r->time < best->time) best = r;
    }
  }
  if (!best) throw ConfigError("", spec_origin, why.empty() ? "no algorithm applies" : why);
  if (activity) run_fixed(spec, best->algorithm, best->protocol, nullptr, activity);
  return *best;
}

}  // namespace cs::coll
