// ClusterBuilder and the immutable Cluster it builds: ids in call order, adjacency rows that are
// exactly the link list grouped by endpoint in id order, lookups, and no mutators on a Cluster.
#include "topology/cluster_builder.h"

#include <stdexcept>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/random.h"
#include "tests/topology/test_clusters.h"

namespace cs::topo {
namespace {

using fixtures::add_device;

// A Cluster offers queries only: none of the builder's mutators, no default or copy construction.
template <class C>
concept CanAddNode = requires(C& c, NodeInfo n) { c.add_node(n); };
template <class C>
concept CanAddLink = requires(C& c, NodeId a) {
  c.add_link(a, a, Bandwidth{0}, Duration{0}, hw::LinkClass::kNetwork, 0);
  c.add_cable(a, a, Bandwidth{0}, Duration{0}, hw::LinkClass::kNetwork, 0);
};
template <class C>
concept CanChangeLinks = requires(C& c, LinkId l) {
  c.set_link_bandwidth(l, Bandwidth{0});
  c.set_link_latency(l, Duration{0});
};
template <class C>
concept CanSetGpuSpec = requires(C& c, NodeId g, const hw::GpuSpec& s) { c.set_gpu_spec(g, s); };
static_assert(CanAddNode<ClusterBuilder> && CanAddLink<ClusterBuilder> && CanChangeLinks<ClusterBuilder> &&
              CanSetGpuSpec<ClusterBuilder>);
static_assert(!CanAddNode<Cluster> && !CanAddLink<Cluster> && !CanChangeLinks<Cluster> && !CanSetGpuSpec<Cluster>);
static_assert(!std::is_default_constructible_v<Cluster> && !std::is_copy_constructible_v<Cluster> &&
              std::is_nothrow_move_constructible_v<Cluster>);

// The reference the rows must equal: the links whose `from` end is v, in id order.
std::vector<LinkId> links_of(const Cluster& c, NodeId v, bool out) {
  std::vector<LinkId> r;
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const LinkInfo& l = c.link(LinkId{i});
    if ((out ? l.src : l.dst) == v) r.push_back(LinkId{i});
  }
  return r;
}

void expect_rows_match_link_list(const Cluster& c) {
  const Adjacency& out = c.out_adjacency();
  const Adjacency& in = c.in_adjacency();
  ASSERT_EQ(out.begin.size(), c.node_count() + 1);
  ASSERT_EQ(in.begin.size(), c.node_count() + 1);
  ASSERT_EQ(out.link.size(), c.link_count());
  ASSERT_EQ(in.node.size(), c.link_count());
  for (std::uint32_t v = 0; v < c.node_count(); ++v) {
    const NodeId id{v};
    const auto o = c.out_links(id), i = c.in_links(id);
    EXPECT_EQ(std::vector<LinkId>(o.begin(), o.end()), links_of(c, id, true)) << c.node(id).name;
    EXPECT_EQ(std::vector<LinkId>(i.begin(), i.end()), links_of(c, id, false)) << c.node(id).name;
    // The spans are the rows of the adjacency, and each slot's far end is its link's.
    EXPECT_EQ(o.data(), out.link.data() + out.begin[v]);
    EXPECT_EQ(i.data(), in.link.data() + in.begin[v]);
    for (std::uint32_t k = out.begin[v]; k < out.begin[v + 1]; ++k) {
      EXPECT_EQ(out.node[k], c.link(out.link[k]).dst.value);
    }
    for (std::uint32_t k = in.begin[v]; k < in.begin[v + 1]; ++k) {
      EXPECT_EQ(in.node[k], c.link(in.link[k]).src.value);
    }
  }
}

TEST(ClusterBuilder, IdsFollowTheCallsAndRowsMatchTheLinkList) {
  // Seeded random multigraphs: cables, one-way links and parallel links in any order.
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Rng rng = Rng::derive(seed, 3);
    ClusterBuilder b("random");
    const int n = 5 + static_cast<int>(rng.below(20));
    for (int v = 0; v < n; ++v) {
      const NodeKind kind = v % 3 == 0 ? NodeKind::kGpu : NodeKind::kLeafSwitch;
      EXPECT_EQ(add_device(b, std::to_string(v), kind), NodeId{static_cast<std::uint32_t>(v)});
    }
    std::vector<std::pair<NodeId, NodeId>> added;  // link i: added[i]
    for (int e = 0; e < 3 * n; ++e) {
      const NodeId a{static_cast<std::uint32_t>(rng.below(static_cast<std::uint64_t>(n)))};
      const NodeId z{static_cast<std::uint32_t>(rng.below(static_cast<std::uint64_t>(n)))};
      if (a == z) continue;
      if (rng.below(2) == 0) {
        EXPECT_EQ(b.add_link(a, z, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1).value,
                  added.size());
        added.emplace_back(a, z);
      } else {
        const auto [az, za] = b.add_cable(a, z, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1);
        EXPECT_EQ(az.value, added.size());
        EXPECT_EQ(za.value, added.size() + 1);
        added.emplace_back(a, z);
        added.emplace_back(z, a);
      }
    }
    const Cluster c = std::move(b).build();
    ASSERT_EQ(c.link_count(), added.size());
    for (std::uint32_t i = 0; i < added.size(); ++i) {
      EXPECT_EQ(c.link(LinkId{i}).src, added[i].first);
      EXPECT_EQ(c.link(LinkId{i}).dst, added[i].second);
    }
    expect_rows_match_link_list(c);
  }
}

TEST(ClusterBuilder, RowsOfAFabricMatchTheLinkList) {
  expect_rows_match_link_list(fixtures::rail_fabric(64, 4).cluster);
  expect_rows_match_link_list(ClusterBuilder("empty").build());
}

