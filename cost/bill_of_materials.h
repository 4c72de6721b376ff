// The bill of materials of a cluster, read off its graph (topo::Cluster), not from a formula
// beside it, and priced with the price catalog (cost/price_catalog.h). docs/cost-model.md.
//
// Counting rules:
//   servers, GPUs, NICs   the graph's devices, servers grouped by GPU model.
//   port speed            the fabric's port: the fastest endpoint cable (tier 1), i.e. the NIC's rate.
//   ports of a switch     the capacity of its cables in one direction over the port speed, rounded
//                         up: a generated spine cable that stands for part of a port (200 Gb/s of a
//                         rail-optimized leaf's 64 spines) or for several ports counts by capacity.
//   leaf switches         each leaf of the graph is a physical place (its servers' rack or row):
//                         ceil(ports / radix) switches per leaf.
//   spine, core switches  interchangeable within a tier: ceil(ports of the tier / radix). The
//                         graph's spines are logical (a rail-optimized generator joins every leaf to
//                         every spine); a physical spine takes the same share of every leaf's uplinks.
//   cables per tier       ceil(capacity of the tier's cables in one direction / port speed); optical
//                         ones (the catalog's "media") need a transceiver at each end.
// The radix is the hardware catalog's (configs/hardware/switches.json) for the switch the price
// catalog names for the fabric's family and port speed: InfiniBand unless the NICs are Ethernet
// (a catalog name ending in "GbE").
//
// Closed forms this reproduces (Al-Fares et al., SIGCOMM 2008), N endpoints, k-port switches: a
// two-tier non-blocking leaf-spine or rail-optimized fabric has N/(k/2) leaves and N/k spines,
// 3N/k switches, N endpoint cables and N leaf-spine cables; a three-tier fat-tree 5N/k switches
// and 2N switch-to-switch cables; r:1 oversubscription at the leaves divides the spines and the
// leaf-spine cables by r (tests/cost/bill_of_materials_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/units.h"
#include "cost/price_catalog.h"
#include "hardware/catalog.h"
#include "topology/cluster.h"

namespace cs::cost {

struct ServerLine {
  std::string gpu;        // "H100-SXM"
  int servers = 0;
  int gpus = 0;           // in these servers
  Money unit_price{0};    // per server, scaled from the priced server by GPU count
  Power unit_power_max{0};
  const ServerPrice* price = nullptr;
};

struct SwitchTier {
  std::string tier;        // "leaf", "spine", "core"
  int graph_switches = 0;  // switches of this kind in the graph
  std::int64_t ports = 0;  // ports in use
  std::int64_t switches = 0;  // physical switches
  int radix = 0;
};

struct CableTier {
  std::string tier;        // "endpoint_leaf", "leaf_spine", "spine_core"
  std::int64_t cables = 0;
  Medium medium = Medium::kOptical;
  std::int64_t transceivers = 0;
};

struct BillOfMaterials {
  std::string cluster;
  int gpus = 0;
  int servers = 0;
  int nics = 0;
  std::vector<ServerLine> server_lines;
  Bandwidth port_speed{0};           // 0 when the cluster has no fabric
  NetworkFamily family = NetworkFamily::kInfiniband;
  const SwitchPrice* switch_price = nullptr;  // null without a fabric
  const LinkPrice* link_price = nullptr;
  std::vector<SwitchTier> switch_tiers;      // the tiers present, leaf first
  std::vector<CableTier> cable_tiers;        // the tiers present, endpoint first
  std::int64_t switches() const;
  std::int64_t cables() const;
  std::int64_t transceivers() const;
  // The catalog paths the prices came from (for the list of assumed figures).
  std::vector<std::string> price_paths;
};

// Reads the bill off the cluster. ConfigError at `file` when the catalog has no server for a GPU
// model of the cluster, no switch for the fabric's family and port speed, or no cable price at it,
// or no switch in the hardware catalog with the priced switch's name.
BillOfMaterials bill_of_materials(const topo::Cluster& cluster, const PriceCatalog& prices,
                                  const hw::Catalog& hardware, const std::string& file);

}  // namespace cs::cost
