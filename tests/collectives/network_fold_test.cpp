// Folding a symmetric collective onto one server's flows (sim/collectives/network_fold.h,
// topology/server_orbits.h): the folded run gives the unfolded run's time, flows, wire bytes and
// every link's bytes and busy time, on fabrics where the symmetry holds; elsewhere it does not
// fold, and says so.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_fold.h"
#include "sim/collectives/network_layout.h"
#include "sim/collectives/schedule.h"
#include "sim/engine/simulator.h"
#include "sim/network/flow_network.h"
#include "topology/server_orbits.h"

namespace cs::coll {
namespace {

Machine machine(const std::string& cluster, std::vector<std::string> sets) {
  sets.push_back("/fabric/routing=adaptive");
  return load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/" + cluster + ".json", sets);
}

CollectiveSpec spec_of(const Machine& m, CollectiveOp op, Bytes size, std::size_t ranks) {
  CollectiveSpec s;
  s.op = op;
  s.size = size;
  s.algorithm = CollectiveAlgorithm::kDirect;
  s.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().begin() + static_cast<std::ptrdiff_t>(ranks));
  return s;
}

struct FoldRun {
  CollectiveResult result;
  std::map<std::uint32_t, LinkActivity> links;
};

FoldRun run(const Machine& m, const CollectiveSpec& s, CollectiveSimulator::Folding folding,
            CollectiveAlgorithm a = CollectiveAlgorithm::kDirect) {
  CollectiveSimulator sim(m, folding);
  std::vector<LinkActivity> activity;
  FoldRun out;
  out.result = *sim.run_fixed(s, a, Protocol::kSimple, nullptr, &activity);
  for (LinkActivity& la : activity) out.links.emplace(la.link.value, std::move(la));
  return out;
}

// The time a folded run may differ by: a relative 1e-9, and a picosecond per event of the full
// run (each completion rounds up to the picosecond, and the quotient's rates, the same rationals
// summed in another order or over another common denominator, may differ in their last bits).
double time_slack(const FoldRun& full) {
  return to_seconds(full.result.time) * 1e-9 + 1e-12 * static_cast<double>(full.result.events);
}

// The folded run against every flow: the same numbers, to rounding (bytes: the quotient's double
// sums; times: time_slack). `servers` 0: a fold of the twin switches alone, every flow running.
void expect_same(const FoldRun& folded, const FoldRun& full, std::uint32_t servers) {
  EXPECT_EQ(folded.result.folded_servers, servers);
  EXPECT_EQ(full.result.folded_servers, 0u);
  EXPECT_EQ(folded.result.twin_folded, servers == 0);
  EXPECT_FALSE(full.result.twin_folded);
  const double t = time_slack(full);
  EXPECT_NEAR(to_seconds(folded.result.time), to_seconds(full.result.time), t);
  EXPECT_EQ(folded.result.flows, full.result.flows);
  EXPECT_EQ(folded.result.wire_bytes, full.result.wire_bytes);
  if (servers > 0) {
    EXPECT_LT(folded.result.events, full.result.events);
  }
  ASSERT_EQ(folded.links.size(), full.links.size());
  for (const auto& [link, a] : full.links) {
    SCOPED_TRACE(link);
    const auto it = folded.links.find(link);
    ASSERT_NE(it, folded.links.end());
    const auto bytes = static_cast<double>(a.bytes.value());
    EXPECT_NEAR(static_cast<double>(it->second.bytes.value()), bytes, 1.0 + bytes * 1e-9);
    EXPECT_NEAR(to_seconds(it->second.busy), to_seconds(a.busy), t);
  }
}

// Whether some link into a device of `kind` carried bytes.
bool reaches(const Machine& m, const FoldRun& r, topo::NodeKind kind) {
  for (const auto& [link, a] : r.links) {
    if (link >= m.cluster.link_count()) continue;  // an NVLS reduction engine (the layout's)
    if (m.cluster.node(m.cluster.link(topo::LinkId{link}).dst).kind == kind) return true;
  }
  return false;
}

TEST(NetworkFold, AllToAllWithinOneLeafBlockEqualsEveryFlow) {
  // 64 and 128 ranks of the rail-optimized NDR fabric (8 and 16 DGX H100 under one leaf per
  // rail): the servers are twins, exchanged by the group; the all-to-all folds onto server 0.
  for (int ranks : {64, 128}) {
    SCOPED_TRACE(ranks);
    const Machine m = machine("h100-rail-512", {});
    const CollectiveSpec s = spec_of(m, CollectiveOp::kAllToAll, mebibytes(256), static_cast<std::size_t>(ranks));
    expect_same(run(m, s, CollectiveSimulator::Folding::kSymmetric), run(m, s, CollectiveSimulator::Folding::kNone),
                static_cast<std::uint32_t>(ranks / 8));
  }
}

TEST(NetworkFold, AcrossLeafBlocksAndSpinesEqualsEveryFlow) {
  // Four servers per leaf block: 16 servers are 4 blocks, exchanged with their 8 leaves each
  // (the spines fixed), so traffic crosses the spines. All-to-all and the direct all-reduce (two
  // all-pairs rounds).
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  for (CollectiveOp op : {CollectiveOp::kAllToAll, CollectiveOp::kAllReduce}) {
    SCOPED_TRACE(to_string(op));
    const CollectiveSpec s = spec_of(m, op, mebibytes(64), 128);
    const FoldRun folded = run(m, s, CollectiveSimulator::Folding::kSymmetric);
    const FoldRun full = run(m, s, CollectiveSimulator::Folding::kNone);
    expect_same(folded, full, 16);
    EXPECT_TRUE(reaches(m, full, topo::NodeKind::kSpineSwitch));
  }
}

TEST(NetworkFold, OversubscribedSpinesBindTheSameWay) {
  // The 2:1 leaf-spine (4 servers per leaf, every NIC of a server on its leaf): 64 servers on 16
  // leaves, where the leaves' uplinks bind, so the quotient's scaled capacities decide the time.
  const Machine m = machine("h100-leafspine-2to1", {"/servers/0/count=64"});
  const CollectiveSpec s = spec_of(m, CollectiveOp::kAllToAll, mebibytes(64), 512);
  const FoldRun folded = run(m, s, CollectiveSimulator::Folding::kSymmetric);
  const FoldRun full = run(m, s, CollectiveSimulator::Folding::kNone);
  expect_same(folded, full, 64);
  // The uplinks bind: a leaf's 32 GPUs send 480 x S/512 each to the other leaves, over 16
  // cables of usable rate B (each NIC sends only 8 x 63 x S/512 at the same rate):
  // t = 960 (S/512) / B, plus the latency (under 2% here).
  const NetworkLayout layout(m);
  const topo::LinkId up = m.cluster.out_links(*m.cluster.find_node("spine0")).front();
  const double bound = 960.0 * (static_cast<double>(mebibytes(64).value()) / 512) / layout.usable_bandwidth(up).value();
  EXPECT_GT(to_seconds(folded.result.time), bound);
  EXPECT_NEAR(to_seconds(folded.result.time), bound, bound * 0.02);
}

TEST(NetworkFold, ThreeTierPodsEqualEveryFlow) {
  // A radix-16 three-tier fat-tree (one server per leaf, 8 leaves and 8 aggregation switches per
  // pod, 64 cores): 24 servers in 3 pods. Exchanging the first leaves of two pods closes over
  // the pods (leaves, aggregation switches, servers; the cores fixed), so every server is
  // reached and the traffic between pods crosses the cores.
  const Machine m = machine("h100-fat-tree-3tier", {"/fabric/radix=16", "/servers/0/count=24"});
  const CollectiveSpec s = spec_of(m, CollectiveOp::kAllToAll, mebibytes(16), 192);
  const FoldRun folded = run(m, s, CollectiveSimulator::Folding::kSymmetric);
  const FoldRun full = run(m, s, CollectiveSimulator::Folding::kNone);
  expect_same(folded, full, 24);
  EXPECT_TRUE(reaches(m, full, topo::NodeKind::kCoreSwitch));
  // A partial third pod (20 servers: pods of 8, 8 and 4) is no image of a full one.
  const Machine partial = machine("h100-fat-tree-3tier", {"/fabric/radix=16", "/servers/0/count=20"});
  CollectiveSimulator sim(partial);
  EXPECT_EQ(sim.fold_servers(spec_of(partial, CollectiveOp::kAllToAll, mebibytes(16), 160), CollectiveAlgorithm::kDirect), 0u);
}

TEST(NetworkFold, DoesNotFoldWhatIsNotSymmetric) {
  const Machine m = machine("h100-rail-512", {"/servers/0/count=6", "/fabric/nodes_per_leaf=4"});
  CollectiveSimulator sim(m);
  // Six servers on blocks of 4 and 2: the blocks hold different numbers of the ranks.
  EXPECT_EQ(sim.fold_servers(spec_of(m, CollectiveOp::kAllToAll, mebibytes(1), 48), CollectiveAlgorithm::kDirect), 0u);
  // Four whole servers of one block fold; 30 ranks (a partial server) do not.
  EXPECT_EQ(sim.fold_servers(spec_of(m, CollectiveOp::kAllToAll, mebibytes(1), 32), CollectiveAlgorithm::kDirect), 4u);
  EXPECT_EQ(sim.fold_servers(spec_of(m, CollectiveOp::kAllToAll, mebibytes(1), 30), CollectiveAlgorithm::kDirect), 0u);
  // Not all pairs, not direct, or static ECMP (its hash of device ids is no automorphism's).
  EXPECT_EQ(sim.fold_servers(spec_of(m, CollectiveOp::kBroadcast, mebibytes(1), 32), CollectiveAlgorithm::kDirect), 0u);
  EXPECT_EQ(sim.fold_servers(spec_of(m, CollectiveOp::kAllReduce, mebibytes(1), 32), CollectiveAlgorithm::kRing), 0u);
  const Machine ecmp = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json", {"/servers/0/count=4", "/fabric/routing=ecmp"});
  CollectiveSimulator plain(ecmp);
  EXPECT_EQ(plain.fold_servers(spec_of(ecmp, CollectiveOp::kAllToAll, mebibytes(1), 32), CollectiveAlgorithm::kDirect), 0u);
  // What does not fold runs every flow, and says so.
  const CollectiveSpec uneven = spec_of(m, CollectiveOp::kAllToAll, mebibytes(1), 48);
  EXPECT_EQ(sim.run_fixed(uneven, CollectiveAlgorithm::kDirect, Protocol::kSimple, nullptr)->folded_servers, 0u);
}

// `a` over the first `ranks` GPUs, folded by the twin switches alone and not (expect_same); the
// unfolded run's traffic crosses a switch of kind `through`.
void expect_twin_fold(const Machine& m, CollectiveOp op, CollectiveAlgorithm a, Bytes size, std::size_t ranks,
                      topo::NodeKind through) {
  SCOPED_TRACE(std::string(to_string(op)) + " " + to_string(a));
  CollectiveSpec s = spec_of(m, op, size, ranks);
  s.algorithm = a;
  const FoldRun full = run(m, s, CollectiveSimulator::Folding::kNone, a);
  expect_same(run(m, s, CollectiveSimulator::Folding::kSymmetric, a), full, 0);
  EXPECT_TRUE(reaches(m, full, through));
}

TEST(NetworkFold, TwinSwitchesFoldAnyScheduleOnAThreeTierFatTree) {
  // Radix 16: 32 servers in 4 pods, 64 cores in 8 classes of 8 twins. The tree's and the
  // ring's edges between pods spread over the cores; their 8 links from an aggregation switch
  // (and into one) are an orbit of the switch exchanges, loaded alike.
  const Machine m = machine("h100-fat-tree-3tier", {"/fabric/radix=16", "/servers/0/count=32"});
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kTree, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kHierarchical}) {
    expect_twin_fold(m, CollectiveOp::kAllReduce, a, mebibytes(64), 256, topo::NodeKind::kCoreSwitch);
  }
}

