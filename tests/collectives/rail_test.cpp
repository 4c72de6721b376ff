// Collectives across servers as NCCL forms them on multi-rail servers (schedule.h, NicRoute and
// rail_ring_block): rings whose server-to-server hops stay on one rail, GPU-NIC affinity from
// PCIe locality, and PXN for point-to-point traffic. Asserted from per-link bytes on DGX H100
// servers of the bundled rail-optimized NDR cluster (configs/clusters/h100-rail-512.json: NIC r
// of servers 0..31 on leaf rail<r>/leaf0, so with up to 32 servers every rail is one leaf and
// nothing needs a spine).
#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "sim/collectives/collective_runner.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/schedule.h"

namespace cs::coll {
namespace {

// Under static ECMP, the routing these tests derive their figures for (the NDR NICs' default
// is adaptive routing; docs/cluster-format.md, "Routing").
Machine rail_servers(int servers) {
  return load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json",
                      {"/servers/0/count=" + std::to_string(servers), "/fabric/routing=ecmp"});
}

CollectiveSpec spec_of(const Machine& m, CollectiveOp op, Bytes size) {
  CollectiveSpec s;
  s.op = op;
  s.size = size;
  s.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().end());
  return s;
}

// Bytes of every link that carried some, by link.
std::map<std::uint32_t, double> bytes_by_link(const std::vector<LinkActivity>& activity) {
  std::map<std::uint32_t, double> out;
  for (const LinkActivity& a : activity) out[a.link.value] = static_cast<double>(a.bytes.value());
  return out;
}

bool is_kind(const topo::Cluster& c, topo::NodeId n, topo::NodeKind k) { return c.node(n).kind == k; }

TEST(RailAlignedRings, ServerToServerHopsStayOnTheirRailAndEveryNicCarriesOneChannel) {
  // A ring all-reduce over every GPU of 2 and 4 DGX H100 (8 GPUs, 8 NDR NICs, GPU i and NIC i on
  // one PCIe switch with GPU i^1 and NIC i^1). Channel c (one per local GPU) enters each server
  // by NIC c at GPU c and leaves by NIC c from GPU c^1, so every server-to-server hop joins two
  // NICs of rail c under the same leaf: no leaf-spine link carries a byte, and every NIC sends
  // (and receives) one channel, 2(n-1)/n S/8 bytes. Each GPU sends 7 channels over NVLink
  // (7 r <= 0.8 x 450 GB/s) and one over PCIe, and each NIC one: the NICs bind, so
  //     busbw = 8 B_nic  (B_nic the NIC link's usable rate)
  // and t = 2(n-1)/n S/(8 B_nic) + latency (launch and 2(n-1) steps).
  for (int servers : {2, 4}) {
    SCOPED_TRACE(servers);
    const Machine m = rail_servers(servers);
    const topo::Cluster& c = m.cluster;
    CollectiveSimulator sim(m);
    const Bytes S = gibibytes(64);  // latency under 0.5% of the time
    const CollectiveSpec s = spec_of(m, CollectiveOp::kAllReduce, S);
    const auto n = static_cast<double>(s.ranks.size());
    std::vector<LinkActivity> activity;
    std::string why;
    const auto r = sim.run_fixed(s, CollectiveAlgorithm::kRing, Protocol::kSimple, &why, &activity);
    ASSERT_TRUE(r) << why;
    double nic_rate = 0;
    std::vector<double> nic_bytes;
    for (const LinkActivity& a : activity) {
      if (a.link.value >= c.link_count() || a.bytes.value() == 0) continue;
      const topo::LinkInfo& l = c.link(a.link);
      EXPECT_LT(l.tier, 2) << c.node(l.src).name << " -> " << c.node(l.dst).name;  // no spine
      if (is_kind(c, l.src, topo::NodeKind::kNic) && l.tier == 1) {
        nic_bytes.push_back(static_cast<double>(a.bytes.value()));
        nic_rate = sim.layout().usable_bandwidth(a.link).value();
      }
    }
    ASSERT_EQ(nic_bytes.size(), static_cast<std::size_t>(8 * servers));  // every NIC sends
    const double per_nic = 2 * (n - 1) / n * static_cast<double>(S.value()) / 8;
    for (double b : nic_bytes) EXPECT_NEAR(b, per_nic, per_nic * 1e-6);
    const double bandwidth_term = per_nic / nic_rate;
    const double t = to_seconds(r->time);
    const double latency_bound = to_seconds(m.protocol.launch_latency) +
                                 2 * (n - 1) * (to_seconds(m.protocol.of(hw::LinkClass::kNetwork).step_latency) + 10e-6);
    EXPECT_GE(t, bandwidth_term);
    EXPECT_LE(t, bandwidth_term + latency_bound);
    const double busbw = static_cast<double>(S.value()) / t * 2 * (n - 1) / n;
    std::printf("%d servers: ring busbw %.1f GB/s, closed form 8 x %.2f = %.1f GB/s\n", servers, busbw / 1e9,
                nic_rate / 1e9, 8 * nic_rate / 1e9);
    EXPECT_NEAR(busbw, 8 * nic_rate, 8 * nic_rate * 0.01);
  }
}

