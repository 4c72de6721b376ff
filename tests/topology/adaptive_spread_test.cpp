// The fluid model of adaptive routing (topology/adaptive_spread.h): closed forms of the shares on
// leaf-spine, fat-tree and rail-optimized fabrics, flow conservation on every cut, the widest-link
// rule, the rounded fallback, and the cluster file's "fabric": {"routing": ...}.
#include "topology/adaptive_spread.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/config.h"
#include "core/errors.h"
#include "tests/topology/test_clusters.h"
#include "topology/cluster_loader.h"
#include "topology/router.h"
#include "topology/server_orbits.h"

namespace cs::topo {
namespace {

using fixtures::add_device;

NodeId node(const Cluster& c, const std::string& name) {
  const auto id = c.find_node(name);
  if (!id) ADD_FAILURE() << "no device " << name;
  return id.value_or(NodeId{0});
}

// Weight of the link from -> to in the route (0 when absent).
std::uint32_t weight(const Cluster& c, const WeightedRoute& r, const std::string& from,
                     const std::string& to) {
  const auto l = c.find_link(node(c, from), node(c, to));
  if (!l) ADD_FAILURE() << "no link " << from << " -> " << to;
  for (const auto& [link, w] : r.links) {
    if (l && link == *l) return w;
  }
  return 0;
}

// The spread's invariants, whatever the fabric: every link lies on a shortest path (hops as the
// router counts them), appears once with a positive weight; the links from hop i to hop i + 1
// (a cut between src and dst) carry K in all, for every i < D; every vertex but the two ends
// forwards what it receives (conservation). With the rounded fallback the cuts carry K or a
// little more: each weight is rounded up by less than 1.
void expect_flow_invariants(const Cluster& c, NodeId src, NodeId dst, const WeightedRoute& r) {
  Router router(c);
  const int d = router.hops(src, dst);
  ASSERT_GT(d, 0);
  std::map<int, std::uint64_t> cut;
  std::map<std::uint32_t, std::int64_t> balance;  // in - out per vertex
  std::set<std::uint32_t> seen;
  for (const auto& [l, w] : r.links) {
    const LinkInfo& info = c.link(l);
    EXPECT_TRUE(seen.insert(l.value).second) << "link " << l.value << " twice";
    EXPECT_GT(w, 0u);
    const int before = router.hops(src, info.src);
    EXPECT_EQ(before + 1 + router.hops(info.dst, dst), d) << "link off the shortest paths";
    cut[before] += w;
    balance[info.dst.value] += w;
    balance[info.src.value] -= w;
  }
  for (int i = 0; i < d; ++i) {
    if (r.exact) {
      EXPECT_EQ(cut[i], r.scale) << "cut after hop " << i;
    } else {
      EXPECT_GE(cut[i], r.scale) << "cut after hop " << i;
    }
  }
  if (!r.exact) return;
  for (const auto& [v, b] : balance) {
    const std::int64_t expected = v == src.value   ? -std::int64_t{r.scale}
                                  : v == dst.value ? std::int64_t{r.scale}
                                                   : 0;
    EXPECT_EQ(b, expected) << c.node(NodeId{v}).name;
  }
}

Cluster load(const std::string& json) {
  return build_cluster(ConfigDocument::parse(json, "test.json"));
}

std::string single_servers(int count) {
  return R"({"servers": [{"count": )" + std::to_string(count) +
         R"(, "template": "single", "gpu": "H100-SXM", "nic": "NDR-400G"}], )";
}

TEST(AdaptiveSpread, LeafSpineClosedFormForSSpines) {
  // NIC -> leaf0 carries the whole flow (S/S), each of the S uplinks leaf0 -> spine j and
  // downlinks spine j -> leaf1 carries 1/S, leaf1 -> NIC all of it: 2S + 2 links, K = S.
  for (int spines : {1, 2, 3, 4, 7, 8}) {
    SCOPED_TRACE(spines);
    const Cluster c = load(single_servers(4) + R"("fabric": {"type": "leaf_spine",
        "endpoints_per_leaf": 2, "spines": )" +
                           std::to_string(spines) + "}}");
    const NodeId src = node(c, "node0/nic0"), dst = node(c, "node2/nic0");
    const WeightedRoute r = adaptive_spread(c, src, dst);
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.scale, static_cast<std::uint32_t>(spines));
    ASSERT_EQ(r.links.size(), static_cast<std::size_t>(2 * spines + 2));
    EXPECT_EQ(weight(c, r, "node0/nic0", "leaf0"), static_cast<std::uint32_t>(spines));
    EXPECT_EQ(weight(c, r, "leaf1", "node2/nic0"), static_cast<std::uint32_t>(spines));
    for (int j = 0; j < spines; ++j) {
      const std::string spine = "spine" + std::to_string(j);
      EXPECT_EQ(weight(c, r, "leaf0", spine), 1u);
      EXPECT_EQ(weight(c, r, spine, "leaf1"), 1u);
    }
    expect_flow_invariants(c, src, dst, r);
    // Two NICs of one leaf: one path, K = 1.
    const WeightedRoute local = adaptive_spread(c, src, node(c, "node1/nic0"));
    EXPECT_EQ(local.scale, 1u);
    EXPECT_EQ(local.links.size(), 2u);
  }
}

