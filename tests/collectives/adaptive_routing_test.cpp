// Static ECMP vs adaptive routing on a 2:1 oversubscribed leaf-spine (issue 11, "Spreading"): the
// scenario of oversubscription_test.cpp, with the flows built here on the flow network as the
// collective runner builds a direct all-to-all's (one flow per GPU pair, through the rail's NICs),
// so that the fabric's routing (Cluster::routing, "fabric": {"routing": ...}) is the only
// difference: ECMP hashes each flow onto one path (topo::Router, a label per GPU pair), adaptive
// routing spreads it over all of them (topo::adaptive_spread).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/random.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_layout.h"
#include "sim/network/flow_network.h"
#include "topology/adaptive_spread.h"
#include "topology/router.h"
#include "topology/server_orbits.h"

namespace cs::coll {
namespace {

using topo::LinkId;
using topo::NodeId;

struct AllToAll {
  Duration time{0};             // the last flow's last byte (no latency: bandwidth phase only)
  std::vector<double> uplinks;  // bytes on each leaf -> spine link of the first GPUs' leaves
  Bandwidth nic{0}, uplink{0};  // usable rates: a NIC's cable to its leaf, a leaf -> spine link
  Bandwidth pcie{0};            // usable rate of a GPU's PCIe link to its NIC
};

// All-to-all of `size` over the first `count` GPUs: each GPU sends size / count to every other one,
// all at once, on the path the cluster's routing gives: GPU -> its NIC (PCIe), NIC -> the peer's
// NIC, NIC -> GPU (ScheduleContext::nic_route, as the runner takes it).
AllToAll all_to_all(const Machine& m, std::size_t count, Bytes size) {
  const topo::Cluster& c = m.cluster;
  const NetworkLayout layout(m);
  sim::Simulator sim;
  net::FlowNetwork net(sim, layout.capacities());
  topo::Router router(c);
  topo::AdaptiveSpreader spreader(c);
  const Bytes per_pair{size.value() / static_cast<std::int64_t>(count)};
  AllToAll out;
  std::vector<net::WeightedLink> weighted;
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t j = 0; j < count; ++j) {
      if (i == j) continue;
      const NodeId src = c.gpus()[i], dst = c.gpus()[j];
      const auto nic = layout.schedules().nic_route(src, dst, PlannedFlow::kDestinationRail);
      if (!nic) throw std::logic_error("no NIC route");
      const auto done = [&] { out.time = std::max(out.time, sim.now() - kTimeZero); };
      if (c.routing() == topo::Routing::kEcmp) {
        // One path per flow, hashed by the GPU pair (each NCCL connection its own queue pair).
        std::vector<LinkId> path;
        const auto append = [&](std::span<const LinkId> seg) {
          path.insert(path.end(), seg.begin(), seg.end());
        };
        append(router.route(src, nic->send_nic));
        append(
            router.route(nic->send_nic, nic->recv_nic, hash_combine(mix64(src.value), dst.value)));
        append(router.route(nic->recv_nic, dst));
        net.start_flow(path, per_pair, Duration{0}, done);
      } else {
        topo::WeightedRoute route = topo::weighted_path(router.route(src, nic->send_nic));
        topo::add_route(route, spreader.spread(nic->send_nic, nic->recv_nic));
        topo::add_route(route, topo::weighted_path(router.route(nic->recv_nic, dst)));
        weighted.clear();
        for (const auto& [l, w] : route.links) weighted.push_back({l, w});
        net.start_weighted(weighted, route.scale, per_pair, Duration{0}, done);
      }
    }
  }
  sim.run();
  for (LinkId l : c.out_links(layout.schedules().nic_of(c.gpus()[0]))) {
    if (c.link(l).tier == 1) out.nic = layout.usable_bandwidth(l);  // the NIC's cable to its leaf
  }
  out.pcie = layout.usable_bandwidth(c.out_links(c.gpus()[0]).front());
  for (std::uint32_t l = 0; l < c.link_count(); ++l) {
    const topo::LinkInfo& info = c.link(LinkId{l});
    if (info.tier != 2 || c.node(info.src).kind != topo::NodeKind::kLeafSwitch) continue;
    // Leaves hold 8 endpoints in order: leaf<k> serves GPUs 8k .. 8k + 7.
    const int leaf = std::stoi(c.node(info.src).name.substr(4));
    if (static_cast<std::size_t>(leaf) * 8 < count) {
      out.uplinks.push_back(static_cast<double>(net.link_stats(LinkId{l}).bytes.value()));
      out.uplink = layout.usable_bandwidth(LinkId{l});
    }
  }
  return out;
}

