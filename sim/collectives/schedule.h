// Collective algorithms as schedules of flows.
//
// A schedule is a list of rounds; a round is a set of flows that start together once the previous
// round has been delivered everywhere, and it counts `steps` algorithm steps of latency.
// Pipelined algorithms (ring, tree, chain broadcast) are one round of bulk flows, one per edge,
// each carrying the edge's whole volume: the flow model then gives their bandwidth term, and the
// step count their latency term. On an uncongested uniform network every schedule reduces to
// its closed form (n ranks, S bytes, per-step latency a, link rate B):
//
//   ring all_reduce          2(n-1) a + 2(n-1)/n S/B        (one bulk flow per ring edge)
//   ring all_gather / RS     (n-1) a + (n-1)/n S/B
//   chain broadcast/reduce   (n-1) a + S/B
//   double binary tree AR    2 floor(log2 n) a + (busiest rank's bytes)/B   (two mirrored heap
//                            trees over the ranks, S/2 each, reduce up and broadcast down)
//   halving-doubling AR      2 log2(n) a + 2(n-1)/n S/B     (n a power of two)
//   direct all_to_all        a + (n-1)/n S/B                 (all pairs at once)
//   hierarchical AR          intra-server ring RS, inter-server ring AR per local GPU index
//                            (rail), intra-server ring AG, pipelined as one transfer (as NCCL
//                            pipelines its tree's chains and CollNet's phases): the three
//                            phases' latencies add, their bandwidth terms do not:
//                            2(g-1) a1 + 2(m-1) a2 + max(2(g-1)/g S/B1, 2(m-1)/m (S/g)/B2)
//   NVLS AR (in-switch)      b + a_nvls + (S + F) / min(k B/(k+1), R)   k GPUs of one NVSwitch
//                            server; R: the reduction rate of one GPU's switch port; b, a_nvls:
//                            NVLS's base and step latency (one step: a chunk's one pass through
//                            the switch); F: the pipeline's fill and drain
//                            (sim/collectives/nvls_pipeline.h); derivation at nvls() in
//                            schedule.cpp
//   NVLS-tree AR (m servers) b + a_nvls + 2 floor(log2 m) a + max(S/R, (S + S/H)/B_nvlink,
//                            busiest NIC's bytes / B_nic): NVLS inside each server to H heads
//                            (one per rail), each head's S/H up and down a double binary tree
//                            over the servers of its rail; derivation at nvls_tree()
//
// Pipelined schedules (ring channels, trees, chains, NVLS) run as one multi-path flow each, so
// their edges advance at the pace of the slowest (net::FlowNetwork::start_pipeline).
// Multi-server rings use one channel per local GPU index, the ring of channel c rotated by c
// inside every server, so the inter-server hops of different channels leave through different
// GPUs (and their NICs), as NCCL's channels do.
//
// Direct links (sim/collectives/mesh_rings.h). Where a server's ranks are joined point to point
// (a mesh server: DGX-1, MI300X), a ring's hops inside the server follow direct GPU-to-GPU links:
// one server alone runs one channel per ring mesh_rings finds (R channels of S/R each); in a
// multi-server ring, channel c crosses each server along one of its rings, cut open so that it
// leaves from local GPU c-1 (as in rank order) and enters at that GPU's ring successor, the rings
// assigned so that entries are distinct as well (each GPU and NIC sends and receives one
// channel). Hierarchical schedules run their intra-server rings on the same R rings. Servers without
// direct GPU links (NVSwitch, PCIe) keep rank order.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/collectives/collective.h"
#include "topology/cluster.h"