TEST(RingLatency, OnlyTheHopsBetweenServersPayTheNetworkStepLatency) {
  // A ring over m servers of g GPUs crosses servers m times; a chunk's last journey through the
  // pipelined ring is 2(n - 1) dependent hops of which 2(m - 1) are between servers (NCCL's
  // nInterSteps, src/graph/tuning.cc). So raising the network class's step latency by d adds
  // 2(m - 1) d to an all-reduce and (m - 1) d to an all-gather, and raising NVLink's adds
  // 2(n - m) d and (n - m) d: the network latency is not paid on every step.
  for (int servers : {2, 4}) {
    SCOPED_TRACE(servers);
    const double n = 8.0 * servers, m = servers;
    const Duration d = nanoseconds(100);
    const auto time_with = [&](hw::LinkClass cls, Duration extra, CollectiveOp op) {
      Machine mm = rail_servers(servers);
      mm.protocol.of(cls).step_latency += extra;
      CollectiveSimulator sim(mm);
      std::string why;
      const auto r = sim.run_fixed(spec_of(mm, op, kibibytes(64)), CollectiveAlgorithm::kRing, Protocol::kSimple, &why);
      EXPECT_TRUE(r) << why;
      return r ? r->time : Duration{0};
    };
    for (const CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather}) {
      const double passes = op == CollectiveOp::kAllReduce ? 2 : 1;
      const Duration t0 = time_with(hw::LinkClass::kNetwork, Duration{0}, op);
      EXPECT_EQ((time_with(hw::LinkClass::kNetwork, d, op) - t0).count(), static_cast<std::int64_t>(passes * (m - 1)) * d.count());
      EXPECT_EQ((time_with(hw::LinkClass::kNvlink, d, op) - t0).count(), static_cast<std::int64_t>(passes * (n - m)) * d.count());
    }
  }
}

TEST(DuplicatedChannels, ARingWithOneRankPerServerCrossesLeavesOnTwoConnections) {
  // An all-gather over GPU 0 of 48 DGX H100 (a data-parallel group at TP 8): one ring on rail 0,
  // servers 0-31 under leaf 0 and 32-47 under leaf 1, so the edges 31 -> 32 and 47 -> 0 cross
  // the spines. Each edge carries E = (n-1)/n S; NCCL runs the channel twice on connections of
  // their own (kDuplicatedChannels), hashed apart, so each crossing edge puts E/2 on each of two
  // leaf-spine cables (E on one, should the two hashes meet): the spine links carry 2E in all, in
  // halves. A cable (200 Gb/s) then carries half the edge's rate, and the NICs bind:
  //     t <= E / B_nic + latency
  // where a single connection would take E / B_cable, twice that.
  const Machine m = rail_servers(48);
  const topo::Cluster& c = m.cluster;
  CollectiveSimulator sim(m);
  CollectiveSpec s = spec_of(m, CollectiveOp::kAllGather, mebibytes(480));
  std::vector<topo::NodeId> ranks;
  for (std::size_t i = 0; i < s.ranks.size(); i += 8) ranks.push_back(s.ranks[i]);
  s.ranks = ranks;
  const auto n = static_cast<double>(s.ranks.size());
  const double E = (n - 1) / n * static_cast<double>(s.size.value());
  std::vector<LinkActivity> activity;
  std::string why;
  const auto r = sim.run_fixed(s, CollectiveAlgorithm::kRing, Protocol::kSimple, &why, &activity);
  ASSERT_TRUE(r) << why;
  double up = 0, nic_rate = 0;
  for (const auto& [id, b] : bytes_by_link(activity)) {
    if (id >= c.link_count() || b == 0) continue;
    const topo::LinkInfo& l = c.link(topo::LinkId{id});
    if (is_kind(c, l.src, topo::NodeKind::kNic) && l.tier == 1) nic_rate = sim.layout().usable_bandwidth(topo::LinkId{id}).value();
    if (l.tier != 2 || c.node(l.src).name.find("leaf") == std::string::npos) continue;  // leaf -> spine
    up += b;
    const double halves = b / (E / 2);
    EXPECT_NEAR(halves, std::round(halves), 1e-6) << c.node(l.src).name << " -> " << c.node(l.dst).name;
  }
  EXPECT_NEAR(up, 2 * E, 2);
  ASSERT_GT(nic_rate, 0);
  const double latency = to_seconds(m.protocol.launch_latency) +
                         (n - 1) * (to_seconds(m.protocol.of(hw::LinkClass::kNetwork).step_latency) + 10e-6);
  EXPECT_LE(to_seconds(r->time), E / nic_rate + latency);
}