TEST(AdaptiveSpread, CoversExactlyTheLinksEcmpCanHashOnto) {
  // leafspine-oversub (4 spines): the union of the router's ECMP paths over 64 flow labels is
  // the spread's link set (the same hop count and widest-link rule decide both).
  const Cluster c =
      load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/leafspine-oversub.json");
  Router router(c);
  AdaptiveSpreader spreader(c);
  const NodeId src = node(c, "node3/nic0"), dst = node(c, "node200/nic0");
  std::set<std::uint32_t> ecmp;
  for (std::uint64_t label = 0; label < 64; ++label) {
    for (LinkId l : router.route(src, dst, label)) ecmp.insert(l.value);
  }
  const WeightedRoute& r = spreader.spread(src, dst);
  std::set<std::uint32_t> spread;
  for (const auto& [l, w] : r.links) spread.insert(l.value);
  EXPECT_EQ(spread, ecmp);
  EXPECT_EQ(r.scale, 4u);
  expect_flow_invariants(c, src, dst, r);
  // Cached per pair: the same object; three entries, the pair's, that of the leaves it was
  // built from (node3 and node200 each hang off one leaf by one link: the header, "Servers of
  // one leaf"), and that of the first two leaves, whose spread the leaves' was derived from (all
  // 32 leaves have the same 4 spines: "Switches of like neighbours").
  EXPECT_EQ(&spreader.spread(src, dst), &r);
  EXPECT_EQ(spreader.derived_routes(), 2u);
  EXPECT_EQ(spreader.cached_routes(), 3u);
  EXPECT_EQ(spreader.cached_links(), 26u);  // (2 x 4 spines + 2) + 2 x (2 x 4 spines)
  const std::vector<std::pair<LinkId, std::uint32_t>> before = r.links;
  spreader.clear();
  EXPECT_EQ(spreader.cached_routes(), 0u);
  EXPECT_EQ(spreader.cached_links(), 0u);
  EXPECT_EQ(spreader.spread(src, dst).links, before);
}

