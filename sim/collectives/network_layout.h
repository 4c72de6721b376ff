// The flow network's view of a machine: its links at their usable rate (line rate x the
// protocol efficiency of the link's class), followed by one virtual link per in-switch-reducing
// NVSwitch, the reduction engine (capacity = the switch's reduction bandwidth), and the
// schedules' facts about the cluster (sim/collectives/schedule.h).
#pragma once

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
  std::optional<topo::LinkId> reduction_engine(topo::NodeId nvswitch) const;

 private:
  const Machine& machine_;
  ScheduleContext schedules_;
  std::vector<std::pair<topo::NodeId, Bandwidth>> engines_;  // LinkId = cluster links + index
};

}  // namespace cs::coll