TEST(NvlsTree, HeadsReduceInTheSwitchAndTheirSlicesCrossServersOnTheirRails) {
  // NCCL's NVLS-tree all-reduce (schedule.cpp, nvls_tree) over 2 and 4 DGX H100: every GPU is the
  // head of its NIC's rail (H = k = 8), S in units u = S/16 (a slice S/8 is 2u). Per GPU: NVLink
  // out 16u (its share of every slice, to the heads' ports) + 2u (its store) = 18u, NVLink in
  // 2u (its reduced slice) + 16u (every stored slice) = 18u, its port reduces 8 inputs of 2u.
  // Across servers each head's slice goes up and down the two mirrored heap trees over the
  // servers of its rail, u per tree edge and direction: with 2 servers each NIC sends u in each
  // tree (2u), with 4 servers 3u (a root sends 2u down, an inner node u up and u down, a leaf
  // u up; every server is one of those in tree 0 and the mirror in tree 1). Nothing crosses a
  // spine. The time is the busiest of NIC, port and NVLink plus at most the latency.
  for (int servers : {2, 4}) {
    SCOPED_TRACE(servers);
    const Machine m = rail_servers(servers);
    const topo::Cluster& c = m.cluster;
    CollectiveSimulator sim(m);
    const Bytes S = gibibytes(4);
    const double u = static_cast<double>(S.value()) / 16;
    const CollectiveSpec s = spec_of(m, CollectiveOp::kAllReduce, S);
    std::vector<LinkActivity> activity;
    std::string why;
    const auto r = sim.run_fixed(s, CollectiveAlgorithm::kNvlsTree, Protocol::kSimple, &why, &activity);
    ASSERT_TRUE(r) << why;
    const auto bytes = bytes_by_link(activity);
    const double nic_share = servers == 2 ? 2 * u : 3 * u;
    double bound = 0;
    int nics = 0, uplinks = 0, downlinks = 0;
    for (const auto& [id, b] : bytes) {
      if (id >= c.link_count() || b == 0) continue;
      const topo::LinkInfo& l = c.link(topo::LinkId{id});
      const std::string name = c.node(l.src).name + " -> " + c.node(l.dst).name;
      EXPECT_LT(l.tier, 2) << name;
      const double rate = sim.layout().usable_bandwidth(topo::LinkId{id}).value();
      bound = std::max(bound, b / rate);
      if (is_kind(c, l.src, topo::NodeKind::kNic) && l.tier == 1) {
        EXPECT_NEAR(b, nic_share, 2) << name;
        ++nics;
      } else if (is_kind(c, l.src, topo::NodeKind::kGpu) && is_kind(c, l.dst, topo::NodeKind::kNvSwitch)) {
        EXPECT_NEAR(b, 18 * u, 18) << name;
        ++uplinks;
      } else if (is_kind(c, l.src, topo::NodeKind::kNvSwitch) && is_kind(c, l.dst, topo::NodeKind::kGpu)) {
        EXPECT_NEAR(b, 18 * u, 18) << name;
        ++downlinks;
      }
    }
    EXPECT_EQ(nics, 8 * servers);
    EXPECT_EQ(uplinks, 8 * servers);
    EXPECT_EQ(downlinks, 8 * servers);
    for (topo::NodeId g : s.ranks) {
      topo::NodeId sw;
      for (topo::LinkId l : c.out_links(g)) {
        if (is_kind(c, c.link(l).dst, topo::NodeKind::kNvSwitch)) sw = c.link(l).dst;
      }
      const auto engine = sim.layout().reduction_engine(sw, g);
      ASSERT_TRUE(engine);
      ASSERT_TRUE(bytes.count(engine->value));
      EXPECT_NEAR(bytes.at(engine->value), 16 * u, 16);
      bound = std::max(bound, 16 * u / sim.layout().capacities()[engine->value].bandwidth.value());
    }
    const double t = to_seconds(r->time);
    const double latency = to_seconds(m.protocol.nvls_step_latency) + 10e-6 +
                           2 * (servers == 2 ? 1 : 2) * (to_seconds(m.protocol.of(hw::LinkClass::kNetwork).step_latency) + 10e-6);
    EXPECT_GE(t, bound);
    EXPECT_LE(t, bound + latency);
    const auto n = static_cast<double>(s.ranks.size());
    std::printf("%d servers: nvls_tree busbw %.1f GB/s (bound %.1f)\n", servers,
                static_cast<double>(S.value()) / t * 2 * (n - 1) / n / 1e9,
                static_cast<double>(S.value()) / bound * 2 * (n - 1) / n / 1e9);
  }
}