TEST(AdaptiveSpread, ThreeTierFatTreeClosedForm) {
  // a100-superpod: fat-tree of radix k = 40, 3 tiers, rail-aligned leaves of 20 NICs (one rail of
  // a block of 20 DGX). Between pods: leaf -> each of the k/2 = 20 aggs 1/20, each agg -> its
  // 20 cores 1/400, each core -> the destination pod's agg 1/400, each agg -> leaf 1/20. K = 400:
  // weights 400, 20 (x20), 1 (x400), 1 (x400), 20 (x20), 400: 842 links.
  const Cluster c =
      load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/a100-superpod.json");
  AdaptiveSpreader spreader(c);
  // Leaves in (block, rail) order, blocks of 20 servers, 20 leaves per pod: NIC r of server s is
  // on leaf 8 (s / 20) + r, in pod (8 (s / 20) + r) / 20. node0/nic0: leaf 0, pod 0;
  // node20/nic0: leaf 8, pod 0; node380/nic0: leaf 152, pod 7.
  const NodeId src = node(c, "node0/nic0"), far = node(c, "node380/nic0");
  const WeightedRoute& r = spreader.spread(src, far);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.scale, 400u);
  ASSERT_EQ(r.links.size(), 842u);
  std::map<std::uint32_t, int> by_weight;  // weight -> links
  for (const auto& [l, w] : r.links) ++by_weight[w];
  EXPECT_EQ(by_weight, (std::map<std::uint32_t, int>{{1, 800}, {20, 40}, {400, 2}}));
  expect_flow_invariants(c, src, far, r);
  // Two leaves of one pod (rail 0 of blocks 0 and 1: leaves 0 and 8): leaf -> 20 aggs -> leaf,
  // K = 20, 42 links.
  const NodeId near = node(c, "node20/nic0");
  const WeightedRoute& pod = spreader.spread(src, near);
  EXPECT_EQ(pod.scale, 20u);
  EXPECT_EQ(pod.links.size(), 42u);
  expect_flow_invariants(c, src, near, pod);
}

TEST(AdaptiveSpread, RailOptimizedClosedForm) {
  // Hand-built rail fabric: 64 DGX-like servers (2 blocks of 32 per leaf), 8 rails, 16 spines.
  // NIC 3 of server 0 to NIC 3 of server 40 (other block, same rail): NIC -> leaf 1, leaf -> 16
  // spines 1/16 each, back 1/16 each, leaf -> NIC 1: K = 16, 34 links. Same block: K = 1.
  const fixtures::RailFabric f = fixtures::rail_fabric(64, 16);
  const Cluster& c = f.cluster;
  const NodeId src = node(c, "node0/nic3"), dst = node(c, "node40/nic3");
  const WeightedRoute r = adaptive_spread(c, src, dst);
  EXPECT_EQ(r.scale, 16u);
  EXPECT_EQ(r.links.size(), 34u);
  EXPECT_EQ(weight(c, r, "node0/nic3", "rail3/leaf0"), 16u);
  EXPECT_EQ(weight(c, r, "rail3/leaf0", "spine5"), 1u);
  EXPECT_EQ(weight(c, r, "spine5", "rail3/leaf1"), 1u);
  expect_flow_invariants(c, src, dst, r);
  const WeightedRoute same = adaptive_spread(c, src, node(c, "node31/nic3"));
  EXPECT_EQ(same.scale, 1u);
  EXPECT_EQ(same.links.size(), 2u);
}

// A route's weights summed per orbit of the switch exchanges (over the route's scale).
std::map<std::uint32_t, std::uint64_t> by_orbit(const WeightedRoute& r, const SwitchTwins& twins) {
  std::map<std::uint32_t, std::uint64_t> out;
  for (const auto& [l, w] : r.links) out[twins.rep[l.value]] += w;
  return out;
}