namespace cs::coll {

inline constexpr std::uint32_t kNoPipeline = UINT32_MAX;

struct PlannedFlow {
  topo::NodeId src, dst;   // GPUs, or an NVSwitch for in-switch reduction
  Bytes bytes{0};          // data bytes (the protocol may put more on the wire)
  std::uint32_t channel = 0;
  // Flows of one round with the same pipeline id are the edges of one pipelined transfer (a
  // ring channel, a tree, an NVLS reduction): they carry equal bytes and advance at one rate.
  std::uint32_t pipeline = kNoPipeline;
  // NVLS: a flow into the switch (dst) whose bytes are reduced in the switch port of this GPU
  // (the head rank that issued the multimem.ld_reduce); the flow also crosses that port's
  // reduction engine (NetworkLayout::reduction_engine). Invalid: no reduction.
  topo::NodeId reduction_port{};
  // This entry stands for `copies` identical flows (same ends, bytes, channel and rail; in a
  // pipeline: identical members), so a schedule whose flows repeat is listed in O(GPUs) entries.
  std::uint32_t copies = 1;
  // Between servers: the rail whose NICs the flow leaves and enters by (the same NIC index on
  // both sides), or kDestinationRail for the rail of the destination GPU's own NIC (NCCL's
  // PXN). See NicRoute below.
  std::int32_t rail = kDestinationRail;
  static constexpr std::int32_t kDestinationRail = -1;
  // PXN: the handover of a flow's data over NVLink to the GPU that sends it on the rail's NIC
  // (NicRoute::send_proxy; relay_through_proxies below). Not counted in the collective's flows or
  // wire bytes: the transfer it is part of is counted once, as the proxy's send.
  bool handover = false;
  // Between servers: the NCCL channels this member stands for, each its own connection (queue
  // pair) that static ECMP hashes onto its own path, the bytes split evenly over them
  // (collective_runner.cpp). Adaptive routing spreads the member over every path anyway.
  std::uint8_t connections = 1;
};

// NCCL runs every ring and tree channel twice: after building them it duplicates the channels
// (src/graph/connect.cc, "Duplication should be complete now": nChannels x 2), each copy with
// connections of its own. A ring or tree channel of these schedules crossing servers stands for
// the two. (On Hopper with fewer than 16 channels NCCL doubles them again; not modelled.)
inline constexpr std::uint8_t kDuplicatedChannels = 2;

// Where the per-step latency of a round comes from (collective_runner.h): the link classes of
// its flows, or NVLS's own step latency (ProtocolParams::nvls_step_latency); a schedule whose
// first round is kNvls pays NVLS's base latency instead of the launch latency.
enum class StepLatency { kLinkClass, kNvls };

struct Round {
  std::vector<PlannedFlow> flows;
  int steps = 1;
  StepLatency latency = StepLatency::kLinkClass;
  // Further steps whose latency is that of the round's flows inside servers (a pipelined
  // hierarchical schedule's intra-server phases): per-step latency as `steps` but over the
  // flows whose path stays in one server only, each of the kind `local_latency` (kNvls: NVLS's
  // step latency, NVLS-tree's in-server phase). A schedule with kNvls steps of either kind pays
  // NVLS's base latency in place of the launch latency.
  int local_steps = 0;
  StepLatency local_latency = StepLatency::kLinkClass;
  // Listed in parts instead (`flows` empty; direct_in_parts): the round's flows are those that
  // parts(0, v), ..., parts(part_count - 1, v) put in v (replacing what it held) in order,
  // part_flow_count of them as flow_count counts. A runner that prepares the round in parts
  // takes it so (CollectiveRunner), holding one part at a time in one vector: an all-to-all of
  // 16,384 ranks lists 67 million entries, 2.7 GB.
  std::size_t part_count = 0;
  std::size_t part_flow_count = 0;
  std::function<void(std::size_t part, std::vector<PlannedFlow>& flows)> parts;
};

struct Schedule {
  std::vector<Round> rounds;
  // The transfers of the schedule, each entry counted `copies` times, handovers not counted.
  std::size_t flow_count() const;
};

// How a flow between GPUs of two servers crosses the network, as NCCL's net transport does on
// multi-rail servers (docs/network-model.md, "Across servers"): it leaves its server by the
// NIC of one rail and enters the other server by the NIC of the same rail (same NIC index on
// both sides: NCCL connects channel c's NIC n to NIC n of the peer unless NCCL_CROSS_NIC is
// set), so on a rail-optimized fabric it stays under that rail's leaves. The sender reaches the
// NIC over PCIe when it shares the NIC's PCIe switch (or is cabled to it); otherwise it hands
// the data over NVLink to the NIC's own GPU (its proxy), which sends it, as NCCL's PXN does.
// The receiving NIC writes into the destination GPU over PCIe (GPUDirect RDMA).
struct NicRoute {
  topo::NodeId send_proxy;  // the GPU that puts the data on send_nic (invalid: the sender itself)
  topo::NodeId send_nic, recv_nic;
};

// Facts about the cluster that schedules need, computed once per cluster.
class ScheduleContext {
 public:
  explicit ScheduleContext(const topo::Cluster& cluster);
  const topo::Cluster& cluster() const { return cluster_; }
  // GPU-NIC affinity from PCIe locality: the NIC cabled to the GPU, else one of the NICs on the
  // GPU's PCIe switch (the k-th GPU of the switch takes NIC floor(k q / m) of its q NICs, m the
  // switch's GPUs: NCCL spreads the GPUs of one switch over its NICs of equal path), else the
  // server's NIC floor(i nics / gpus) for local GPU i (reached through the host). Invalid when
  // the server has no NIC.
  topo::NodeId nic_of(topo::NodeId gpu) const;
  // NodeInfo::server of `node` (-1 outside servers), from a 16-byte entry per node rather than
  // the cluster's node record (a schedule's walk per start reads it for every flow's ends).
  std::int32_t server_of(topo::NodeId node) const { return places_[node.value].server; }
  // The rail (NodeInfo::local) of a GPU's NIC; -1 when it has none.
  std::int32_t rail_of(topo::NodeId gpu) const;
  // The route of a flow from `src` to `dst` on another server over `rail`
  // (PlannedFlow::kDestinationRail: dst's own rail); nothing when either server lacks that
  // rail's NIC (the router's shortest path is taken then).
  std::optional<NicRoute> nic_route(topo::NodeId src, topo::NodeId dst, std::int32_t rail) const;
  // The NIC of `rail` in `server`; invalid when there is none.
  topo::NodeId rail_nic(std::int32_t server, std::int32_t rail) const;
  // Whether `gpu` reaches `nic` over PCIe alone: its own NIC, cabled to it, or on its PCIe switch.
  bool reaches_over_pcie(topo::NodeId gpu, topo::NodeId nic) const { return nic_of(gpu) == nic || shares_pcie_switch(gpu, nic); }
  // Whether some fabric switch reduces in-network (SHARP): collnet applies.
  bool in_network_reduction() const { return in_network_reduction_; }
  // The NVSwitch of a server that can reduce in-switch, if any.
  std::optional<topo::NodeId> reducing_switch(std::int32_t server) const;
  // Rings over the direct links among `gpus` (coll::mesh_rings), computed once per GPU set and
  // kept (thread-safe); empty when the GPUs have no ring of direct links.
  const std::vector<std::vector<std::size_t>>& direct_rings(const std::vector<topo::NodeId>& gpus) const;