TEST(NvlsTree, AppliesOnlyAcrossNvlsServersAndIsAnAutoCandidateThere) {
  std::string why;
  const Machine two = rail_servers(2);
  CollectiveSimulator sim(two);
  CollectiveSpec s = spec_of(two, CollectiveOp::kAllReduce, mebibytes(64));
  EXPECT_FALSE(sim.run_fixed(s, CollectiveAlgorithm::kNvlsTree, Protocol::kLowLatency, &why));
  EXPECT_EQ(why, "nvls_tree runs the Simple protocol only");
  const auto candidates = auto_candidates(sim.layout().schedules(), s);
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), CollectiveAlgorithm::kNvlsTree), candidates.end());
  s.ranks.resize(8);  // one server: nvls's case
  EXPECT_FALSE(sim.run_fixed(s, CollectiveAlgorithm::kNvlsTree, Protocol::kSimple, &why));
  EXPECT_EQ(why, "nvls_tree needs ranks on at least two servers");
  s = spec_of(two, CollectiveOp::kAllGather, mebibytes(64));
  EXPECT_FALSE(sim.run_fixed(s, CollectiveAlgorithm::kNvlsTree, Protocol::kSimple, &why));
  EXPECT_EQ(why, "nvls_tree does not implement all_gather");
  // A100 servers (NVLink3): no in-switch reduction, no candidate.
  const Machine a100 = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/a100-4node-ib.json");
  CollectiveSimulator a100_sim(a100);
  s = spec_of(a100, CollectiveOp::kAllReduce, mebibytes(64));
  EXPECT_FALSE(a100_sim.run_fixed(s, CollectiveAlgorithm::kNvlsTree, Protocol::kSimple, &why));
  const auto none = auto_candidates(a100_sim.layout().schedules(), s);
  EXPECT_EQ(std::find(none.begin(), none.end(), CollectiveAlgorithm::kNvlsTree), none.end());
}

// build_schedule's direct round(s) against a ProxyRelay merging every pair (i, j), i != j, in
// rank order, entry for entry and in order. Returns the largest copies of an entry.
std::uint32_t expect_relay_of_every_pair(const Machine& m, const CollectiveSpec& spec) {
  const ScheduleContext ctx(m.cluster);
  const auto built = build_schedule(ctx, spec, CollectiveAlgorithm::kDirect, nullptr);
  EXPECT_TRUE(built);
  if (!built) return 0;
  const std::size_t n = spec.ranks.size();
  EXPECT_EQ(built->rounds.size(), spec.op == CollectiveOp::kAllReduce ? 2u : 1u);
  ProxyRelay reference(ctx);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j) reference.add({spec.ranks[i], spec.ranks[j], Bytes{spec.size.value() / static_cast<std::int64_t>(n)}, 0, kNoPipeline});
    }
  }
  const std::vector<PlannedFlow> want = reference.take();
  std::uint32_t most = 0;
  for (const Round& round : built->rounds) {
    const std::vector<PlannedFlow>& got = round.flows;
    EXPECT_EQ(got.size(), want.size());
    if (got.size() != want.size()) return 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      SCOPED_TRACE(k);
      EXPECT_EQ(got[k].src, want[k].src);
      EXPECT_EQ(got[k].dst, want[k].dst);
      EXPECT_EQ(got[k].bytes, want[k].bytes);
      EXPECT_EQ(got[k].copies, want[k].copies);
      EXPECT_EQ(got[k].handover, want[k].handover);
      EXPECT_EQ(got[k].rail, want[k].rail);
      EXPECT_EQ(got[k].channel, want[k].channel);
      EXPECT_EQ(got[k].pipeline, kNoPipeline);
      most = std::max(most, got[k].copies);
    }
  }
  return most;
}

TEST(Pxn, TheAllToAllsRelayEntriesAreThoseOfMergingEveryPair) {
  // build_schedule's direct all-to-all lists each server's entries from the routes by rail
  // (server_pairs_relay.h) where each server's ranks come together, and merges every pair through
  // the relay's table otherwise; either must be what merging every pair gives, entry for entry and
  // in order: 4 servers in rank order, and the same ranks interleaved across servers, where a
  // GPU's own and its PCIe neighbour's rails send directly and the other six through their proxy.
  const Machine m = rail_servers(4);
  CollectiveSpec in_order = spec_of(m, CollectiveOp::kAllToAll, mebibytes(32));
  CollectiveSpec interleaved = in_order;
  for (std::size_t k = 0; k < interleaved.ranks.size(); ++k) interleaved.ranks[k] = in_order.ranks[(k % 4) * 8 + k / 4];
  for (const CollectiveSpec* spec : {&in_order, &interleaved}) {
    // Each remote GPU's sends from one server: through its proxy (7 GPUs: the proxy itself and
    // six handovers) and from the proxy's PCIe neighbour directly.
    EXPECT_EQ(expect_relay_of_every_pair(m, *spec), 7u);
  }
}