TEST(NetworkLayout, TwinServersAreBuiltOnceAndShared) {
  // Every runner's spreader on a layout gets the same classes (NetworkLayout::server_twins), the
  // ones the cluster's own ServerSymmetry gives.
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/leafspine-oversub.json",
                                 {"/fabric/routing=adaptive"});
  const NetworkLayout layout(m);
  const std::shared_ptr<const topo::ServerTwins> a = layout.server_twins();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a.get(), layout.server_twins().get());
  const std::shared_ptr<const topo::ServerTwins> own = topo::ServerSymmetry(m.cluster).server_twins();
  EXPECT_EQ(a->server_of, own->server_of);
  EXPECT_EQ(a->first, own->first);
  EXPECT_EQ(a->second, own->second);
}

TEST(NetworkLayout, TwinQuotientIsBuiltOncePerClassesAndShared) {
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-fat-tree-3tier.json",
                                 {"/fabric/radix=32", "/servers/0/count=64"});
  const NetworkLayout layout(m);
  const auto orbits = topo::ServerSymmetry(m.cluster).twin_orbits();
  ASSERT_TRUE(orbits.has_value());
  const std::shared_ptr<const topo::SwitchTwins> twins = orbits->switch_twins();
  const std::shared_ptr<const topo::TwinQuotient> q = layout.twin_quotient(twins);
  EXPECT_EQ(q.get(), layout.twin_quotient(twins).get());
  EXPECT_EQ(q->twins, twins);
  const std::shared_ptr<const topo::TwinQuotient> own = topo::twin_quotient(m.cluster, twins);
  EXPECT_EQ(q->out.begin, own->out.begin);
  EXPECT_EQ(q->out.node, own->out.node);
  EXPECT_EQ(q->in.node, own->in.node);
  EXPECT_EQ(q->multiplicity, own->multiplicity);
  EXPECT_EQ(q->class_size, own->class_size);
  EXPECT_LT(q->out.node.size(), m.cluster.out_adjacency().node.size());  // a quotient: fewer entries
  // Other classes (another symmetry's, equal but not the same object) get a quotient of their own.
  const std::shared_ptr<const topo::SwitchTwins> other = topo::ServerSymmetry(m.cluster).twin_orbits()->switch_twins();
  EXPECT_NE(layout.twin_quotient(other).get(), q.get());
}