TEST(NetworkFold, TwinSwitchesFoldARailFabricsSpines) {
  // 16 servers, 4 per leaf block, 64 spines (twins): a tree of an odd number of servers (13)
  // and an all-gather ring, which no group of servers maps onto themselves.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  expect_twin_fold(m, CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, mebibytes(32), 104, topo::NodeKind::kSpineSwitch);
  expect_twin_fold(m, CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, mebibytes(32), 128, topo::NodeKind::kSpineSwitch);
}

TEST(NetworkFold, TwinFoldKeepsReductionEnginesAndNvlsRounds) {
  // NVLS-tree across 13 servers: its in-server reductions cross the servers' NVLS engines
  // (links outside the cluster's, which the exchanges fix), its tree edges the spines; folded,
  // the same numbers. Single-server NVLS (an NVLS round, its pipeline fill taken from its own
  // paths, all inside the server) folds too, fill included: the same time, flows and links.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  expect_twin_fold(m, CollectiveOp::kAllReduce, CollectiveAlgorithm::kNvlsTree, mebibytes(32), 104,
                   topo::NodeKind::kSpineSwitch);
  CollectiveSpec s = spec_of(m, CollectiveOp::kAllReduce, mebibytes(32), 8);
  s.algorithm = CollectiveAlgorithm::kNvls;
  const FoldRun sym = run(m, s, CollectiveSimulator::Folding::kSymmetric, CollectiveAlgorithm::kNvls);
  const FoldRun none = run(m, s, CollectiveSimulator::Folding::kNone, CollectiveAlgorithm::kNvls);
  expect_same(sym, none, 0);  // (checked: dropping the fill on the quotient fails the time)
}