TEST(Pxn, EachServersEntriesListedByRailAreTheRelaysOnMixedServers) {
  // The listing by rail (server_pairs_relay.h) where the destination's class is not one rail for
  // every sender's server: ranks cut in the middle of the first and last servers; servers with 8
  // NICs beside servers with 4 (two GPUs share a NIC: a rail of the 8-NIC servers that the 4-NIC
  // ones lack is sent without a NIC route); a server without NICs (its GPUs are the fabric's
  // endpoints: no rail); all_gather and all_reduce (two rounds) over the same pairs.
  const std::string path = std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json";
  const auto servers = [](const std::string& name, int count, int nics) {
    return R"({"count":)" + std::to_string(count) + R"(,"name":")" + name +
           R"(","template":"nvswitch","gpu":"H100-SXM","gpus":8,"nvlink":"NVLink4","nic":"NDR-400G","nics":)" +
           std::to_string(nics) + R"(,"pcie_switches":4})";
  };
  const Machine cut = rail_servers(3);
  CollectiveSpec middle = spec_of(cut, CollectiveOp::kAllToAll, mebibytes(19));
  middle.ranks = std::vector<topo::NodeId>(middle.ranks.begin() + 3, middle.ranks.end() - 2);
  // The whole middle server sends to each remote GPU through one proxy: its 6 handovers and itself.
  EXPECT_EQ(expect_relay_of_every_pair(cut, middle), 7u);
  const Machine mixed = load_machine(path, {"/servers/0/count=2", "/servers/1=" + servers("half", 2, 4), "/fabric/routing=ecmp"});
  EXPECT_GT(expect_relay_of_every_pair(mixed, spec_of(mixed, CollectiveOp::kAllToAll, mebibytes(32))), 1u);
  const Machine bare = load_machine(path, {"/servers/0/count=2", "/servers/1=" + servers("bare", 1, 0), "/fabric/routing=ecmp",
                                           R"(/fabric/link={"bandwidth":"400Gbps"})"});
  for (const CollectiveOp op : {CollectiveOp::kAllToAll, CollectiveOp::kAllGather, CollectiveOp::kAllReduce}) {
    SCOPED_TRACE(to_string(op));
    EXPECT_GT(expect_relay_of_every_pair(bare, spec_of(bare, op, mebibytes(24))), 1u);
  }
}

TEST(Pxn, AllToAllAcrossServersUsesOneNicPerRailAndNvlinkInsideTheServer) {
  // All-to-all over 2 DGX H100 (16 ranks, S/16 from every GPU to every other). NCCL's PXN: data
  // for GPU j of the other server goes over NVLink to GPU j of the sender's server, which puts
  // it on NIC j (rail j) to NIC j of the destination, so
  //   - NIC j of each server sends 8 S/16 (from all 8 local GPUs, for the peer's GPU j) and
  //     nothing crosses a spine;
  //   - GPU i's NVLink uplink carries its 7 intra-server shares and its 6 handovers to the
  //     proxies of the rails whose NIC is not on its PCIe switch: 13 S/16 (NIC i^1 shares GPU
  //     i's switch, so GPU i sends to it over PCIe, as NCCL uses PXN only for NICs it cannot
  //     reach through its PCIe switch);
  //   - GPU i's PCIe uplink carries its own share for rail i, the 6 handovers it forwards to NIC
  //     i, and its own share for rail i^1: 8 S/16.
  const Machine m = rail_servers(2);
  const topo::Cluster& c = m.cluster;
  CollectiveSimulator sim(m);
  const Bytes S = mebibytes(256);
  std::vector<LinkActivity> activity;
  std::string why;
  const auto r = sim.run_fixed(spec_of(m, CollectiveOp::kAllToAll, S), CollectiveAlgorithm::kDirect,
                               Protocol::kSimple, &why, &activity);
  ASSERT_TRUE(r) << why;
  const double share = static_cast<double>(S.value()) / 16;
  int nics = 0, nvlinks = 0, pcie = 0;
  for (const auto& [id, bytes] : bytes_by_link(activity)) {
    if (id >= c.link_count() || bytes == 0) continue;
    const topo::LinkInfo& l = c.link(topo::LinkId{id});
    const std::string name = c.node(l.src).name + " -> " + c.node(l.dst).name;
    EXPECT_LT(l.tier, 2) << name;
    if (is_kind(c, l.src, topo::NodeKind::kNic) && l.tier == 1) {
      EXPECT_NEAR(bytes, 8 * share, 1) << name;
      ++nics;
    } else if (is_kind(c, l.src, topo::NodeKind::kGpu) && is_kind(c, l.dst, topo::NodeKind::kNvSwitch)) {
      EXPECT_NEAR(bytes, 13 * share, 1) << name;
      ++nvlinks;
    } else if (is_kind(c, l.src, topo::NodeKind::kGpu) && is_kind(c, l.dst, topo::NodeKind::kPcieSwitch)) {
      EXPECT_NEAR(bytes, 8 * share, 1) << name;
      ++pcie;
    }
  }
  EXPECT_EQ(nics, 16);
  EXPECT_EQ(nvlinks, 16);
  EXPECT_EQ(pcie, 16);
}

