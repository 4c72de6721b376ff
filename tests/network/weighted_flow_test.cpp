// Weighted flows (FlowNetwork::start_weighted): a flow that puts weight_l / K of its rate on link
// l, as adaptive routing sprays it over equal-cost paths. Each expected value is derived in a
// comment.
#include <gtest/gtest.h>

#include <vector>

#include "core/errors.h"
#include "sim/network/flow_network.h"

namespace cs::net {
namespace {

struct Harness {
  sim::Simulator sim;
  FlowNetwork net;
  explicit Harness(std::vector<LinkCapacity> links) : net(sim, std::move(links)) {}
};

constexpr std::int64_t kMillisecond = 1'000'000'000;  // ps

TEST(WeightedFlow, SprayedFlowsReachTwiceTheRateOfEcmpCollidedOnes) {
  // Two spine paths, links 0 and 1, C = 1e9 B/s each; link 2 (4e9 B/s) is x's alone.
  // ECMP, both flows hashed onto link 0: C/2 each, B = 1e6 B in 2 ms; link 1 idle.
  // Sprayed (K = 2, weight 1 on each spine path; x also weight 2 = all of it on link 2):
  // link 0 carries r_x/2 + r_y/2 <= C, likewise link 1, so r_x = r_y = C: 1 ms, twice the
  // rate. Per link w_l B / K: links 0 and 1 carry 1e6/2 of each flow, 1e6 in all; link 2 2 x 1e6/2.
  const std::vector<LinkCapacity> caps{{bytes_per_second(1e9), Duration{0}},
                                       {bytes_per_second(1e9), Duration{0}},
                                       {bytes_per_second(4e9), Duration{0}}};
  const Bytes b = bytes(1'000'000);
  {
    Harness h(caps);
    const std::vector<LinkId> spine0{LinkId{0}};
    SimTime x = kTimeNever, y = kTimeNever;
    h.net.start_flow(spine0, b, Duration{0}, [&] { x = h.sim.now(); });
    h.net.start_flow(spine0, b, Duration{0}, [&] { y = h.sim.now(); });
    h.sim.run();
    EXPECT_EQ(x.time_since_epoch().count(), 2 * kMillisecond);
    EXPECT_EQ(y.time_since_epoch().count(), 2 * kMillisecond);
    EXPECT_EQ(h.net.link_stats(LinkId{1}).bytes.value(), 0);
  }
  Harness h(caps);
  const std::vector<WeightedLink> wx{{LinkId{0}, 1}, {LinkId{1}, 1}, {LinkId{2}, 2}};
  const std::vector<WeightedLink> wy{{LinkId{0}, 1}, {LinkId{1}, 1}};
  SimTime x = kTimeNever, y = kTimeNever;
  h.net.start_weighted(wx, 2, b, Duration{0}, [&] { x = h.sim.now(); });
  h.net.start_weighted(wy, 2, b, Duration{0}, [&] { y = h.sim.now(); });
  h.sim.run_until(SimTime{Duration{1}});
  EXPECT_DOUBLE_EQ(h.net.link_rate(LinkId{0}).value(), 1e9);  // r_x/2 + r_y/2
  EXPECT_DOUBLE_EQ(h.net.link_rate(LinkId{2}).value(), 1e9);  // r_x
  h.sim.run();
  EXPECT_EQ(x.time_since_epoch().count(), kMillisecond);
  EXPECT_EQ(y.time_since_epoch().count(), kMillisecond);
  EXPECT_EQ(h.net.link_stats(LinkId{0}).bytes.value(), 1'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{1}).bytes.value(), 1'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{2}).bytes.value(), 1'000'000);
}

TEST(WeightedFlow, UnevenWeightsLoadEachLinkByItsShare) {
  // One flow of B = 4e6 B, 3/4 on link 0 (C0 = 3e9 B/s) and 1/4 on link 1 (C1 = 3e9 B/s), K = 4:
  // link 0 binds, 3/4 r = 3e9, r = 4e9 B/s: done in 1 ms. Link 0 carries 3 B/4 = 3e6 B, link 1
  // B/4 = 1e6 B, at rates 3e9 and 1e9 B/s.
  Harness h({{bytes_per_second(3e9), Duration{0}}, {bytes_per_second(3e9), Duration{0}}});
  const std::vector<WeightedLink> w{{LinkId{0}, 3}, {LinkId{1}, 1}};
  SimTime done = kTimeNever;
  h.net.start_weighted(w, 4, bytes(4'000'000), microseconds(2), [&] { done = h.sim.now(); });
  h.sim.run_until(SimTime{Duration{1}});
  EXPECT_DOUBLE_EQ(h.net.link_rate(LinkId{0}).value(), 3e9);
  EXPECT_DOUBLE_EQ(h.net.link_rate(LinkId{1}).value(), 1e9);
  h.sim.run();
  EXPECT_EQ(done.time_since_epoch().count(), kMillisecond + 2'000'000);  // + the 2 us tail
  EXPECT_EQ(h.net.link_stats(LinkId{0}).bytes.value(), 3'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{1}).bytes.value(), 1'000'000);
}

TEST(WeightedFlow, SpreadsOfDifferentScaleShareALinkByTheirRates) {
  // Max-min fairness is over the flows' own rates, whatever their spreads' denominators. Link 0
  // (C = 1e9 B/s, as every link here) carries x (K = 2: 1/2 on link 0, 1/2 on link 1) and y (K = 4:
  // 1/4 on link 0, 1/4 on each of links 2, 3, 4). Both grow at one rate r until link 0 saturates:
  // r/2 + r/4 = C, r = 4C/3 (links 1-4 carry at most 2C/3 < C). B = 4e6 B each: 3 ms. Link 0
  // carries B/2 + B/4 = 3e6 B; link 1 B/2. (Sharing by unit rates r/K would give x C and y 2C.)
  std::vector<LinkCapacity> caps(5, LinkCapacity{bytes_per_second(1e9), Duration{0}});
  Harness h(caps);
  const std::vector<WeightedLink> wx{{LinkId{0}, 1}, {LinkId{1}, 1}};
  const std::vector<WeightedLink> wy{{LinkId{0}, 1}, {LinkId{2}, 1}, {LinkId{3}, 1}, {LinkId{4}, 1}};
  SimTime x = kTimeNever, y = kTimeNever;
  h.net.start_weighted(wx, 2, bytes(4'000'000), Duration{0}, [&] { x = h.sim.now(); });
  h.net.start_weighted(wy, 4, bytes(4'000'000), Duration{0}, [&] { y = h.sim.now(); });
  h.sim.run_until(SimTime{Duration{1}});
  EXPECT_NEAR(h.net.link_rate(LinkId{0}).value(), 1e9, 1e-3);
  EXPECT_NEAR(h.net.link_rate(LinkId{1}).value(), 2e9 / 3, 1e-3);  // r_x / 2
  EXPECT_NEAR(h.net.link_rate(LinkId{2}).value(), 1e9 / 3, 1e-3);  // r_y / 4
  h.sim.run();
  EXPECT_NEAR(static_cast<double>(x.time_since_epoch().count()), 3.0 * kMillisecond, 1);
  EXPECT_NEAR(static_cast<double>(y.time_since_epoch().count()), 3.0 * kMillisecond, 1);
  EXPECT_EQ(h.net.link_stats(LinkId{0}).bytes.value(), 3'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{1}).bytes.value(), 2'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{4}).bytes.value(), 1'000'000);
}

TEST(WeightedFlow, ScaleOneWithMultiplicitiesIsAPipeline) {
  // A pipeline of members {0, 1} and {1, 2} crosses link 1 twice; as a weighted flow it is
  // {0: 1, 1: 2, 2: 1} over K = 1 (here with link 1 listed twice, weight 1 each, and a weight-0
  // link 3 that adds no load). Next to an independent flow on link 1, both runs give the same
  // times, picosecond for picosecond, and the same bytes per link.
  const std::vector<LinkCapacity> caps{{bytes_per_second(5e9), nanoseconds(300)},
                                       {bytes_per_second(2e9), nanoseconds(300)},
                                       {bytes_per_second(7e9), nanoseconds(300)},
                                       {bytes_per_second(1e9), nanoseconds(300)}};
  const std::vector<LinkId> m0{LinkId{0}, LinkId{1}}, m1{LinkId{1}, LinkId{2}}, other{LinkId{1}};
  const std::vector<std::span<const LinkId>> members{m0, m1};
  const std::vector<WeightedLink> weighted{
      {LinkId{0}, 1}, {LinkId{1}, 1}, {LinkId{3}, 0}, {LinkId{1}, 1}, {LinkId{2}, 1}};
  std::vector<std::int64_t> times[2];
  std::vector<std::int64_t> link_bytes[2];
  for (int run = 0; run < 2; ++run) {
    Harness h(caps);
    auto record = [&, run] { times[run].push_back(h.sim.now().time_since_epoch().count()); };
    if (run == 0)
      h.net.start_pipeline(members, bytes(3'000'000), microseconds(1), record);
    else
      h.net.start_weighted(weighted, 1, bytes(3'000'000), microseconds(1), record);
    h.net.start_flow(other, bytes(1'000'000), Duration{0}, record);
    h.sim.run();
    for (std::uint32_t l = 0; l < 4; ++l)
      link_bytes[run].push_back(h.net.link_stats(LinkId{l}).bytes.value());
  }
  // Link 1 (2e9): the pipeline's weight 2 and the flow's 1 share it max-min: r = 2e9/3 each;
  // the flow's 1e6 B drain at 1.5 ms, then the pipeline alone at 1e9 for its last 2e6 B: 3.5 ms.
  const std::vector<std::int64_t> expected_times{1'500'000'000 + 300'000,
                                                 3'500'000'000 + 1'000'000};
  EXPECT_EQ(times[0], expected_times);
  EXPECT_EQ(times[1], expected_times);
  EXPECT_EQ(link_bytes[0], (std::vector<std::int64_t>{3'000'000, 7'000'000, 3'000'000, 0}));
  EXPECT_EQ(link_bytes[1], link_bytes[0]);
}

TEST(WeightedFlow, NothingToCarryTakesTheTailAndAZeroScaleIsABug) {
  Harness h({{bytes_per_second(1e9), Duration{0}}});
  const std::vector<WeightedLink> none{{LinkId{0}, 0}};
  SimTime done = kTimeNever;
  h.net.start_weighted(none, 4, bytes(1'000), microseconds(3), [&] { done = h.sim.now(); });
  h.sim.run();
  EXPECT_EQ(done.time_since_epoch().count(), 3'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{0}).bytes.value(), 0);
  const std::vector<WeightedLink> one{{LinkId{0}, 1}};
  EXPECT_THROW(h.net.start_weighted(one, 0, bytes(1), Duration{0}, [] {}), InternalError);
  const std::vector<WeightedLink> unknown{{LinkId{9}, 1}};
  EXPECT_THROW(h.net.start_weighted(unknown, 1, bytes(1), Duration{0}, [] {}), InternalError);
}

}  // namespace
}  // namespace cs::net
