// Rings on servers whose GPUs are joined point to point (sim/collectives/mesh_rings.h): every
// ring hop is a direct link, the rings use the pairs' link multiplicities, and the ring
// all-reduce takes its closed form  launch + 2(n-1)(s + L) + 2(n-1)/n S / (R u e)  (R rings,
// u one link's rate, e the nvlink class efficiency, s its Simple step latency, L its wire
// latency), i.e. busbw = R u e.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/mesh_rings.h"
#include "sim/collectives/schedule.h"
#include "topology/router.h"

namespace cs::coll {
namespace {

const std::string kClusters = std::string(CS_SOURCE_DIR) + "/configs/clusters/";

std::vector<topo::NodeId> gpus_of(const Machine& m, std::vector<int> idx = {}) {
  const auto g = m.cluster.gpus();
  if (idx.empty()) return {g.begin(), g.end()};
  std::vector<topo::NodeId> out;
  for (int i : idx) out.push_back(g[static_cast<std::size_t>(i)]);
  return out;
}

// Units of one link (`unit` bytes/s) on the direct link from a to b; 0 when not joined.
int direct_units(const topo::Cluster& c, topo::NodeId a, topo::NodeId b, double unit) {
  const auto l = c.find_link(a, b);
  if (!l) return 0;
  return static_cast<int>(c.link(*l).bandwidth.value() / unit + 0.5);
}

// Rings per directed GPU pair; fails when a hop is not a direct link or a pair carries more
// rings than it has links.
std::map<std::pair<std::size_t, std::size_t>, int> check_rings(const topo::Cluster& c,
                                                               const std::vector<topo::NodeId>& gpus,
                                                               const std::vector<std::vector<std::size_t>>& rings,
                                                               double unit) {
  std::map<std::pair<std::size_t, std::size_t>, int> use;
  for (const auto& r : rings) {
    EXPECT_EQ(r.size(), gpus.size());
    EXPECT_EQ(std::set<std::size_t>(r.begin(), r.end()).size(), gpus.size());  // a permutation
    for (std::size_t k = 0; k < r.size(); ++k) ++use[{r[k], r[(k + 1) % r.size()]}];
  }
  for (const auto& [arc, n] : use) {
    const int units = direct_units(c, gpus[arc.first], gpus[arc.second], unit);
    EXPECT_GT(units, 0) << "ring hop " << arc.first << "->" << arc.second << " is not a direct link";
    EXPECT_LE(n, units) << arc.first << "->" << arc.second;
  }
  return use;
}

TEST(MeshRings, Dgx1HasSixRingsOfNvlinkHopsThatUseTheDoubledLinks) {
  // Each GPU has 6 links out and 6 in, so at most 6 directed rings; the doubled pairs form a
  // Hamiltonian cycle (0-3-2-1-5-6-7-4), used twice each way, and the single links another.
  const Machine m = load_machine(kClusters + "dgx1-v100.json");
  const auto gpus = gpus_of(m);
  const auto rings = mesh_rings(m.cluster, gpus);
  ASSERT_EQ(rings.size(), 6u);
  const auto use = check_rings(m.cluster, gpus, rings, 25e9);
  // 6 rings x 8 hops = 48 = every link of every pair in both directions: all 24 links busy.
  int hops = 0;
  for (const auto& [arc, n] : use) {
    EXPECT_EQ(n, direct_units(m.cluster, gpus[arc.first], gpus[arc.second], 25e9));
    hops += n;
  }
  EXPECT_EQ(hops, 48);
}

TEST(MeshRings, Mi300xHasSevenRingsCoveringEveryLinkOnceEachWay) {
  // K8 with both directions decomposes into 7 directed Hamiltonian cycles (Tillson 1980).
  const Machine m = load_machine(kClusters + "mi300x-8.json");
  const auto gpus = gpus_of(m);
  const auto rings = mesh_rings(m.cluster, gpus);
  ASSERT_EQ(rings.size(), 7u);
  const auto use = check_rings(m.cluster, gpus, rings, 64e9);
  EXPECT_EQ(use.size(), 56u);  // all 8 x 7 directed pairs
  for (const auto& [arc, n] : use) EXPECT_EQ(n, 1);
}

TEST(MeshRings, FullMeshSubsetsReachTillsonsDecompositions) {
  // k GPUs of the full mesh: each has k-1 units out, so at most k-1 rings. The complete
  // symmetric digraph on k vertices splits into k-1 directed Hamiltonian cycles for every k
  // except 4 and 6 (Tillson 1980), where k-2 is the most; k = 2 is one 2-cycle.
  const Machine m = load_machine(kClusters + "mi300x-8.json");
  const std::map<int, std::size_t> expected = {{2, 1}, {3, 2}, {4, 2}, {5, 4}, {6, 4}, {7, 6}, {8, 7}};
  for (const auto& [k, rings] : expected) {
    std::vector<int> idx;
    for (int i = 0; i < k; ++i) idx.push_back(i);
    const auto gpus = gpus_of(m, idx);
    const auto found = mesh_rings(m.cluster, gpus);
    EXPECT_EQ(found.size(), rings) << k << " GPUs";
    check_rings(m.cluster, gpus, found, 64e9);
  }
}

TEST(MeshRings, SubsetsKeepToDirectLinksOrFallBackWhenNoneExists) {
  const Machine m = load_machine(kClusters + "dgx1-v100.json");
  // GPUs 0, 1, 5, 4: the square 0-1 (1 link), 1-5 (2), 5-4 (1), 4-0 (2); 0-5 and 1-4 not
  // joined. One Hamiltonian cycle, limited by its single links to one ring each way.
  const auto square = gpus_of(m, {0, 1, 5, 4});
  const auto rings = mesh_rings(m.cluster, square);
  EXPECT_EQ(rings.size(), 2u);
  check_rings(m.cluster, square, rings, 25e9);
  // GPUs 0, 5, 6: 0 is joined to neither, so no ring of direct links exists.
  EXPECT_TRUE(mesh_rings(m.cluster, gpus_of(m, {0, 5, 6})).empty());
  CollectiveSpec s;
  s.op = CollectiveOp::kAllReduce;
  s.size = mebibytes(1);
  s.ranks = gpus_of(m, {0, 5, 6});
  const ScheduleContext ctx(m.cluster);
  const auto sched = build_schedule(ctx, s, CollectiveAlgorithm::kRing, nullptr);
  ASSERT_TRUE(sched.has_value());
  EXPECT_EQ(sched->rounds[0].flows.size(), 3u);  // one channel in rank order
}

TEST(MeshRings, NvswitchServersKeepOneRankOrderRing) {
  const Machine m = load_machine(kClusters + "dgx-h100.json");
  EXPECT_TRUE(mesh_rings(m.cluster, gpus_of(m)).empty());
}

TEST(MeshRings, RingSchedulesCrossOnlyDirectLinksInsideServers) {
  for (const char* file : {"dgx1-v100.json", "mi300x-8.json", "dgx1-v100-4node.json", "mi300x-4node.json"}) {
    SCOPED_TRACE(file);
    const Machine m = load_machine(kClusters + file);
    const ScheduleContext ctx(m.cluster);
    topo::Router router(m.cluster);
    CollectiveSpec s;
    s.op = CollectiveOp::kAllReduce;
    s.size = mebibytes(64);
    s.ranks = gpus_of(m);
    const auto sched = build_schedule(ctx, s, CollectiveAlgorithm::kRing, nullptr);
    ASSERT_TRUE(sched.has_value());
    int intra = 0;
    for (const PlannedFlow& f : sched->rounds[0].flows) {
      if (m.cluster.node(f.src).server != m.cluster.node(f.dst).server) continue;
      ++intra;
      const auto path = router.route(f.src, f.dst, f.channel);
      ASSERT_EQ(path.size(), 1u) << m.cluster.node(f.src).name << " -> " << m.cluster.node(f.dst).name;
      EXPECT_EQ(m.cluster.link(path[0]).link_class, hw::LinkClass::kNvlink);
    }
    EXPECT_GT(intra, 0);
  }
}

TEST(MeshRings, MultiServerChannelsLeaveAndEnterEachServerThroughDistinctGpus) {
  // Channel c leaves each server from local GPU c-1 and enters at a GPU no other channel enters
  // by: 8 channels, every GPU sends one channel across the network and receives one. On four
  // DGX-1 (4 EDR NICs each, one switch) that spreads 2 channels per NIC each way, so the ring
  // reaches the NICs' bound: busbw = 4 x 12.5 GB/s x 4096/4122 (InfiniBand packets of 4096 bytes
  // and 26 bytes of headers) = 49.7 GB/s. The NICs' PCIe Gen3 x16 links (16 GB/s x 0.849 =
  // 13.6 GB/s each) do not bind.
  const Machine m = load_machine(kClusters + "dgx1-v100-4node.json");
  const ScheduleContext ctx(m.cluster);
  CollectiveSpec s;
  s.op = CollectiveOp::kAllReduce;
  s.size = gibibytes(1);
  s.ranks = gpus_of(m);
  const auto sched = build_schedule(ctx, s, CollectiveAlgorithm::kRing, nullptr);
  ASSERT_TRUE(sched.has_value());
  std::map<topo::NodeId, int> sends, receives;
  for (const PlannedFlow& f : sched->rounds[0].flows) {
    if (m.cluster.node(f.src).server == m.cluster.node(f.dst).server) continue;
    ++sends[f.src];
    ++receives[f.dst];
  }
  EXPECT_EQ(sends.size(), 32u);
  EXPECT_EQ(receives.size(), 32u);
  for (const auto& [gpu, n] : sends) EXPECT_EQ(n, 1) << m.cluster.node(gpu).name;
  for (const auto& [gpu, n] : receives) EXPECT_EQ(n, 1) << m.cluster.node(gpu).name;
  CollectiveSimulator sim(m);
  const auto r = sim.run_fixed(s, CollectiveAlgorithm::kRing, Protocol::kSimple, nullptr);
  ASSERT_TRUE(r.has_value());
  const double busbw = static_cast<double>(s.size.value()) / to_seconds(r->time) * 2 * 31 / 32;
  const double bound = 4 * 12.5e9 * 4096.0 / 4122.0;
  EXPECT_LT(busbw, bound);
  EXPECT_GT(busbw, 0.95 * bound);  // the latency terms take the rest
}

// launch + 2(n-1)(s + L) + 2(n-1)/n S / (R u e) for the ring all-reduce, Simple protocol.
double ring_closed_form(const Machine& m, int n, int rings, double unit, Bytes size) {
  const auto& nv = m.protocol.of(hw::LinkClass::kNvlink);
  const double a = to_seconds(nv.step_latency) + to_seconds(m.cluster.link(m.cluster.out_links(m.cluster.gpus()[0])[0]).latency);
  return to_seconds(m.protocol.launch_latency) + 2.0 * (n - 1) * a +
         2.0 * (n - 1) / n * static_cast<double>(size.value()) / (rings * unit * nv.efficiency);
}

double simulated_ring(const Machine& m, std::vector<topo::NodeId> ranks, Bytes size) {
  CollectiveSimulator sim(m);
  CollectiveSpec s;
  s.op = CollectiveOp::kAllReduce;
  s.size = size;
  s.ranks = std::move(ranks);
  std::string why;
  const auto r = sim.run_fixed(s, CollectiveAlgorithm::kRing, Protocol::kSimple, &why);
  EXPECT_TRUE(r.has_value()) << why;
  return r ? to_seconds(r->time) : -1;
}

TEST(MeshRings, RingAllReduceOnAConstructedMeshTakesItsClosedForm) {
  // 4 GPUs in a square of doubled NVLink2 links (25 GB/s each), no diagonals. The smallest
  // direct link is the 50 GB/s pair, so u = 50 GB/s and each pair has one unit each way: the
  // square's cycle once each way, R = 2, busbw = 2 x 50 x e GB/s (the same as 4 rings of 25).
  const std::string text = R"({"servers": [{"template": "mesh", "gpu": "V100-SXM2-32GB", "gpus": 4,
      "nvlink": "NVLink2", "mesh": [{"gpus": [0, 1], "links": 2}, {"gpus": [1, 2], "links": 2},
      {"gpus": [2, 3], "links": 2}, {"gpus": [3, 0], "links": 2}]}]})";
  const Machine m = build_machine(ConfigDocument::parse(text, "square.json"));
  ASSERT_EQ(mesh_rings(m.cluster, gpus_of(m)).size(), 2u);
  const Bytes S = mebibytes(256);
  const double expected = ring_closed_form(m, 4, 2, 50e9, S);
  EXPECT_NEAR(simulated_ring(m, gpus_of(m), S), expected, expected * 1e-3);
}

TEST(MeshRings, Dgx1AndMi300xAllReduceTakeTheirClosedForms) {
  const Bytes S = gibibytes(1);
  const Machine dgx1 = load_machine(kClusters + "dgx1-v100.json");
  const double t1 = ring_closed_form(dgx1, 8, 6, 25e9, S);  // busbw 6 x 25 x 0.8 = 120 GB/s
  EXPECT_NEAR(simulated_ring(dgx1, gpus_of(dgx1), S), t1, t1 * 1e-3);
  const Machine mi = load_machine(kClusters + "mi300x-8.json");
  const double t2 = ring_closed_form(mi, 8, 7, 64e9, S);  // busbw 7 x 64 x 0.8 = 358.4 GB/s
  EXPECT_NEAR(simulated_ring(mi, gpus_of(mi), S), t2, t2 * 1e-3);
}

}  // namespace
}  // namespace cs::coll