TEST(AdaptiveSpread, TwinQuotientLoadsEveryOrbitAsTheFullSpread) {
  // NIC pairs (every 5th source to every 7th destination, across rails too) on three fabrics
  // with twin switches: the quotient's route has the full spread's common denominator K and,
  // summed by orbit, its weights exactly, so a fold loads its links alike; it is far shorter
  // where the classes are large (between pods of the radix-k three-tier fat-tree 2 + 4 (k/2)
  // entries: the leaf's uplinks, one orbit per aggregation switch into its core class and one
  // out of it, the downlinks; the full spread 2 + 2 (k/2) + 2 (k/2)^2 links).
  struct Case {
    std::string file;
    std::vector<std::string> sets;
    std::size_t stride;       // of the sources (the superpod's spreads are long)
    std::size_t max_links;    // the quotient's longest route
  };
  const std::vector<Case> cases = {
      {"h100-fat-tree-3tier", {"/fabric/radix=16", "/servers/0/count=32"}, 5, 34},
      {"h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"}, 5, 4},
      {"a100-superpod", {}, 97, 82},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.file);
    const Cluster c = load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/" + k.file + ".json", k.sets);
    const ServerSymmetry symmetry(c);
    const auto twins = symmetry.twin_orbits();
    ASSERT_TRUE(twins.has_value());
    AdaptiveSpreader full(c), quotient(c, twins->switch_twins());
    std::vector<NodeId> nics;
    for (std::uint32_t v = 0; v < c.node_count(); ++v) {
      if (c.node(NodeId{v}).kind == NodeKind::kNic) nics.push_back(NodeId{v});
    }
    std::size_t longest = 0, full_longest = 0, pairs = 0;
    for (std::size_t i = 0; i < nics.size(); i += k.stride) {
      for (std::size_t j = 1; j < nics.size(); j += 7) {
        if (i == j) continue;
        SCOPED_TRACE(c.node(nics[i]).name + " -> " + c.node(nics[j]).name);
        const WeightedRoute& a = full.spread(nics[i], nics[j]);
        const WeightedRoute& b = quotient.spread(nics[i], nics[j]);
        ASSERT_EQ(b.scale, a.scale);
        EXPECT_EQ(b.exact, a.exact);
        EXPECT_EQ(by_orbit(b, *twins->switch_twins()), by_orbit(a, *twins->switch_twins()));
        longest = std::max(longest, b.links.size());
        full_longest = std::max(full_longest, a.links.size());
        ++pairs;
      }
    }
    EXPECT_GT(pairs, 100u);
    EXPECT_LE(longest, k.max_links);
    EXPECT_GT(full_longest, longest);
  }
}

TEST(AdaptiveSpread, TwinServersFromASourceAreAskedOnceAndGiveTheSameSpreads) {
  // A spreader handed a source of twin servers asks it on its first pair between servers, once,
  // and spreads as a spreader that builds its own classes; likewise a source of the classes of
  // switches of like neighbours, asked on its first pair of switches (a pair of leaves here).
  const Cluster c = load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-fat-tree-3tier.json",
                                 {"/fabric/radix=32", "/servers/0/count=64"});
  const std::shared_ptr<const ServerTwins> classes = ServerSymmetry(c).server_twins();
  const std::shared_ptr<const LikeSwitches> like = like_switches(c);
  int asked = 0, asked_like = 0;
  AdaptiveSpreader shared(c);
  shared.set_server_twins_source([&] {
    ++asked;
    return classes;
  });
  shared.set_like_switches_source([&] {
    ++asked_like;
    return like;
  });
  AdaptiveSpreader own(c);
  std::vector<NodeId> nics;
  for (std::uint32_t v = 0; v < c.node_count(); ++v) {
    if (c.node(NodeId{v}).kind == NodeKind::kNic) nics.push_back(NodeId{v});
  }
  ASSERT_GT(nics.size(), 64u);
  EXPECT_EQ(asked, 0);  // nothing asked before a pair between servers
  EXPECT_EQ(asked_like, 0);
  std::size_t derived = 0;
  for (std::size_t i = 0; i < nics.size(); i += 37) {
    for (std::size_t j = 5; j < nics.size(); j += 53) {
      const WeightedRoute& x = shared.spread(nics[i], nics[j]);
      const WeightedRoute& y = own.spread(nics[i], nics[j]);
      EXPECT_EQ(x.links, y.links);
      EXPECT_EQ(x.scale, y.scale);
    }
    derived = shared.derived_routes();
  }
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(asked_like, 1);
  EXPECT_GT(derived, 0u);  // the classes were used: some pairs mapped from their canonical pair
  EXPECT_EQ(derived, own.derived_routes());
}