// A twin fold of 16 servers of the rail fabric, four per leaf, on a network of its own.
struct TwinFoldOfARailFabric {
  Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  std::optional<topo::ServerOrbits> twins = topo::ServerSymmetry(m.cluster).twin_orbits();
  NetworkLayout layout{m};
  sim::Simulator sim;
  net::FlowNetwork net{sim, layout.capacities()};
  NetworkFold::Scratch scratch;
  NetworkFold fold{m.cluster, twins.value(), net, scratch};
};

TEST(NetworkFold, ABrokenFoldStopsItsSimulation) {
  // A folded run whose fold breaks is discarded and run again on every link, so mark_broken stops
  // the network's simulator once the event that broke it is done: the attempt costs up to its
  // first refused transfer. The events after it stay queued, never run.
  TwinFoldOfARailFabric t;
  sim::Simulator& sim = t.sim;
  NetworkFold& fold = t.fold;
  int ran = 0;
  for (int k = 1; k <= 3; ++k) {
    sim.schedule_at(kTimeZero + microseconds(k), sim::Phase::kDispatch, [&, k] {
      ++ran;
      if (k == 2) fold.mark_broken();
    });
  }
  sim.run();
  EXPECT_TRUE(fold.broken());
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(sim.pending_events(), 1u);
  // Marking it again changes nothing: the next run finishes the queue.
  fold.mark_broken();
  sim.run();
  EXPECT_EQ(ran, 3);
}

