// The flow network's view of a machine: its links at their usable rate (line rate x the
// protocol efficiency of the link's class), followed by the reduction engines of the
// in-switch-reducing NVSwitches, and the schedules' facts about the cluster
// (sim/collectives/schedule.h).
//
// Reduction engines. An NVLS all-reduce's reduction (multimem.ld_reduce) is done in the switch
// port of the GPU that issued it, so the switch's reduction throughput is a per-port quantity:
// each GPU cabled to an in-switch-reducing NVSwitch gets one virtual link, the engine of its
// port, of capacity R = (the switch's reduction bandwidth) / (the number of GPUs cabled to it),
// i.e. the catalog's switch_reduction_per_gpu for the server templates. A collective over k
// GPUs has k x R of reduction (its own ports); collectives on disjoint GPUs of one switch do
// not share engines, and collectives on common GPUs share those GPUs' engines max-min fairly.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "sim/collectives/machine.h"
#include "sim/collectives/schedule.h"
#include "sim/network/flow_network.h"

namespace cs::coll {

class NetworkLayout {
 public:
  // The machine must outlive the layout.
  explicit NetworkLayout(const Machine& machine);
  const topo::Cluster& cluster() const { return machine_.cluster; }
  const ProtocolParams& protocol() const { return machine_.protocol; }
  const ScheduleContext& schedules() const { return schedules_; }
  std::vector<net::LinkCapacity> capacities() const;
  // Usable rate of a cluster link: line rate x the efficiency of its class.
  Bandwidth usable_bandwidth(topo::LinkId id) const;
  // The reduction engine of `gpu`'s port on `nvswitch` (a flow-network link after the cluster's
  // links), if the switch reduces in-switch and the GPU is cabled to it.
  std::optional<topo::LinkId> reduction_engine(topo::NodeId nvswitch, topo::NodeId gpu) const;
  // The (switch, GPU) port whose reduction engine is flow-network link `id`; nothing for a
  // cluster link.
  std::optional<std::pair<topo::NodeId, topo::NodeId>> engine_port(topo::LinkId id) const;

 private:
  struct Engine {
    topo::NodeId nvswitch, gpu;
    Bandwidth capacity{0};
  };
  const Machine& machine_;
  ScheduleContext schedules_;
  std::vector<Engine> engines_;  // LinkId = cluster links + index
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> engine_index_;  // (switch, GPU)
};

}  // namespace cs::coll