TEST(AdaptiveSpread, TwinServersGiveEveryPairTheSpreadOfItsOwnSearch) {
  // A pair mapped from its canonical pair's spread through exchanges of twin servers, or built
  // from its servers' leaves' spread (h100-fat-tree-3tier, leafspine-oversub: every NIC of a server
  // on one leaf), has the links, weights and K its own search gives, on the full graph and on
  // the twin switches' quotient: NIC pairs of every rail (same-rail and cross-rail, where paths
  // through a third server's NICs, or the sender's own NIC of another rail, can tie: taking a
  // NIC's own leaf for its server's fails here), pairs of any devices (GPUs, PCIe and
  // NVLink switches), and pairs of the fabric's switches (from switches of like neighbours).
  struct Case {
    std::string file;
    std::vector<std::string> sets;
    std::size_t stride;  // of the sources
  };
  const std::vector<Case> cases = {
      {"h100-fat-tree-3tier", {"/fabric/radix=32", "/servers/0/count=64"}, 16},
      {"h100-rail-512", {"/servers/0/count=16", "/fabric/nodes_per_leaf=4"}, 1},
      {"a100-superpod", {}, 509},
      {"leafspine-oversub", {}, 1},
      {"h100-leafspine-2to1", {}, 29},
      {"a100-4node-ib", {}, 1},
      {"dgx1-v100-4node", {}, 1},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.file);
    const Cluster c = load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/" + k.file + ".json", k.sets);
    const ServerSymmetry symmetry(c);
    const auto twins = symmetry.twin_orbits();
    std::vector<NodeId> nics, devices, switches;
    for (std::uint32_t v = 0; v < c.node_count(); ++v) {
      if (c.node(NodeId{v}).server < 0) {
        switches.push_back(NodeId{v});
        continue;
      }
      devices.push_back(NodeId{v});
      if (c.node(NodeId{v}).kind == NodeKind::kNic) nics.push_back(NodeId{v});
    }
    for (const bool quotient : {false, true}) {
      if (quotient && !twins) continue;
      SCOPED_TRACE(quotient ? "quotient" : "full graph");
      AdaptiveSpreader derived = quotient ? AdaptiveSpreader(c, twins->switch_twins()) : AdaptiveSpreader(c);
      AdaptiveSpreader searched = quotient ? AdaptiveSpreader(c, twins->switch_twins()) : AdaptiveSpreader(c);
      searched.derive_from_twin_servers(false);
      std::size_t pairs = 0;
      const auto check = [&](NodeId a, NodeId b) {
        SCOPED_TRACE(c.node(a).name + " -> " + c.node(b).name);
        const WeightedRoute& x = derived.spread(a, b);
        const WeightedRoute& y = searched.spread(a, b);
        ASSERT_EQ(x.scale, y.scale);
        ASSERT_EQ(x.exact, y.exact);
        ASSERT_EQ(x.links, y.links);
        ++pairs;
      };
      for (std::size_t i = 0; i < nics.size(); i += k.stride) {
        for (std::size_t j = 0; j < nics.size(); ++j) check(nics[i], nics[j]);
      }
      for (std::size_t i = 0; i < devices.size(); i += 7 * k.stride) {
        for (std::size_t j = 3; j < devices.size(); j += 11) check(devices[i], devices[j]);
      }
      EXPECT_EQ(searched.derived_routes(), 0u);
      // Every bundled fabric here has servers of one leaf block: most pairs are mapped.
      EXPECT_GT(derived.derived_routes(), pairs / 2) << pairs;
      // Pairs of switches, on a spreader of their own (the pairs above cached some): from the
      // first switches of their classes of like neighbours (the leaves of one pod, of one
      // leaf-spine; twin spines or cores), or their own search.
      AdaptiveSpreader fresh = quotient ? AdaptiveSpreader(c, twins->switch_twins()) : AdaptiveSpreader(c);
      std::size_t switch_pairs = 0;
      for (std::size_t i = 0; i < switches.size(); i += 3) {
        for (std::size_t j = 0; j < switches.size(); ++j) {
          SCOPED_TRACE(c.node(switches[i]).name + " -> " + c.node(switches[j]).name);
          const WeightedRoute& x = fresh.spread(switches[i], switches[j]);
          const WeightedRoute& y = searched.spread(switches[i], switches[j]);
          ASSERT_EQ(x.scale, y.scale);
          ASSERT_EQ(x.exact, y.exact);
          ASSERT_EQ(x.links, y.links);
          ++switch_pairs;
        }
      }
      EXPECT_EQ(searched.derived_routes(), 0u);
      if (k.file == "h100-fat-tree-3tier" || k.file == "leafspine-oversub") {
        EXPECT_GT(fresh.derived_routes(), switch_pairs / 2) << switch_pairs;
      }
    }
  }
}

