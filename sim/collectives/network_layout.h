// The flow network's view of a machine: its links at their usable rate (line rate x the link's
// achievable fraction, below), followed by the reduction engines of the in-switch-reducing
// NVSwitches, and the schedules' facts about the cluster (sim/collectives/schedule.h).
//
// Achievable fraction of a link (link_efficiencies; docs/network-model.md, "Per-NIC achievable
// bandwidth"):
//   nvlink, pcie   the efficiency of the link's class (ProtocolParams);
//   network        the packet efficiency payload / (payload + overhead) of the NIC at either end
//                  (topo::NodeInfo::packet_efficiency, from the catalog's packet format); a
//                  network link without a NIC end (switch to switch, or a GPU endpoint) carries
//                  the same packets, so it takes the fabric's: the lowest packet efficiency among
//                  the cluster's NICs (one fabric runs one technology; the lowest is the
//                  conservative choice for a cluster that mixes them).
// The network class efficiency applies instead when the cluster has no NIC with a packet format,
// or when it was replaced (a cluster file's "link_classes/network/efficiency", a calibration
// profile's measured value: what the user or a measurement says wins over the derivation).
// A NIC's PCIe links stay pcie: the NIC moves only payload over PCIe (it adds its headers on the
// wire side), so the GPU-to-wire path runs at min(PCIe line rate x pcie efficiency, NIC rate x
// packet efficiency), whichever binds.
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
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "sim/collectives/machine.h"
#include "sim/collectives/schedule.h"
#include "sim/network/flow_network.h"
#include "topology/adaptive_spread.h"
#include "topology/server_orbits.h"

namespace cs::coll {

// The achievable fraction of line rate of every cluster link, by LinkId (the rule above).
std::vector<double> link_efficiencies(const Machine& machine);
// Whether some link of the machine runs at the network class efficiency (a network link and no
// NIC packet format, or a replaced class value): what a prediction then rests on.
bool uses_network_class_efficiency(const Machine& machine);

class NetworkLayout {
 public:
  // The machine must outlive the layout.
  explicit NetworkLayout(const Machine& machine);
  const topo::Cluster& cluster() const { return machine_.cluster; }
  const ProtocolParams& protocol() const { return machine_.protocol; }
  const ScheduleContext& schedules() const { return schedules_; }
  std::vector<net::LinkCapacity> capacities() const;
  // Usable rate of a cluster link: line rate x its achievable fraction (link_efficiencies).
  Bandwidth usable_bandwidth(topo::LinkId id) const;
  double efficiency(topo::LinkId id) const { return efficiency_.at(id.value); }
  // The reduction engine of `gpu`'s port on `nvswitch` (a flow-network link after the cluster's
  // links), if the switch reduces in-switch and the GPU is cabled to it.
  std::optional<topo::LinkId> reduction_engine(topo::NodeId nvswitch, topo::NodeId gpu) const;
  // The (switch, GPU) port whose reduction engine is flow-network link `id`; nothing for a
  // cluster link.
  std::optional<std::pair<topo::NodeId, topo::NodeId>> engine_port(topo::LinkId id) const;
  // The cluster's twin servers (topo::ServerTwins), built on the first call and then shared by
  // the spreaders of every runner on this layout (a training iteration simulates dozens of
  // collectives, each with a runner of its own). Safe to call from several threads.
  std::shared_ptr<const topo::ServerTwins> server_twins() const;
  // The classes of switches of like neighbours (topo::like_switches), the same way.
  std::shared_ptr<const topo::LikeSwitches> like_switches() const;
  // The twin switches' quotient (topo::twin_quotient) of these classes, built on the first call
  // for them and then shared: folded runs' spreaders search it. Safe from several threads.
  std::shared_ptr<const topo::TwinQuotient> twin_quotient(const std::shared_ptr<const topo::SwitchTwins>& twins) const;

 private:
  struct Engine {
    topo::NodeId nvswitch, gpu;
    Bandwidth capacity{0};
  };
  const Machine& machine_;
  ScheduleContext schedules_;
  std::vector<double> efficiency_;  // per cluster link
  std::vector<Engine> engines_;  // LinkId = cluster links + index
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> engine_index_;  // (switch, GPU)
  struct LazyTwins {
    std::once_flag once;
    std::shared_ptr<const topo::ServerTwins> twins;
  };
  std::unique_ptr<LazyTwins> server_twins_ = std::make_unique<LazyTwins>();
  struct LazyLike {
    std::once_flag once;
    std::shared_ptr<const topo::LikeSwitches> like;
  };
  std::unique_ptr<LazyLike> like_switches_ = std::make_unique<LazyLike>();
  struct Quotients {
    std::mutex mutex;
    // Per classes seen (a handful: a simulator's symmetry, a training run's), kept alive here.
    std::vector<std::shared_ptr<const topo::TwinQuotient>> built;
  };
  std::unique_ptr<Quotients> quotients_ = std::make_unique<Quotients>();
};

}  // namespace cs::coll
