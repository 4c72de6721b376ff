// The closed form of a round of equal flows (sim/network/equal_flows_round.h) against the flow
// network that simulates them: the same last delivery, to the picoseconds of rounding, on random
// rounds of single flows, pipelines and weighted flows over links of mixed capacities, where
// flows end at many different instants and the rates change at each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/errors.h"
#include "core/random.h"
#include "sim/network/equal_flows_round.h"
#include "sim/network/flow_network.h"

namespace cs::net {
namespace {

struct Round {
  std::vector<LinkCapacity> links;
  struct Flow {
    int kind = 0;  // 0 single, 1 pipeline, 2 weighted
    std::vector<std::vector<LinkId>> members;
    std::vector<std::uint32_t> copies;
    std::vector<WeightedLink> weighted;
    std::uint32_t scale = 1;
    Duration extra{0};
  };
  std::vector<Flow> flows;
  Bytes bytes{0};
  Duration tail{0};
};

// Flows over `n` links of 1 to 8 x 1e9 B/s with latencies of 0 to 3 ns; each single flow's
// extra latency makes its delivery `tail` after its last byte, as the collective runner does.
Round random_round(std::uint64_t seed, std::size_t n, std::size_t flows) {
  Rng rng(seed);
  Round r;
  for (std::size_t l = 0; l < n; ++l) {
    r.links.push_back({bytes_per_second(1e9 * static_cast<double>(1 + rng.below(8))), Duration{static_cast<std::int64_t>(rng.below(4000))}});
  }
  r.bytes = Bytes{static_cast<std::int64_t>(100'000 + rng.below(1'000'000))};
  r.tail = Duration{20'000};
  const auto path = [&] {
    std::vector<LinkId> p;
    const std::size_t hops = 1 + rng.below(4);
    while (p.size() < hops) {
      const LinkId l{static_cast<std::uint32_t>(rng.below(n))};
      if (std::find(p.begin(), p.end(), l) == p.end()) p.push_back(l);
    }
    return p;
  };
  for (std::size_t f = 0; f < flows; ++f) {
    Round::Flow flow;
    flow.kind = static_cast<int>(rng.below(3));
    if (flow.kind == 0) {
      flow.members.push_back(path());
      Duration latency{0};
      for (LinkId l : flow.members[0]) latency += r.links[l.value].latency;
      flow.extra = r.tail - latency;
    } else if (flow.kind == 1) {
      for (std::size_t m = 1 + rng.below(3); m > 0; --m) {
        flow.members.push_back(path());
        flow.copies.push_back(static_cast<std::uint32_t>(1 + rng.below(4)));
      }
    } else {
      flow.scale = static_cast<std::uint32_t>(1 + rng.below(6));
      for (LinkId l : path()) flow.weighted.push_back({l, static_cast<std::uint32_t>(1 + rng.below(flow.scale + 2))});
    }
    r.flows.push_back(std::move(flow));
  }
  return r;
}

std::vector<std::span<const LinkId>> spans(const Round::Flow& f) {
  return {f.members.begin(), f.members.end()};
}

// The round simulated: its last delivery and how many different instants its flows ended at.
std::pair<Duration, std::size_t> simulate(const Round& r) {
  sim::Simulator sim;
  FlowNetwork net(sim, r.links);
  std::vector<SimTime> ends;
  const auto done = [&] { ends.push_back(sim.now()); };
  for (const Round::Flow& f : r.flows) {
    if (f.kind == 0) net.start_flow(f.members[0], r.bytes, f.extra, done);
    else if (f.kind == 1) net.start_pipeline(spans(f), f.copies, r.bytes, r.tail, done);
    else net.start_weighted(f.weighted, f.scale, r.bytes, r.tail, done);
  }
  sim.run();
  std::sort(ends.begin(), ends.end());
  return {ends.back() - kTimeZero, static_cast<std::size_t>(std::unique(ends.begin(), ends.end()) - ends.begin())};
}

Duration closed_form(const Round& r) {
  sim::Simulator sim;
  FlowNetwork net(sim, r.links);
  EqualFlowsRound round(net);
  for (const Round::Flow& f : r.flows) {
    if (f.kind == 0) round.add_flow(f.members[0], r.bytes, f.extra);
    else if (f.kind == 1) round.add_pipeline(spans(f), f.copies, r.bytes, r.tail);
    else round.add_weighted(f.weighted, f.scale, r.bytes, r.tail);
  }
  return round.end();
}

TEST(EqualFlowsRound, EndsWhenTheFlowNetworkDeliversTheLastFlow) {
  // 200 random rounds of 5 to 400 flows over 4 to 60 links. The flows end at many instants (the
  // rates change after each), so only the bottleneck's flows move at one rate throughout. The
  // network advances remaining bytes at every solve and rounds each end up to the picosecond:
  // a picosecond per distinct end is the slack.
  std::size_t instants = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(seed);
    Rng size(seed * 7919);
    const std::size_t links = 4 + size.below(57), flows = 5 + size.below(396);
    const Round r = random_round(seed, links, flows);
    const auto [simulated, ends] = simulate(r);
    instants += ends;
    const Duration closed = closed_form(r);
    EXPECT_LE(std::abs((closed - simulated).count()), static_cast<std::int64_t>(ends) + 1);
  }
  EXPECT_GT(instants, 200u * 4);  // the rounds' flows did not all end together
}

TEST(EqualFlowsRound, TheSlowestLinkPerUnitOfWeightSetsTheEnd) {
  // Link 0: 1e9 B/s, two single flows and a pipeline member of 3 copies: W = 5, 2e8 B/s each.
  // Link 1: 4e9 B/s under a weighted flow putting 3/2 of its rate there and one single flow:
  // W = 2.5, 1.6e9 B/s. lambda* = 2e8: 1e6 B take 5 ms; the tail 1 us after.
  sim::Simulator sim;
  FlowNetwork net(sim, {{bytes_per_second(1e9), Duration{0}}, {bytes_per_second(4e9), Duration{0}}});
  EqualFlowsRound round(net);
  const std::vector<LinkId> l0{LinkId{0}}, l1{LinkId{1}};
  const Bytes b = bytes(1'000'000);
  const Duration tail{1'000'000};
  round.add_flow(l0, b, tail);
  round.add_flow(l0, b, tail);
  const std::span<const LinkId> member[1] = {l0};
  const std::uint32_t three[1] = {3};
  round.add_pipeline(member, three, b, tail);
  const std::vector<WeightedLink> w{{LinkId{1}, 3}};
  round.add_weighted(w, 2, b, tail);
  round.add_flow(l1, b, tail);
  EXPECT_EQ(round.end().count(), 5'000'000'000 + 1'000'000);
  // A flow that moves nothing is delivered after its own tail: a later one is the end.
  round.add_flow({}, b, Duration{6'000'000'000});
  EXPECT_EQ(round.end().count(), 6'000'000'000);
  round.clear();
  EXPECT_EQ(round.end().count(), 0);
}

TEST(EqualFlowsRound, RefusesFlowsOfDifferentBytesOrTails) {
  sim::Simulator sim;
  FlowNetwork net(sim, {{bytes_per_second(1e9), Duration{0}}});
  EqualFlowsRound round(net);
  const std::vector<LinkId> l0{LinkId{0}};
  round.add_flow(l0, bytes(1000), Duration{0});
  EXPECT_THROW(round.add_flow(l0, bytes(1001), Duration{0}), InternalError);
  EXPECT_THROW(round.add_flow(l0, bytes(1000), Duration{1}), InternalError);
  round.add_flow(l0, bytes(0), Duration{5});  // moves nothing: any size and tail
}

}  // namespace
}  // namespace cs::net