TEST(ClusterBuilder, FindLinkGivesTheFirstAddedOnBuilderAndCluster) {
  ClusterBuilder b("parallel");
  const NodeId x = add_device(b, "x", NodeKind::kGpu), y = add_device(b, "y", NodeKind::kGpu);
  const NodeId z = add_device(b, "z", NodeKind::kLeafSwitch);
  b.add_link(x, z, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1);
  const LinkId first = b.add_cable(x, y, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNvlink, 0).first;
  b.add_cable(x, y, gigabytes_per_second(2), nanoseconds(1), hw::LinkClass::kNvlink, 0);
  EXPECT_EQ(b.find_link(x, y), first);
  EXPECT_EQ(b.find_link(y, x), LinkId{first.value + 1});
  EXPECT_FALSE(b.find_link(z, x));
  const Cluster c = std::move(b).build();
  EXPECT_EQ(c.find_link(x, y), first);
  EXPECT_EQ(c.find_link(y, x), LinkId{first.value + 1});
  EXPECT_FALSE(c.find_link(z, x));
  EXPECT_EQ(c.find_node("y"), y);
  EXPECT_FALSE(c.find_node("w"));
}

TEST(ClusterBuilder, ChangesWhileBuildingReachTheCluster) {
  ClusterBuilder b("changes");
  const NodeId g0 = add_device(b, "g0", NodeKind::kGpu), g1 = add_device(b, "g1", NodeKind::kGpu);
  const auto [ab, ba] = b.add_cable(g0, g1, gigabytes_per_second(10), nanoseconds(5), hw::LinkClass::kNvlink, 0);
  b.set_link_bandwidth(ba, gigabytes_per_second(4));
  b.set_link_latency(ab, nanoseconds(7));
  hw::GpuSpec spec;
  spec.name = std::string("G");
  b.set_gpu_spec(g0, spec);
  b.set_gpu_spec(g1, spec);
  EXPECT_EQ(b.gpus().size(), 2u);
  const Cluster c = std::move(b).build();
  EXPECT_EQ(c.name(), "changes");
  EXPECT_EQ(c.link(ab).bandwidth, gigabytes_per_second(10));
  EXPECT_EQ(c.link(ba).bandwidth, gigabytes_per_second(4));
  EXPECT_EQ(c.link(ab).latency, nanoseconds(7));
  EXPECT_EQ(c.link(ab).reverse, ba);
  EXPECT_EQ(c.link(ba).reverse, ab);
  EXPECT_EQ(c.gpu_spec(g0).name, "G");
  EXPECT_EQ(&c.gpu_spec(g0), &c.gpu_spec(g1));  // shared by name
}

TEST(ClusterBuilder, EachLinksTimingIsItsLatencyAndClassKeptOncePerDistinctPair) {
  // Cluster::link_timing: every link's latency and class as its record has them (a latency
  // changed while building included), and links of one (latency, class) share one entry.
  ClusterBuilder b("timings");
  const NodeId g0 = add_device(b, "g0", NodeKind::kGpu), g1 = add_device(b, "g1", NodeKind::kGpu);
  const NodeId sw = add_device(b, "sw", NodeKind::kLeafSwitch);
  const auto [nv, nv_back] = b.add_cable(g0, g1, gigabytes_per_second(450), nanoseconds(5), hw::LinkClass::kNvlink, 0);
  const auto [up, down] = b.add_cable(g0, sw, gigabytes_per_second(50), nanoseconds(5), hw::LinkClass::kNetwork, 1);
  const auto [up1, down1] = b.add_cable(g1, sw, gigabytes_per_second(25), nanoseconds(5), hw::LinkClass::kNetwork, 1);
  const LinkId slow = b.add_link(g1, sw, gigabytes_per_second(50), nanoseconds(9), hw::LinkClass::kNetwork, 1);
  b.set_link_latency(down1, nanoseconds(700));
  const Cluster c = std::move(b).build();
  for (std::uint32_t l = 0; l < c.link_count(); ++l) {
    const LinkId id{l};
    EXPECT_EQ(c.link_timing(id).latency, c.link(id).latency) << l;
    EXPECT_EQ(c.link_timing(id).link_class, c.link(id).link_class) << l;
  }
  EXPECT_EQ(c.link_timing(down1).latency, nanoseconds(700));
  const auto entry = [&c](LinkId l) { return *c.link_timing_slot(l); };
  EXPECT_EQ(entry(nv), entry(nv_back));
  EXPECT_EQ(entry(up), entry(down));  // another rate, the same timing
  EXPECT_EQ(entry(up), entry(up1));
  EXPECT_NE(entry(up), entry(nv));    // the same latency, another class
  EXPECT_NE(entry(slow), entry(up));  // the same class, another latency
  EXPECT_NE(entry(down1), entry(up1));
  EXPECT_THROW(static_cast<void>(c.link_timing(LinkId{static_cast<std::uint32_t>(c.link_count())})), std::out_of_range);
}

TEST(ClusterBuilder, RejectsDuplicateNamesAndSelfLinks) {
  ClusterBuilder b("bad");
  const NodeId a = add_device(b, "a", NodeKind::kGpu);
  EXPECT_THROW(add_device(b, "a", NodeKind::kNic), TopologyError);
  EXPECT_THROW(b.add_link(a, a, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kPcie, 0), TopologyError);
  EXPECT_THROW(b.add_link(a, NodeId{7}, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kPcie, 0),
               InternalError);
  const NodeId s = add_device(b, "s", NodeKind::kLeafSwitch);
  EXPECT_THROW(b.set_gpu_spec(s, hw::GpuSpec{}), InternalError);
}

}  // namespace
}  // namespace cs::topo