 private:
  struct RingCache {
    std::mutex mutex;
    std::map<std::vector<std::uint32_t>, std::vector<std::vector<std::size_t>>> rings;
  };
  const topo::Cluster& cluster_;
  std::vector<topo::NodeId> reducing_switch_;  // by server; invalid id when none
  std::vector<topo::NodeId> gpu_nic_;          // by GPU rank (Cluster::gpus order); invalid when none
  std::vector<std::uint32_t> gpu_index_;       // by node id: rank of a GPU in Cluster::gpus
  std::size_t rails_ = 0;              // the most rails of a server
  std::vector<topo::NodeId> rail_nic_;  // [server x rails_ + rail]; invalid when none
  std::vector<topo::NodeId> rail_gpu_;  // [server x rails_ + rail]: the first GPU whose NIC it is
  bool shares_pcie_switch(topo::NodeId gpu, topo::NodeId nic) const;
  void find_nics();
  // nic_route's view of a node, by node id, so that a route reads one entry per end (an
  // all-to-all of 16,384 ranks asks for 67 million): its server; for a GPU with a NIC, that
  // NIC's rail and the rails below 64 whose NIC of its server it reaches over PCIe alone
  // (reaches_over_pcie). Rail -1 (no NIC, or not a GPU) and rails from 64 on: ask
  // reaches_over_pcie.
  struct Place {
    std::int32_t server = -1;
    std::int32_t rail = -1;
    std::uint64_t pcie_rails = 0;
  };
  static constexpr std::int32_t kPlaceRails = 64;
  std::vector<Place> places_;
  bool has_direct_gpu_links_ = false;          // some cable joins two GPUs of one server
  bool in_network_reduction_ = false;
  std::unique_ptr<RingCache> ring_cache_ = std::make_unique<RingCache>();
};

// The flows of a round outside pipelines are sent between servers as NCCL's net transport does
// with PXN (src/transport/net.cc): a sender that needs a proxy hands its data over NVLink to the
// proxy (a handover flow), and the proxy sends it on the rail's NIC over one connection per
// remote rank that every local rank shares (NCCL_NET_SHARED_COMMS, on by default: "let only one
// localrank connect to a tpRemoteRank"), with the messages of all local ranks to that rank
// grouped into one (the net plugin's grouped receives, up to 8 per request in net_ib). So the
// sends of all local ranks to one remote GPU through one proxy are one connection (one ECMP hash:
// collective_runner.cpp) and start as one flow of weight k; their handovers to one proxy
// likewise. Pipelined flows keep their handover inside their path (the pipeline's members
// advance together).
//
// ProxyRelay adds flows to a round outside pipelines as sent through PXN proxies: a flow whose
// NicRoute has a send proxy becomes its handover (src -> proxy, PlannedFlow::handover) and the
// proxy's send (proxy -> dst); flows with equal ends, bytes, channel, rail and kind become one
// entry with their copies summed. Memory: one entry per distinct flow, so the n(n-1) sends of an
// all-to-all over m servers take O(n m) entries. The direct algorithm's all-pairs rounds list
// each server's entries without it where the server's senders come together
// (server_pairs_relay.h: the same entries, in the same order).
class ProxyRelay {
 public:
  explicit ProxyRelay(const ScheduleContext& ctx) : ctx_(ctx) {}
  // `memo`, if given, is the caller's slot for this flow's send (0 at first): the index + 1 of
  // the entry it merged into last time, tried before the table (its key is compared, so a stale
  // slot costs a lookup, never a wrong merge). An all-to-all's senders of one server share one
  // slot per destination: their sends go through the same proxy into one entry.
  void add(const PlannedFlow& flow, std::uint32_t* memo = nullptr);
  // Room for `entries` distinct flows (saves rehashing when their number is known roughly).
  void reserve(std::size_t entries);
  // The flows added so far, in the order their entries were first added; the relay is empty after.
  std::vector<PlannedFlow> take();