TEST(AdaptiveRouting, ReachesTheFluidBoundWhereEcmpShowsItsCollisions) {
  // leafspine-oversub: 32 leaves x 8 single-GPU servers (one 400G NIC each), 4 spines. All-to-all
  // of S over the 64 GPUs of the first 8 leaves, S/64 per pair. B = 400 Gb/s x NDR's packet
  // efficiency 4096/4122 = 49.69 GB/s, the usable rate of a NIC cable and, at 2:1, of a leaf's
  // 400G uplink to each spine (docs/network-model.md, "Per-NIC achievable bandwidth"); a GPU's
  // PCIe link to its NIC is faster, so the NIC binds first.
  //   1:1, the NICs bind: a NIC sends 63 S/64 (its 63 peers), a leaf's four 800G uplinks carry
  //     8 x 56 S/64 (its 8 GPUs to the 56 GPUs of the other 7 leaves) = 448 S/64 at 8B, below
  //     the NICs' pace: t_1:1 = 63 (S/64) / B.
  //   2:1, the uplinks bind: 1.6 Tb/s of uplink per leaf, 4 x B: t_2:1 = 448 (S/64) / (4B).
  //   Fluid bound ratio (8 x 56 / (8 x 400G / 2)) / (63 / 400G) = 112 / 63 = 1.78.
  // Adaptive routing reaches it: each cross-leaf flow puts 1/4 of its rate on each of its leaf's
  // uplinks, so the 448 flows load the four equally (S/64 x 448 / 4 = 112 S/64 bytes each) and
  // max-min gives them B/112 each; the 7 same-leaf flows of a NIC take the rest of it,
  // B - 56 B/112 = B/2, and finish first. ECMP hashes the 448 flows of a leaf onto the 4 uplinks
  // unevenly: the busiest uplink carries more than 112 S/64 and sets the pace (above 1.9).
  const std::string file = std::string(CS_SOURCE_DIR) + "/configs/clusters/leafspine-oversub.json";
  const Machine ecmp_over = load_machine(file, {"/fabric/routing=ecmp"});
  const Machine ecmp_full = load_machine(file, {"/fabric/oversubscription=1", "/fabric/routing=ecmp"});
  const Machine ar_over = load_machine(file, {"/fabric/routing=adaptive"});
  const Machine ar_full =
      load_machine(file, {"/fabric/oversubscription=1", "/fabric/routing=adaptive"});
  ASSERT_EQ(ecmp_over.cluster.routing(), topo::Routing::kEcmp);
  ASSERT_EQ(ar_over.cluster.routing(), topo::Routing::kAdaptive);

  const Bytes S = mebibytes(64);
  const double pair = static_cast<double>(S.value()) / 64;
  const AllToAll eo = all_to_all(ecmp_over, 64, S), ef = all_to_all(ecmp_full, 64, S);
  const AllToAll ao = all_to_all(ar_over, 64, S), af = all_to_all(ar_full, 64, S);
  const double b = ao.nic.value();
  ASSERT_NEAR(b, 400e9 / 8 * 4096 / 4122, 1);
  ASSERT_DOUBLE_EQ(ao.uplink.value(), b);
  ASSERT_DOUBLE_EQ(af.uplink.value(), 2 * b);
  ASSERT_GT(ao.pcie.value(), b);
  const double ecmp_ratio = to_seconds(eo.time) / to_seconds(ef.time);
  const double ar_ratio = to_seconds(ao.time) / to_seconds(af.time);
  std::printf(
      "all_to_all 64 GPUs on 8 leaves, 2:1 over 1:1: ECMP %.3f / %.3f ms = %.3f, adaptive %.3f / "
      "%.3f ms = %.3f\n",
      to_seconds(eo.time) * 1e3, to_seconds(ef.time) * 1e3, ecmp_ratio, to_seconds(ao.time) * 1e3,
      to_seconds(af.time) * 1e3, ar_ratio);

  // Adaptive routing: the closed forms, to rounding (a picosecond per completion).
  EXPECT_NEAR(to_seconds(af.time), 63 * pair / b, 1e-9);
  EXPECT_NEAR(to_seconds(ao.time), 448 * pair / (4 * b), 1e-9);
  EXPECT_NEAR(ar_ratio, 112.0 / 63.0, 1e-4);
  ASSERT_EQ(ao.uplinks.size(), 32u);  // 8 leaves x 4 spines
  for (double bytes : ao.uplinks) EXPECT_NEAR(bytes, 112 * pair, 64);

  // ECMP: the collision loss. The same bytes cross the uplinks (448 S/64 per leaf), unevenly;
  // no uplink can carry its bytes faster than B, so the busiest one bounds the time from below.
  EXPECT_GE(ecmp_ratio, 1.9);
  ASSERT_EQ(eo.uplinks.size(), 32u);
  double total = 0, busiest = 0;
  for (double bytes : eo.uplinks) {
    total += bytes;
    busiest = std::max(busiest, bytes);
  }
  EXPECT_NEAR(total, 32 * 112 * pair, 32 * 64);
  EXPECT_GT(busiest, 112 * pair * 1.1);
  EXPECT_GE(to_seconds(eo.time), busiest / b * (1 - 1e-9));
  // Without oversubscription adaptive routing is at the NICs' bound, ECMP at or above it.
  EXPECT_GE(to_seconds(ef.time), to_seconds(af.time) * (1 - 1e-9));
}

}  // namespace
}  // namespace cs::coll