TEST(AdaptiveSpread, MeanLatencyIsTheSharesWeightedSum) {
  // A packet crosses each link with probability share(l). Three spines, each tier one latency:
  // the mean is every shortest path's latency, the router's. The uplink leaf0 -> spine1 made
  // 1.6 us: the third of the packets that cross it pay the difference, rounded to the ps.
  const std::string fabric = R"("fabric": {"type": "leaf_spine", "endpoints_per_leaf": 2, "spines": 3})";
  const Cluster even = load(single_servers(4) + fabric + "}");
  Router router(even);
  const NodeId src = node(even, "node0/nic0"), dst = node(even, "node2/nic0");
  Duration path{0};
  for (LinkId l : router.route(src, dst, 7)) path += even.link(l).latency;
  EXPECT_EQ(mean_latency(even, adaptive_spread(even, src, dst)), path);
  const Cluster slow = load(single_servers(4) + fabric +
                            R"(, "link_overrides": [{"from": "leaf0", "to": "spine1", "latency": "1.6us", "direction": "one"}]})");
  const WeightedRoute r = adaptive_spread(slow, src, dst);
  const Duration hop = even.link(*even.find_link(node(even, "leaf0"), node(even, "spine1"))).latency;
  EXPECT_EQ(weight(slow, r, "leaf0", "spine1"), 1u);
  EXPECT_EQ(r.scale, 3u);
  EXPECT_EQ(mean_latency(slow, r), path + Duration{std::llround((1.6e6 - static_cast<double>(hop.count())) / 3.0)});
}

TEST(AdaptiveSpread, TorusSplitsOverEveryMinimalDirection) {
  // torus-4x4 (GPUs are the endpoints): (0,0) -> (2,2) is 4 hops, 2 in x either way round and 2
  // in y either way: the first hop splits 4 ways (1/4 each), and every cut carries the whole.
  const Cluster c = load_cluster(std::string(CS_SOURCE_DIR) + "/configs/clusters/torus-4x4.json");
  const NodeId src = c.gpus()[0], dst = c.gpus()[10];  // (0,0) and (2,2)
  const WeightedRoute r = adaptive_spread(c, src, dst);
  EXPECT_TRUE(r.exact);
  int first = 0;
  for (const auto& [l, w] : r.links) {
    if (c.link(l).src == src) {
      ++first;
      EXPECT_EQ(w * 4, r.scale);
    }
  }
  EXPECT_EQ(first, 4);
  expect_flow_invariants(c, src, dst, r);
}