// An all-to-all over the first `ranks` GPUs, its flows started one by one or with identical
// ones merged: (time in seconds, flows started, bytes per link).
struct AllToAllRun {
  double seconds = 0;
  std::uint64_t flows = 0;
  std::vector<double> link_bytes;
};
AllToAllRun all_to_all(const Machine& m, std::size_t ranks, bool merge) {
  const NetworkLayout layout(m);
  topo::Router router(m.cluster);
  sim::Simulator sim;
  net::FlowNetwork net(sim, layout.capacities());
  CollectiveRunner runner(sim, net, router, layout, merge);
  CollectiveSpec s = spec_of(m, CollectiveOp::kAllToAll, mebibytes(256));
  s.ranks.resize(ranks);
  auto schedule = build_schedule(layout.schedules(), s, CollectiveAlgorithm::kDirect, nullptr);
  AllToAllRun out;
  runner.start(s, std::make_shared<const Schedule>(std::move(*schedule)), CollectiveAlgorithm::kDirect, Protocol::kSimple,
               [&](const CollectiveOutcome& o) { out.seconds = to_seconds(o.end - o.start); });
  sim.run();
  out.flows = net.flows_started();
  for (std::uint32_t l = 0; l < net.link_count(); ++l) out.link_bytes.push_back(static_cast<double>(net.link_stats(topo::LinkId{l}).bytes.value()));
  return out;
}

TEST(AllToAllAggregation, MergedFlowsGiveTheUnmergedResult) {
  // 64 and 128 ranks (8 and 16 DGX H100): the all-to-all's transfers through one PXN proxy's
  // shared connection to one remote GPU (schedule.h, ProxyRelay) and flows of a round with the
  // same path and size start as one weighted flow. Under max-min sharing identical flows get
  // identical rates, so the time and every link's bytes equal those of one flow per transfer
  // (merge off: every copy its own flow), to rounding, with fewer flows.
  for (int servers : {8, 16}) {
    SCOPED_TRACE(servers);
    const Machine m = rail_servers(servers);
    const AllToAllRun merged = all_to_all(m, static_cast<std::size_t>(8 * servers), true);
    const AllToAllRun single = all_to_all(m, static_cast<std::size_t>(8 * servers), false);
    EXPECT_NEAR(merged.seconds, single.seconds, single.seconds * 1e-9);
    ASSERT_EQ(merged.link_bytes.size(), single.link_bytes.size());
    for (std::size_t l = 0; l < merged.link_bytes.size(); ++l) EXPECT_NEAR(merged.link_bytes[l], single.link_bytes[l], 1.0) << l;
    // One by one: the 56 pairs inside each server; per GPU, its handovers to the 6 proxies of
    // rails whose NIC is not on its PCIe switch, once per other server; the 64 (s-1) sends of
    // each server's GPUs to the other servers' GPUs.
    const auto s = static_cast<std::uint64_t>(servers);
    EXPECT_EQ(single.flows, 56 * s + 8 * s * 6 * (s - 1) + 64 * s * (s - 1));
    // Merged: a GPU's handovers to proxy j ride with its own share for GPU j (same path, same
    // size); to each remote GPU a server sends on two connections: its proxy's (the proxy and
    // the 6 GPUs that hand over to it) and the PCIe sibling's, which reaches the NIC itself.
    EXPECT_EQ(merged.flows, 56 * s + 2 * 8 * s * (s - 1));
  }
}

