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
#include "sim/collectives/network_layout.h"
#include "sim/network/flow_network.h"
#include "topology/router.h"

namespace cs::coll {

// What a single collective on an idle cluster did.
struct CollectiveResult {
  Duration time{0};
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  std::size_t flows = 0;
  Bytes wire_bytes{0};
  std::uint64_t events = 0;
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
  // The machine must outlive the simulator.
  explicit CollectiveSimulator(const Machine& machine);

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
  // The flow network's view of the machine (what a LinkActivity's virtual links are).
  const NetworkLayout& layout() const { return layout_; }

 private:
  NetworkLayout layout_;
  topo::Router router_;
  std::optional<net::FlowNetwork> net_;  // reset for each run (FlowNetwork::reset)
};

}  // namespace cs::coll