// src -> a over `ab` parallel cables of width `wide`, src -> b (narrow), a, b -> dst.
TEST(AdaptiveSpread, KeepsOnlyTheWidestNextHopsAndSplitsOverParallelCables) {
  // The narrow branch through b carries nothing (ECMP would not hash onto it either); the two
  // parallel cables src -> a carry 1/2 each: K = 2, a -> dst weight 2.
  ClusterBuilder b("diamond");
  const NodeId src = add_device(b, "src", NodeKind::kNic);
  const NodeId a = add_device(b, "a", NodeKind::kLeafSwitch);
  const NodeId n = add_device(b, "b", NodeKind::kLeafSwitch);
  const NodeId dst = add_device(b, "dst", NodeKind::kNic);
  const Bandwidth wide = gigabytes_per_second(50), narrow = gigabytes_per_second(25);
  for (int i = 0; i < 2; ++i) b.add_cable(src, a, wide, Duration{0}, hw::LinkClass::kNetwork, 1);
  b.add_cable(src, n, narrow, Duration{0}, hw::LinkClass::kNetwork, 1);
  b.add_cable(a, dst, wide, Duration{0}, hw::LinkClass::kNetwork, 1);
  b.add_cable(n, dst, wide, Duration{0}, hw::LinkClass::kNetwork, 1);
  const Cluster c = std::move(b).build();
  const WeightedRoute r = adaptive_spread(c, src, dst);
  EXPECT_EQ(r.scale, 2u);
  ASSERT_EQ(r.links.size(), 3u);
  EXPECT_EQ(c.link(r.links[0].first).dst, a);
  EXPECT_EQ(c.link(r.links[1].first).dst, a);
  EXPECT_NE(r.links[0].first, r.links[1].first);
  EXPECT_EQ(r.links[0].second, 1u);
  EXPECT_EQ(r.links[1].second, 1u);
  EXPECT_EQ(weight(c, r, "a", "dst"), 2u);
  EXPECT_EQ(weight(c, r, "b", "dst"), 0u);
  expect_flow_invariants(c, src, dst, r);
}

// src, then complete bipartite layers of the given sizes, then dst.
Cluster layered(std::initializer_list<int> sizes) {
  ClusterBuilder b("layered");
  std::vector<NodeId> prev{add_device(b, "src", NodeKind::kNic)};
  int layer = 0;
  for (int size : sizes) {
    std::vector<NodeId> cur;
    for (int i = 0; i < size; ++i) {
      // append, not "l" + std::to_string(...): GCC 12 warns falsely (-Wrestrict) on the latter here
      cur.push_back(add_device(b, std::string("l").append(std::to_string(layer)).append("/").append(std::to_string(i)),
                               NodeKind::kLeafSwitch));
      for (NodeId p : prev) {
        b.add_link(p, cur.back(), gigabytes_per_second(50), Duration{0}, hw::LinkClass::kNetwork,
                   1);
      }
    }
    prev = std::move(cur);
    ++layer;
  }
  const NodeId dst = add_device(b, "dst", NodeKind::kNic);
  for (NodeId p : prev)
    b.add_link(p, dst, gigabytes_per_second(50), Duration{0}, hw::LinkClass::kNetwork, 1);
  return std::move(b).build();
}

TEST(AdaptiveSpread, ExactSharesOverTheLcmOfTheirDenominators) {
  // Layers of 2, 3, 5, 7 vertices, complete between neighbours: by symmetry a vertex of a layer
  // of size a holds 1/a, and each of its b out-links 1/(ab). Denominators 2, 6, 15, 35, 7:
  // K = lcm = 210; weights 105 (src -> 2), 35 (2 -> 3), 14 (3 -> 5), 6 (5 -> 7), 30 (7 -> dst).
  const Cluster c = layered({2, 3, 5, 7});
  const NodeId src = node(c, "src"), dst = node(c, "dst");
  const WeightedRoute r = adaptive_spread(c, src, dst);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.scale, 210u);
  std::map<std::uint32_t, int> by_weight;
  for (const auto& [l, w] : r.links) ++by_weight[w];
  EXPECT_EQ(by_weight,
            (std::map<std::uint32_t, int>{{105, 2}, {35, 6}, {14, 15}, {6, 35}, {30, 7}}));
  expect_flow_invariants(c, src, dst, r);
}

