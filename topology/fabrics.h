// Fabric generators: the network that joins the servers' endpoints.
//
// Endpoints are every NIC of every server, servers in order and NICs in rail order; a server
// without NICs contributes its GPUs instead (rail = GPU index). Endpoint cables (tier 1) have
// the fabric link bandwidth when one is given, else the endpoint's NIC rate. Every generated
// cable has the fabric link latency and class (network by default).
//
//   none            no cables.
//   star            every endpoint to one switch "leaf0".
//   leaf_spine      leaves "leaf<i>" of endpoints_per_leaf endpoints; "spine<j>", j < spines;
//                   one cable from every leaf to every spine (tier 2).
//   fat_tree        k-ary fat-tree, k = radix (even): leaves of k/2 endpoints. tiers 2: leaves
//                   "leaf<i>" (at most k) and k/2 spines "spine<j>", every leaf to every spine.
//                   tiers 3: pods of k/2 leaves "pod<p>/leaf<i>" and k/2 aggregation switches
//                   "pod<p>/agg<j>", every leaf to every agg of its pod (tier 2); (k/2)^2 cores
//                   "core<c>", agg j of every pod to cores j*k/2 .. j*k/2 + k/2 - 1 (tier 3).
//                   Only as many leaves and pods as the endpoints need (at most k pods).
//   rail_optimized  leaf "rail<r>/leaf<b>" joins NIC r of servers b*L .. b*L + L - 1
//                   (L = nodes_per_leaf); spines "spine<j>" are shared by all leaves.
//   torus           dims [x, y] or [x, y, z] with x*y*z = endpoints; endpoint i sits at
//                   (i mod x, (i / x) mod y, i / (x y)) and is cabled to its +1 neighbour in each
//                   dimension with wrap-around (a dimension of 2 has one cable, of 1 none).
//   ring            endpoint i to endpoint i+1, and the last to the first (2 endpoints: one cable).
//
// Leaf assignment (leaf_spine, fat_tree): endpoints fill leaves in endpoint order; with
// rail_aligned, servers are cut into blocks of L consecutive servers (L = endpoints per leaf)
// and each (block, rail) pair gets its own leaf, in (block, rail) order.
//
// Oversubscription o >= 1 applies at the leaf tier: a leaf's uplink capacity is
// L x (mean bandwidth of its endpoint cables) / o, as if the leaf were full, split evenly over
// its uplink cables (one per spine or per agg of its pod). In a 3-tier fat-tree each agg-core
// cable carries the mean leaf-uplink cable bandwidth of its pod, so tiers above the leaves are
// non-blocking. Switch kinds: leaves kLeafSwitch, spines and aggs kSpineSwitch, cores
// kCoreSwitch. Endpoint-to-endpoint cables (torus, ring) are tier 1.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "topology/cluster.h"
#include "topology/cluster_builder.h"
#include "topology/server_templates.h"

namespace cs::topo {

enum class FabricType : std::uint8_t { kNone, kStar, kLeafSpine, kFatTree, kRailOptimized, kTorus, kRing };
inline constexpr EnumName<FabricType> kFabricTypeNames[] = {
    {FabricType::kNone, "none"},         {FabricType::kStar, "star"},
    {FabricType::kLeafSpine, "leaf_spine"}, {FabricType::kFatTree, "fat_tree"},
    {FabricType::kRailOptimized, "rail_optimized"}, {FabricType::kTorus, "torus"},
    {FabricType::kRing, "ring"}};
inline const char* to_string(FabricType t) { return enum_name(kFabricTypeNames, t); }

struct FabricSpec {
  FabricType type = FabricType::kNone;
  int endpoints_per_leaf = 0;       // leaf_spine
  int spines = 0;                   // leaf_spine, rail_optimized
  double oversubscription = 1.0;    // leaf_spine, fat_tree, rail_optimized; >= 1
  int tiers = 3;                    // fat_tree: 2 or 3
  int radix = 0;                    // fat_tree: switch ports, even, >= 4
  int nodes_per_leaf = 0;           // rail_optimized
  std::vector<int> dims;            // torus
  bool rail_aligned = false;        // leaf_spine, fat_tree
  // star, leaf_spine, fat_tree, rail_optimized: the switches reduce in-network (InfiniBand
  // SHARP), which the collnet algorithm uses; each gets a positive reduction_bandwidth.
  bool in_network_reduction = false;
  std::optional<Bandwidth> link_bandwidth;  // endpoint cables; default each endpoint's NIC rate
  Duration link_latency{0};
  hw::LinkClass link_class = hw::LinkClass::kNetwork;
  Routing routing = Routing::kEcmp;  // all types; recorded on the built Cluster
  bool routing_given = false;        // the file names it (else the NICs' link layer decides)
  std::string origin = "/fabric";   // JSON path, for errors
};

struct Endpoint {
  NodeId node;            // invalid while planning (before the servers exist)
  int server = 0;         // global server index
  int rail = 0;           // NIC index in its server, or GPU index for a GPU endpoint
  Bandwidth bandwidth{0}; // NIC rate; 0 for a GPU endpoint
};

// The endpoints of built servers, in fabric order.
std::vector<Endpoint> fabric_endpoints(std::span<const ServerDevices> servers);
// The same endpoints from the specs alone (node ids invalid), for validation before building.
std::vector<Endpoint> planned_endpoints(std::span<const ServerGroupSpec> groups);

// Checks that the fabric fits the endpoints: sizes present and positive, oversubscription >= 1,
// torus dims product, fat-tree capacity, a link bandwidth when an endpoint has no NIC.
// Throws ConfigError naming `file` and the key under spec.origin ("/fabric/dims").
void validate_fabric(const FabricSpec& spec, std::span<const Endpoint> endpoints,
                     const std::string& file);

// The cables build_fabric would add (endpoint cables included), from the sizes alone: checked
// against the link limit (core/limits.h) before anything is built. Call after validate_fabric.
std::int64_t fabric_cable_count(const FabricSpec& spec, std::span<const Endpoint> endpoints);

// Adds the fabric's switches and cables. Validates first.
void build_fabric(ClusterBuilder& builder, const FabricSpec& spec, std::span<const Endpoint> endpoints,
                  const std::string& file);

}  // namespace cs::topo