TEST(Collnet, InNetworkReductionSendsEachSliceOnceUpAndOnceDown) {
  // 64 DGX H100 on the rail-optimized NDR fabric with SHARP switches (two leaves per rail): a
  // ring reduce-scatter inside each server leaves GPU j with slice j (S/8), which goes up rail
  // j's aggregation tree (its leaf, then one spine above both leaves) and comes back reduced, and
  // a ring all-gather spreads the slices. Every NIC sends and receives S/8 (a ring would send
  // 2(n-1)/n S/8), each of the 16 leaves sends S/8 to its rail's root and gets S/8 back, and a
  // GPU's NVLink carries its ring edges, 2(g-1)/g S: at 0.8 x 450 GB/s that binds, so
  // t = 2(g-1)/g S / B_nvlink + latency.
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json",
                                 {"/servers/0/count=64", "/fabric/in_network_reduction=true"});
  const topo::Cluster& c = m.cluster;
  CollectiveSimulator sim(m);
  const Bytes S = gibibytes(1);
  std::vector<LinkActivity> activity;
  std::string why;
  const auto r = sim.run_fixed(spec_of(m, CollectiveOp::kAllReduce, S), CollectiveAlgorithm::kCollnet, Protocol::kSimple, &why, &activity);
  ASSERT_TRUE(r) << why;
  const double slice = static_cast<double>(S.value()) / 8;
  int nic_up = 0, nic_down = 0, leaf_up = 0, spine_down = 0;
  double nvlink_rate = 0, busiest_nvlink = 0;
  for (const LinkActivity& a : activity) {
    if (a.link.value >= c.link_count() || a.bytes.value() == 0) continue;
    const topo::LinkInfo& l = c.link(a.link);
    const double bytes = static_cast<double>(a.bytes.value());
    const topo::NodeKind from = c.node(l.src).kind, to = c.node(l.dst).kind;
    if (from == topo::NodeKind::kNic && to == topo::NodeKind::kLeafSwitch) {
      EXPECT_EQ(bytes, slice);
      ++nic_up;
    } else if (from == topo::NodeKind::kLeafSwitch && to == topo::NodeKind::kNic) {
      EXPECT_EQ(bytes, slice);
      ++nic_down;
    } else if (from == topo::NodeKind::kLeafSwitch && to == topo::NodeKind::kSpineSwitch) {
      EXPECT_EQ(bytes, slice);
      ++leaf_up;
    } else if (from == topo::NodeKind::kSpineSwitch && to == topo::NodeKind::kLeafSwitch) {
      EXPECT_EQ(bytes, slice);
      ++spine_down;
    } else if (from == topo::NodeKind::kGpu && to == topo::NodeKind::kNvSwitch) {
      busiest_nvlink = std::max(busiest_nvlink, bytes);
      nvlink_rate = sim.layout().usable_bandwidth(a.link).value();
    }
  }
  EXPECT_EQ(nic_up, 512);
  EXPECT_EQ(nic_down, 512);
  EXPECT_EQ(leaf_up, 16);
  EXPECT_EQ(spine_down, 16);
  EXPECT_EQ(busiest_nvlink, 2 * 7.0 / 8 * static_cast<double>(S.value()));
  const double bandwidth_term = busiest_nvlink / nvlink_rate;
  EXPECT_GE(to_seconds(r->time), bandwidth_term);
  EXPECT_LE(to_seconds(r->time), bandwidth_term + 1e-3);
  // Without SHARP switches it does not apply.
  const Machine no_sharp = rail_servers(4);  // outlives its simulator
  CollectiveSimulator plain(no_sharp);
  EXPECT_FALSE(plain.run_fixed(spec_of(no_sharp, CollectiveOp::kAllReduce, S), CollectiveAlgorithm::kCollnet, Protocol::kSimple, &why));
  EXPECT_NE(why.find("in_network_reduction"), std::string::npos) << why;
}

TEST(GpuNicAffinity, EachGpuTakesTheNicOfItsPcieSwitchInTurn) {
  // DGX H100 template: 4 PCIe switches, GPUs 2k and 2k+1 and NICs 2k and 2k+1 on switch k: GPU i
  // takes NIC i. With 4 NICs for 8 GPUs (NIC m on the switch of GPUs 2m, 2m+1... the template's
  // floor(m n / nics) rule), the two GPUs of a switch share its one NIC.
  const Machine m = rail_servers(2);
  const ScheduleContext ctx(m.cluster);
  for (std::size_t i = 0; i < m.cluster.gpus().size(); ++i) {
    EXPECT_EQ(ctx.rail_of(m.cluster.gpus()[i]), static_cast<std::int32_t>(i % 8));
  }
  const Machine four = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json",
                                    {"/servers/0/count=2", "/servers/0/nics=4"});
  const ScheduleContext ctx4(four.cluster);
  for (std::size_t i = 0; i < four.cluster.gpus().size(); ++i) {
    EXPECT_EQ(ctx4.rail_of(four.cluster.gpus()[i]), static_cast<std::int32_t>((i % 8) / 2));
  }
}

