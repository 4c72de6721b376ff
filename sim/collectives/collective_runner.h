// Runs collective schedules on the flow network, and simulates single collectives in isolation.
//
// Latency model. Each phase of a schedule counts `steps` algorithm steps. The per-step latency
// of a phase is  a = max over its flows of (step latency of the flow's link class, for the
// protocol) + (the flow's path latency),  where a flow's class is the slowest class on its path
// (network > pcie > nvlink). Every flow of the phase then gets
//     extra latency = steps x a - (its own path latency)  [+ launch latency in the first phase]
// so a phase on an idle uniform network takes exactly  steps x a + bytes / rate, the closed
// forms listed in schedule.h. Protocols: Simple puts the data bytes on the wire; LL puts
// ll_wire_factor times as many, with the smaller LL step latency. Both come from the cluster's
// link-class parameters (configs/hardware/link-classes.json).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/collectives/schedule.h"
#include "sim/engine/simulator.h"
#include "sim/network/flow_network.h"
#include "topology/cluster.h"
#include "topology/router.h"

namespace cs::coll {

// The flow network's view of a cluster: its links at their effective rate (line rate x class
// efficiency), followed by one virtual link per in-switch-reducing NVSwitch, the reduction engine
// (capacity = the switch's reduction bandwidth).
class NetworkLayout {
 public:
  explicit NetworkLayout(const topo::Cluster& cluster);
  const topo::Cluster& cluster() const { return cluster_; }
  const ScheduleContext& schedules() const { return schedules_; }
  std::vector<net::LinkCapacity> capacities() const;
  std::optional<topo::LinkId> reduction_engine(topo::NodeId nvswitch) const;

 private:
  const topo::Cluster& cluster_;
  ScheduleContext schedules_;
  std::vector<std::pair<topo::NodeId, Bandwidth>> engines_;  // LinkId = cluster links + index
};

struct CollectiveOutcome {
  SimTime start, end;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  std::size_t flows = 0;
  Bytes wire_bytes{0};  // bytes put on the network by all flows (each counted once)
};

// Starts collectives on a shared simulator and network; several may run at once and contend.
class CollectiveRunner {
 public:
  CollectiveRunner(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                   const NetworkLayout& layout);
  void start(const CollectiveSpec& spec, Schedule schedule, Algorithm algorithm, Protocol protocol,
             std::function<void(const CollectiveOutcome&)> on_done);

 private:
  struct Run;
  void start_phase(const std::shared_ptr<Run>& run);
  void on_delivered(const std::shared_ptr<Run>& run);

  sim::Simulator& sim_;
  net::FlowNetwork& net_;
  topo::Router& router_;
  const NetworkLayout& layout_;
};

// What a single collective on an idle cluster did.
struct CollectiveResult {
  Duration time{0};
  Algorithm algorithm = Algorithm::kRing;
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
  explicit CollectiveSimulator(const topo::Cluster& cluster);

  // Simulates `spec` alone. A fixed algorithm runs with the faster protocol; `auto` tries every
  // candidate (algorithm, protocol) of NCCL's set (auto_candidates) and keeps the fastest, as
  // NCCL's tuner picks per size.
  // A fixed algorithm that does not apply is an InputError naming `spec_origin` (a JSON path or
  // a command-line option). `activity`, when given, receives the links that carried bytes.
  CollectiveResult run(const CollectiveSpec& spec, const std::string& spec_origin = "--algo",
                       std::vector<LinkActivity>* activity = nullptr);
  // One fixed (algorithm, protocol); nothing when the algorithm does not apply.
  std::optional<CollectiveResult> run_fixed(const CollectiveSpec& spec, Algorithm algorithm,
                                            Protocol protocol, std::string* why_not,
                                            std::vector<LinkActivity>* activity = nullptr);

 private:
  const topo::Cluster& cluster_;
  NetworkLayout layout_;
  topo::Router router_;
};

}  // namespace cs::coll
