// One collective alone on an idle machine: its time, the algorithm and protocol that ran, and
// optionally what each link carried. `auto` simulates every candidate of NCCL's set and keeps the
// fastest, as NCCL's tuner picks per size (sim/collectives/algorithm_tuner.h uses this to choose
// for the executor).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_fold.h"
#include "sim/collectives/network_layout.h"
#include "sim/network/equal_flows_round.h"
#include "sim/network/flow_network.h"
#include "topology/router.h"
#include "topology/server_orbits.h"

namespace cs::coll {

// What a single collective on an idle cluster did.
struct CollectiveResult {
  Duration time{0};
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  std::size_t flows = 0;
  Bytes wire_bytes{0};
  std::uint64_t events = 0;
  // The part of `time` the bytes on the wire set (CollectiveOutcome::drain).
  Duration drain{0};
  // The (algorithm, protocol) candidates run() simulated to choose this one (the others it
  // bounded out); 1 from run_fixed.
  std::uint32_t simulated_candidates = 1;
  // The (algorithm, protocol) candidates run() chose among: those with a schedule for this
  // spec (simulated or bounded out); 1 from run_fixed.
  std::uint32_t candidates = 1;
  // Folded (sim/collectives/network_fold.h): the servers whose flows one server's stood for; 0
  // when every flow ran. flows and wire_bytes count them all either way.
  std::uint32_t folded_servers = 0;
  // Every flow ran on the quotient of the twin switches' links (network_fold.h): a link of an
  // orbit stood for all of them. The numbers are those of the full network either way.
  bool twin_folded = false;
};

// Per-link activity of one isolated run, for traces and link reports.
struct LinkActivity {
  topo::LinkId link;
  Bytes bytes{0};
  Duration busy{0};
  std::vector<net::BusyInterval> intervals;
};

class CollectiveSimulator {
 public:
  // kSymmetric, on an adaptively routed fabric: a direct all-pairs collective over servers that
  // a group of the cluster's automorphisms permutes runs folded onto one server's flows, and any
  // other collective between devices of servers runs every flow on the quotient of the twin
  // switches (sim/collectives/network_fold.h: the same result either way); kNone runs every flow
  // on every link (tests compare).
  enum class Folding : std::uint8_t { kSymmetric, kNone };
  // kClosedForm: a round whose flows all move the same bytes with one tail (an all-to-all, a
  // ring's or a tree's channels; not NVLS's) ends when sim/network/equal_flows_round.h's closed
  // form of the flow network says, with no flow simulated (CollectiveRunner::solve_alone): the
  // same time to a few picoseconds; a run that reports link activity simulates its flows.
  // kFlows simulates every round's flows (tests compare).
  enum class Rounds : std::uint8_t { kClosedForm, kFlows };
  // The machine must outlive the simulator.
  explicit CollectiveSimulator(const Machine& machine, Folding folding = Folding::kSymmetric,
                               Rounds rounds = Rounds::kClosedForm);