TEST(NetworkFold, UnfoldSharesAQuotientLinksBytesAmongItsOrbit) {
  // The twin fold of a rail fabric: a leaf's link to a spine stands for the 64 of its orbit
  // (N = 1 server), each carrying 1/64 of the quotient link's bytes, rounded to a byte.
  TwinFoldOfARailFabric t;
  const Machine& m = t.m;
  const std::optional<topo::ServerOrbits>& twins = t.twins;
  const NetworkFold& fold = t.fold;
  for (std::uint32_t i = 0; i < m.cluster.link_count(); ++i) {
    const topo::LinkId l{i};
    if (m.cluster.node(m.cluster.link(l).dst).kind != topo::NodeKind::kSpineSwitch || twins->orbit(l) != l) continue;
    const NetworkFold::Unfolded u = fold.unfold(l, Bytes{6400 + 31});
    EXPECT_EQ(u.links, twins->members(l));
    EXPECT_EQ(u.links.size(), 64u);
    EXPECT_EQ(u.bytes, Bytes{100});  // 6431 / 64 = 100.48
    EXPECT_EQ(fold.unfold(l, Bytes{6400 + 32}).bytes, Bytes{101});  // 100.5 rounds up
    // The same share of another amount (a busy interval's bytes), without the orbit again.
    EXPECT_DOUBLE_EQ(u.share, 1.0 / 64);
    EXPECT_EQ(u.share_of(Bytes{6400 + 32}), Bytes{101});
    EXPECT_EQ(u.share_of(Bytes{640}), Bytes{10});
    return;
  }
  FAIL() << "no leaf-to-spine link";
}