TEST(AdaptiveSpread, FallsBackToRoundedUpSharesAboveTheCap) {
  // Layers 2, 3, 5, ..., 19: the exact K would be 2 x 3 x ... x 19 = 9,699,690 > 2^20. The
  // fallback takes K = 2^20 and rounds each share up: the 19 x 1 last links carry
  // ceil(2^20 / 19) = 55,189 each; every cut carries at least K and less than K + its links.
  const Cluster c = layered({2, 3, 5, 7, 11, 13, 17, 19});
  const NodeId src = node(c, "src"), dst = node(c, "dst");
  const WeightedRoute r = adaptive_spread(c, src, dst);
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.scale, kMaxSpreadScale);
  Router router(c);
  std::map<int, std::uint64_t> cut, links;
  for (const auto& [l, w] : r.links) {
    const int hop = router.hops(src, c.link(l).src);
    cut[hop] += w;
    ++links[hop];
    if (c.link(l).dst == dst) {
      EXPECT_EQ(w, 55'189u);
    }
  }
  ASSERT_EQ(cut.size(), 9u);
  for (const auto& [hop, sum] : cut) {
    EXPECT_GE(sum, kMaxSpreadScale) << hop;
    EXPECT_LT(sum, kMaxSpreadScale + links[hop]) << hop;
  }
  expect_flow_invariants(c, src, dst, r);
}

TEST(AdaptiveSpread, EndsAndErrors) {
  const Cluster c = fixtures::star(3, gigabytes_per_second(50));
  const WeightedRoute self = adaptive_spread(c, c.gpus()[0], c.gpus()[0]);
  EXPECT_TRUE(self.links.empty());
  EXPECT_EQ(self.scale, 1u);
  ClusterBuilder b("apart");
  add_device(b, "x", NodeKind::kGpu, 0, 0);
  add_device(b, "y", NodeKind::kGpu, 1, 0);
  const Cluster apart = std::move(b).build();
  EXPECT_THROW(adaptive_spread(apart, NodeId{0}, NodeId{1}), TopologyError);
  EXPECT_THROW(adaptive_spread(apart, NodeId{0}, NodeId{7}), InternalError);
}

TEST(FabricRouting, FromTheClusterFile) {
  // Without "routing" the NICs' link layer decides: InfiniBand (NDR-400G) adaptive, Ethernet
  // (400GbE) ECMP, a mix ECMP; "routing" is recorded on the cluster, on any fabric type.
  const std::string servers = single_servers(4);
  const Cluster ib = load(servers + R"("fabric": {"type": "star"}})");
  EXPECT_EQ(ib.routing(), Routing::kAdaptive);
  EXPECT_TRUE(ib.routing_by_link_layer());
  const auto with_nic = [](const std::string& nic, const std::string& second) {
    return R"({"servers": [{"count": 2, "template": "single", "gpu": "H100-SXM", "nic": ")" + nic +
           R"("}, {"name": "b", "count": 2, "template": "single", "gpu": "H100-SXM", "nic": ")" + second +
           R"("}], "fabric": {"type": "star"}})";
  };
  EXPECT_EQ(load(with_nic("400GbE", "400GbE")).routing(), Routing::kEcmp);
  EXPECT_EQ(load(with_nic("NDR-400G", "400GbE")).routing(), Routing::kEcmp);
  EXPECT_EQ(load(with_nic("HDR-200G", "NDR-400G")).routing(), Routing::kAdaptive);
  const Cluster named = load(servers + R"("fabric": {"type": "star", "routing": "ecmp"}})");
  EXPECT_EQ(named.routing(), Routing::kEcmp);
  EXPECT_FALSE(named.routing_by_link_layer());
  EXPECT_EQ(load(servers + R"("fabric": {"type": "leaf_spine", "endpoints_per_leaf": 2,
      "spines": 2, "routing": "adaptive"}})")
                .routing(),
            Routing::kAdaptive);
  EXPECT_EQ(std::string(to_string(Routing::kAdaptive)), "adaptive");
  try {
    load(servers + R"("fabric": {"type": "star", "routing": "spray"}})");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config error in test.json at /fabric/routing: expected one of \"ecmp\", "
              "\"adaptive\"; got the string \"spray\"");
  }
}

}  // namespace
}  // namespace cs::topo