  // Simulates `spec` alone. A fixed algorithm runs with the faster protocol; `auto` tries every
  // candidate (algorithm, protocol) of NCCL's set (auto_candidates) and keeps the fastest, as
  // NCCL's tuner picks per size; send_recv and all_to_all take NCCL's point-to-point protocol
  // rule instead (LL up to 16 KiB per peer, else Simple).
  // A fixed algorithm that does not apply is an InputError naming `spec_origin` (a JSON path or
  // a command-line option). `activity`, when given, receives the links that carried bytes.
  CollectiveResult run(const CollectiveSpec& spec, const std::string& spec_origin = "--algo",
                       std::vector<LinkActivity>* activity = nullptr);
  // One fixed (algorithm, protocol); nothing when the algorithm does not apply (nor for nvls with
  // LL: NCCL runs NVLS with the Simple protocol only).
  std::optional<CollectiveResult> run_fixed(const CollectiveSpec& spec, CollectiveAlgorithm algorithm,
                                            Protocol protocol, std::string* why_not,
                                            std::vector<LinkActivity>* activity = nullptr);
  // A lower bound on run_fixed(spec, algorithm, protocol)'s time from the schedule alone, with
  // no route and no simulation (the definition says why it is one); nothing when the algorithm
  // does not apply. run() tries candidates in increasing order of it and skips those whose
  // bound exceeds the best time found.
  std::optional<Duration> time_floor(const CollectiveSpec& spec, CollectiveAlgorithm algorithm, Protocol protocol);
  // A lower bound on the time of `algorithm` under `other`, given `measured`, a run of the same
  // algorithm on `spec` under the other protocol: the same flows on the same paths, every size
  // scaled by the ratio of the protocols' wire factors, so the same bandwidth phases stretched
  // by that ratio (the definition says why); nothing when the sizes do not scale exactly (a
  // non-integral LL wire size) or the algorithm does not apply. At least time_floor's bound.
  std::optional<Duration> protocol_floor(const CollectiveSpec& spec, CollectiveAlgorithm algorithm,
                                         const CollectiveResult& measured, Protocol other);
  // How many servers a run of `algorithm` on `spec` folds onto one (network_fold.h); 0 when it
  // runs every flow (or the fold breaks on a route, found only while running).
  std::uint32_t fold_servers(const CollectiveSpec& spec, CollectiveAlgorithm algorithm);
  // Whether a run of `algorithm` on `spec` (unfolded; with every link's activity asked for or not)
  // lists its all-pairs round in parts and prepares it one part at a time, holding one sending
  // server's connections instead of all (direct_in_parts, CollectiveRunner::kStreamedRound): the
  // direct algorithm in closed form under static ECMP, with more than kStreamedRound flows, its
  // ranks server by server.
  bool prepares_in_parts(const CollectiveSpec& spec, CollectiveAlgorithm algorithm, bool activity) const;
  // The flows a part of a large closed-form round holds at once (CollectiveRunner::set_round_part;
  // tests make parts small to compare them with the whole round).
  void set_round_part(std::size_t flows) { round_part_ = flows; }
  // The flow network's view of the machine (what a LinkActivity's virtual links are).
  const NetworkLayout& layout() const { return layout_; }

 private:
  // One run of a fixed algorithm, folded onto `orbits` when given; nothing when the fold broke.
  std::optional<CollectiveResult> simulate(const CollectiveSpec& spec, CollectiveAlgorithm algorithm, Protocol protocol,
                                           std::string* why_not, std::vector<LinkActivity>* activity,
                                           const topo::ServerOrbits* orbits, bool* broken);
  // time_floor of a built schedule, in two parts: the rounds' drains (bytes across the
  // tightest cut) and their latencies (steps x the smallest step latency), in seconds; and
  // whether LL's wire sizes are the schedule's times the wire factor exactly (integral).
  struct FloorParts {
    double drain = 0, latency = 0;
    std::size_t rounds = 0;
    bool scales = true;
  };
  FloorParts floor_parts(const Schedule& schedule, Protocol protocol);
  Duration floor_of(const Schedule& schedule, Protocol protocol);
  static Duration floor_from(const FloorParts& parts);
  // protocol_floor from the other protocol's floor_parts and floor_of.
  Duration implied_floor(const FloorParts& parts, Duration floor, const CollectiveResult& measured, Protocol other) const;
  // The group a run of `algorithm` may fold onto (network_fold.h), if any; the last rank set's
  // is kept (the tuner and a size sweep ask again for the same ranks).
  const topo::ServerOrbits* fold_for(const CollectiveSpec& spec, CollectiveAlgorithm algorithm);

  NetworkLayout layout_;
  topo::Router router_;
  Folding folding_;
  std::optional<topo::ServerSymmetry> symmetry_;  // built on the first fold
  std::optional<bool> fabric_folds_;
  std::vector<topo::NodeId> fold_ranks_;          // the rank set of fold_
  std::optional<topo::ServerOrbits> fold_;
  std::optional<std::optional<topo::ServerOrbits>> twin_fold_;  // the switch exchanges' group, once
  NetworkFold::Scratch fold_scratch_;
  std::optional<net::FlowNetwork> net_;  // reset for each run (FlowNetwork::reset)
  Rounds rounds_;
  std::optional<std::size_t> round_part_;  // set_round_part; else the runner's own
  std::optional<net::EqualFlowsRound> closed_form_;  // of net_, kept with it (empty between runs)
  // time_floor's cuts (out of and into each device, out of and into each server): their summed
  // link capacity (built on first use), and the bytes a round moves across each with the cuts
  // it crossed.
  std::vector<double> cut_capacity_;
  std::vector<double> cut_bytes_;
  std::vector<std::size_t> cuts_;
  int cross_class_ = 0;  // the smallest link class between servers (kLinkClassCount: none)
};

}  // namespace cs::coll