TEST(ServerOrbits, TwinOrbitsFixEveryServer) {
  // The switch exchanges alone: one "server", the spines' links in orbits of 64 (a rail's leaf
  // to each spine), every link of a server its own orbit.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  const topo::Cluster& c = m.cluster;
  const auto twins = topo::ServerSymmetry(c).twin_orbits();
  ASSERT_TRUE(twins.has_value());
  EXPECT_TRUE(twins->twins_only());
  EXPECT_EQ(twins->servers(), 1u);
  EXPECT_EQ(twins->representative(), -1);
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(topo::LinkId{i});
    const std::size_t size = twins->orbit_size(twins->orbit(topo::LinkId{i}));
    const bool spine = c.node(l.src).kind == topo::NodeKind::kSpineSwitch || c.node(l.dst).kind == topo::NodeKind::kSpineSwitch;
    EXPECT_EQ(size, spine ? 64u : 1u) << "link " << i;
  }
  // A fabric without twin switches (a single server) has no such group.
  const Machine one = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json", {});
  EXPECT_FALSE(topo::ServerSymmetry(one.cluster).twin_orbits().has_value());
}

TEST(ServerOrbits, LinkOrbitsOfARailFabric) {
  // 16 servers, 4 per leaf block, 8 rails, 64 spines: an orbit holds a server link's 16 copies
  // (one per server), a rail's leaf-spine links in one direction (4 blocks x 64 spines: the
  // spines are twins, exchanged pairwise), and a leaf's link to a NIC the 16 of its rail.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  const topo::Cluster& c = m.cluster;
  topo::ServerSymmetry symmetry(c);
  const auto orbits = symmetry.orbits(c.gpus());
  ASSERT_TRUE(orbits.has_value());
  EXPECT_EQ(orbits->representative(), 0);
  EXPECT_EQ(orbits->servers(), 16u);
  std::map<std::string, std::size_t> sizes;
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(topo::LinkId{i});
    const std::string kinds = std::string(to_string(c.node(l.src).kind)) + ">" + to_string(c.node(l.dst).kind);
    const std::size_t size = orbits->orbit_size(orbits->orbit(topo::LinkId{i}));
    const auto [it, fresh] = sizes.try_emplace(kinds, size);
    EXPECT_EQ(it->second, size) << kinds << " link " << i << " (orbits of one kind differ in size)";
  }
  EXPECT_EQ(sizes.at("gpu>nvswitch"), 16u);
  EXPECT_EQ(sizes.at("nic>leaf_switch"), 16u);
  EXPECT_EQ(sizes.at("leaf_switch>spine_switch"), 256u);
  EXPECT_EQ(sizes.at("spine_switch>leaf_switch"), 256u);
  // Every link of an orbit is one the group maps onto another: same rate, same kinds of ends.
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkId root = orbits->orbit(topo::LinkId{i});
    EXPECT_EQ(c.link(root).bandwidth, c.link(topo::LinkId{i}).bandwidth);
  }
}

TEST(BlockRotation, ShiftsTheLeafBlocksOfARailFabric) {
  // 16 servers, 4 per leaf block: rho moves each block onto the next, device by device (the
  // leaves with their servers), fixing the spines, and is an automorphism: every link maps onto
  // a link between the images of its ends with the same rate, latency and class. The orbits are
  // a server link's 4 copies (one per block; the servers of a block are not exchanged), a
  // leaf's links to the spines of its rail (4 blocks x 64 spines), a link into a NIC from a leaf
  // the 4 of its slot.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  const topo::Cluster& c = m.cluster;
  const auto rotation = topo::ServerSymmetry(c).block_rotation(c.gpus());
  ASSERT_TRUE(rotation.has_value());
  EXPECT_EQ(rotation->blocks(), 4u);
  EXPECT_EQ(rotation->orbits().servers(), 4u);
  EXPECT_FALSE(rotation->orbits().twins_only());
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<topo::LinkId>> between;
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(topo::LinkId{i});
    between[{l.src.value, l.dst.value}].push_back(topo::LinkId{i});
  }
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(topo::LinkId{i});
    const auto it = between.find({rotation->image(l.src).value, rotation->image(l.dst).value});
    ASSERT_NE(it, between.end()) << "link " << i;
    const topo::LinkInfo& image = c.link(it->second.front());
    EXPECT_EQ(image.bandwidth, l.bandwidth);
    EXPECT_EQ(image.latency, l.latency);
    EXPECT_EQ(image.link_class, l.link_class);
  }
  for (std::uint32_t v = 0; v < c.node_count(); ++v) {
    const topo::NodeId n{v};
    const bool spine = c.node(n).kind == topo::NodeKind::kSpineSwitch;
    EXPECT_EQ(rotation->block(n) == topo::BlockRotation::kFixed, spine) << c.node(n).name;
    EXPECT_EQ(rotation->image(n, 4), n);  // rho^B is the identity
    if (c.node(n).server >= 0) {
      EXPECT_EQ(rotation->block(n), static_cast<std::uint32_t>(c.node(n).server) / 4);
      EXPECT_EQ(c.node(rotation->image(n)).server, (c.node(n).server + 4) % 16);
    }
  }
  std::map<std::string, std::size_t> sizes;
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(topo::LinkId{i});
    const std::string kinds = std::string(to_string(c.node(l.src).kind)) + ">" + to_string(c.node(l.dst).kind);
    const std::size_t size = rotation->orbits().orbit_size(rotation->orbits().orbit(topo::LinkId{i}));
    const auto [it, fresh] = sizes.try_emplace(kinds, size);
    EXPECT_EQ(it->second, size) << kinds << " link " << i;
  }
  EXPECT_EQ(sizes.at("gpu>nvswitch"), 4u);
  EXPECT_EQ(sizes.at("leaf_switch>nic"), 4u);
  EXPECT_EQ(sizes.at("leaf_switch>spine_switch"), 256u);
}