TEST(GpuNicAffinity, ASenderNeedsAProxyExactlyWhereItDoesNotReachTheRailsNicOverPcie) {
  // nic_route's per-GPU places (the rails each GPU reaches over PCIe) against reaches_over_pcie,
  // for every pair of GPUs on two servers and every rail: DGX H100 (a NIC per GPU, two per PCIe
  // switch) and 4 NICs for 8 GPUs (a NIC per switch).
  const std::vector<std::vector<std::string>> variants = {
      {"/servers/0/count=2"}, {"/servers/0/count=2", "/servers/0/nics=4"}};
  std::size_t proxies = 0, direct = 0;
  for (const auto& sets : variants) {
    const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json", sets);
    const ScheduleContext ctx(m.cluster);
    for (const topo::NodeId src : m.cluster.gpus()) {
      for (const topo::NodeId dst : m.cluster.gpus()) {
        if (m.cluster.node(src).server == m.cluster.node(dst).server) {
          EXPECT_FALSE(ctx.nic_route(src, dst, 0));
          continue;
        }
        for (std::int32_t rail = PlannedFlow::kDestinationRail; rail < 9; ++rail) {
          const auto r = ctx.nic_route(src, dst, rail);
          const std::int32_t used = rail == PlannedFlow::kDestinationRail ? ctx.rail_of(dst) : rail;
          const topo::NodeId send = ctx.rail_nic(m.cluster.node(src).server, used);
          ASSERT_EQ(r.has_value(), send.valid());
          if (!r) continue;
          EXPECT_EQ(r->send_nic, send);
          EXPECT_EQ(r->recv_nic, ctx.rail_nic(m.cluster.node(dst).server, used));
          EXPECT_EQ(r->send_proxy.valid(), !ctx.reaches_over_pcie(src, send));
          (r->send_proxy.valid() ? proxies : direct) += 1;
        }
      }
    }
  }
  EXPECT_GT(proxies, direct);  // most GPUs reach one or two rails' NICs over PCIe
  EXPECT_GT(direct, 0u);
}

// Point-to-point transfers between two servers, one after another on one runner: each a round of
// one flow from GPU 0 of the first server to GPU 8 of the second, over rail `rail`. Returns each
// transfer's time and the bytes every link carried, over all of them.
struct SequentialRun {
  std::vector<double> seconds;
  std::vector<double> link_bytes;
};
SequentialRun transfers(const Machine& m, const std::vector<std::int32_t>& rails) {
  const NetworkLayout layout(m);
  topo::Router router(m.cluster);
  sim::Simulator sim;
  net::FlowNetwork net(sim, layout.capacities());
  CollectiveRunner runner(sim, net, router, layout);
  SequentialRun out;
  for (std::int32_t rail : rails) {
    Schedule schedule;
    PlannedFlow f;
    f.src = m.cluster.gpus()[0];
    f.dst = m.cluster.gpus()[8];
    f.bytes = mebibytes(64);
    f.rail = rail;
    schedule.rounds.emplace_back().flows = {f};
    CollectiveSpec s = spec_of(m, CollectiveOp::kSendRecv, f.bytes);
    s.ranks = {f.src, f.dst};
    runner.start(s, std::make_shared<const Schedule>(std::move(schedule)), CollectiveAlgorithm::kDirect, Protocol::kSimple,
                 [&](const CollectiveOutcome& o) { out.seconds.push_back(to_seconds(o.end - o.start)); });
    sim.run();
  }
  for (std::uint32_t l = 0; l < net.link_count(); ++l) out.link_bytes.push_back(static_cast<double>(net.link_stats(topo::LinkId{l}).bytes.value()));
  return out;
}

TEST(CollectiveRunner, FlowsBetweenServersAreKeptPerEndsAndRail) {
  // Under adaptive routing the runner prepares a flow between servers once per (src, dst, rail)
  // and reuses it (collective_runner.h, flow_slots_). The same ends over rails 0 and 3 leave by
  // different NICs, so a runner that kept the first for the second would put both on NIC 0: the
  // sequence on one runner must give each transfer the time it takes on a runner of its own, and
  // the links the sum of their bytes.
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json", {"/servers/0/count=2"});
  ASSERT_EQ(m.cluster.routing(), topo::Routing::kAdaptive);
  const std::vector<std::int32_t> rails = {0, 3, 0, PlannedFlow::kDestinationRail, 3};
  const SequentialRun together = transfers(m, rails);
  ASSERT_EQ(together.seconds.size(), rails.size());
  std::vector<double> bytes(together.link_bytes.size(), 0.0);
  for (std::size_t i = 0; i < rails.size(); ++i) {
    const SequentialRun alone = transfers(m, {rails[i]});
    EXPECT_EQ(together.seconds[i], alone.seconds[0]) << i;
    for (std::size_t l = 0; l < bytes.size(); ++l) bytes[l] += alone.link_bytes[l];
  }
  int nics = 0;
  for (std::size_t l = 0; l < bytes.size(); ++l) {
    EXPECT_NEAR(together.link_bytes[l], bytes[l], 1.0) << l;
    if (l >= m.cluster.link_count()) continue;  // the network's own (reduction engines)
    const auto& link = m.cluster.link(topo::LinkId{static_cast<std::uint32_t>(l)});
    if (is_kind(m.cluster, link.src, topo::NodeKind::kNic) && bytes[l] > 0 && link.tier == 1) ++nics;
  }
  EXPECT_GE(nics, 2);  // rails 0 and 3 leave by NICs of their own
}

}  // namespace
}  // namespace cs::coll