 private:
  // The index of the entry `flow` merged into (a new one at the end if its key is new).
  std::uint32_t merge(const PlannedFlow& flow);
  std::uint32_t merge(const PlannedFlow& flow, std::uint32_t* memo);
  void rehash(std::size_t slots);
  const ScheduleContext& ctx_;
  std::vector<PlannedFlow> flows_;
  std::array<std::uint32_t, 16> handover_memo_{};  // by proxy id mod 16: entry index + 1
  // Open addressing over flows_: entry index + 1 per slot (0: free),
  // linear probing, at most half full; a flow's key is (src, dst, channel, rail, bytes, handover).
  std::vector<std::uint32_t> slots_;
};

// Whether the direct algorithm runs `op` as all pairs of ranks sending the same bytes (all_to_all,
// all_gather, reduce_scatter; all_reduce as two such rounds), not from or to one rank.
inline bool all_pairs_op(CollectiveOp op) {
  return op == CollectiveOp::kAllToAll || op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kAllReduce;
}

// The schedule of `spec` with a fixed algorithm, or nothing when the algorithm does not apply
// (then `why_not` says why, e.g. "hd needs a power-of-two number of ranks").
// `from_server` >= 0: only the flows sent by the GPUs of that server (with their PXN relays), for
// a folded run (sim/collectives/network_fold.h); the direct algorithm's all-pairs operations only.
std::optional<Schedule> build_schedule(const ScheduleContext& ctx, const CollectiveSpec& spec,
                                       CollectiveAlgorithm algorithm, std::string* why_not,
                                       std::int32_t from_server = -1);

// The direct schedule of an all-pairs `spec` (all_pairs_op) with each round listed in parts
// (Round::parts), part k the flows of the k-th run of up to kPartServers consecutive sending
// servers (fewer where their entries could pass kPartEntries: 32 servers of 512 DGX H100, 15 of
// 2,048) with their PXN relays: what build_schedule lists, the same entries, when the ranks come
// server by server; nothing otherwise (or on one server). Within a part the entries come by
// sender position, then by destination rail, then by server (server_pairs_relay.h), where
// build_schedule lists them server by server: a static-ECMP all-to-all's connections between
// the same rails and classes of twin servers then come one after another, which the router's
// kept searches and their walks by middle serve (topology/router.h). `ctx` must outlive the
// schedule.
std::optional<Schedule> direct_in_parts(const ScheduleContext& ctx, const CollectiveSpec& spec);
inline constexpr std::size_t kPartServers = 32;
inline constexpr std::size_t kPartEntries = std::size_t{1} << 19;  // 20 MiB of entries
// Whether direct_in_parts lists `spec` (an all-pairs op whose ranks come server by server, over
// two servers or more).
bool lists_by_server(const topo::Cluster& cluster, const CollectiveSpec& spec);

// Algorithms `auto` considers (NCCL's set for the situation), in preference order for ties.
std::vector<CollectiveAlgorithm> auto_candidates(const ScheduleContext& ctx, const CollectiveSpec& spec);

}  // namespace cs::coll