TEST(BlockRotation, NoneWithOneBlockOrPartOfABlock) {
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  const topo::ServerSymmetry symmetry(m.cluster);
  const std::span<const topo::NodeId> gpus = m.cluster.gpus();
  EXPECT_FALSE(symmetry.block_rotation(gpus.subspan(0, 32)).has_value());  // one block
  EXPECT_FALSE(symmetry.block_rotation(gpus.subspan(0, 48)).has_value());  // half of a second
  EXPECT_TRUE(symmetry.block_rotation(gpus.subspan(0, 64)).has_value());   // two blocks of 4 servers
  const Machine one = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json", {});
  EXPECT_FALSE(topo::ServerSymmetry(one.cluster).block_rotation(one.cluster.gpus()).has_value());
}

TEST(BlockRotation, MapsARingAcrossTheBlocksNotATree) {
  // A ring over GPU 0 of every server, in server order, crosses every block: the rotation maps
  // its flows onto its flows (coll::rotation_maps); a binary tree's root stays where it is, so
  // no rotation maps a tree onto itself.
  const Machine m = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"});
  ASSERT_TRUE(fabric_folds(m.cluster));
  const auto rotation = topo::ServerSymmetry(m.cluster).block_rotation(m.cluster.gpus());
  ASSERT_TRUE(rotation.has_value());
  const NetworkLayout layout(m);
  CollectiveSpec s;
  s.op = CollectiveOp::kAllReduce;
  s.size = Bytes{1 << 26};
  for (std::size_t k = 0; k < 16; ++k) s.ranks.push_back(m.cluster.gpus()[8 * k]);
  const auto ring = build_schedule(layout.schedules(), s, CollectiveAlgorithm::kRing, nullptr);
  ASSERT_TRUE(ring.has_value());
  EXPECT_TRUE(rotation_maps(*ring, *rotation));
  const auto tree = build_schedule(layout.schedules(), s, CollectiveAlgorithm::kTree, nullptr);
  ASSERT_TRUE(tree.has_value());
  EXPECT_FALSE(rotation_maps(*tree, *rotation));
  // Under static ECMP there is no fold to take.
  const Machine ecmp = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-rail-512.json",
                                    {"/servers/0/count=16", "/fabric/nodes_per_leaf=4", "/fabric/routing=ecmp"});
  EXPECT_FALSE(fabric_folds(ecmp.cluster));
  // Nor where one leaf-spine cable is slower than the rest of its tier: a spread's mean latency
  // would depend on which leaf it leaves.
  const Machine slow = machine("h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4",
                                                 R"(/link_overrides=[{"from": "rail0/leaf0", "to": "spine0", "latency": "1.6us"}])"});
  EXPECT_FALSE(fabric_folds(slow.cluster));
}

}  // namespace
}  // namespace cs::coll
