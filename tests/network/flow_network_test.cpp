// Closed-form checks of the max-min fluid model. Each expected value is derived in a comment.
#include "sim/network/flow_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "core/random.h"

namespace cs::net {
namespace {

using topo::LinkId;

struct Harness {
  sim::Simulator sim;
  FlowNetwork net;
  explicit Harness(std::vector<LinkCapacity> links) : net(sim, std::move(links)) {}
};

// Records the delivery time of each flow.

TEST(FlowNetwork, OneFlowOnOneLinkIsLatencyPlusSizeOverBandwidth) {
  // 1 GiB over 100 GB/s with 1.5 us latency: 1073741824 / 1e11 s = 10.73741824 ms exactly
  // = 10,737,418,240 ps; plus 1,500,000 ps latency = 10,738,918,240 ps.
  Harness h({{gigabytes_per_second(100), picoseconds(1'500'000)}});
  const std::vector<LinkId> path{LinkId{0}};
  SimTime done = kTimeNever;
  h.net.start_flow(path, gibibytes(1), Duration{0}, [&] { done = h.sim.now(); });
  h.sim.run();
  EXPECT_EQ(done.time_since_epoch().count(), 10'738'918'240LL);
}

TEST(FlowNetwork, RoundsUpToTheNextPicosecond) {
  // 1 byte at 3 B/s: 1/3 s = 333,333,333,333.33 ps -> 333,333,333,334 ps (never early).
  Harness h({{bytes_per_second(3), Duration{0}}});
  const std::vector<LinkId> path{LinkId{0}};
  SimTime done = kTimeNever;
  h.net.start_flow(path, bytes(1), Duration{0}, [&] { done = h.sim.now(); });
  h.sim.run();
  EXPECT_EQ(done.time_since_epoch().count(), 333'333'333'334LL);
}

TEST(FlowNetwork, TwoFlowsShareOneLinkThenTheSurvivorGetsAll) {
  // Link B = 1e9 B/s. Flow a: 1e6 B, flow b: 3e6 B, both start at 0.
  // Phase 1: each gets B/2 = 5e8 B/s; a finishes at 1e6/5e8 = 2 ms; b has 3e6 - 1e6 = 2e6 left.
  // Phase 2: b alone at 1e9 B/s: 2e6/1e9 = 2 ms more -> b finishes at 4 ms.
  Harness h({{bytes_per_second(1e9), Duration{0}}});
  const std::vector<LinkId> path{LinkId{0}};
  SimTime a = kTimeNever, b = kTimeNever;
  h.net.start_flow(path, bytes(1'000'000), Duration{0}, [&] { a = h.sim.now(); });
  h.net.start_flow(path, bytes(3'000'000), Duration{0}, [&] { b = h.sim.now(); });
  h.sim.run();
  EXPECT_EQ(a.time_since_epoch().count(), 2'000'000'000LL);
  EXPECT_EQ(b.time_since_epoch().count(), 4'000'000'000LL);
  EXPECT_EQ(h.net.link_stats(LinkId{0}).bytes.value(), 4'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{0}).busy, picoseconds(4'000'000'000LL));
}

TEST(FlowNetwork, StatisticsMidFlightAndBusyIntervalsFollowTheFlows) {
  // Link B = 1e9 B/s. Flow a: 3e6 B at 0; flow b: 1e6 B at 1 ms; recording from 0.5 ms.
  // 0-1 ms a alone (1e6 B). From 1 ms each at 5e8 B/s: b's 1e6 B take 2 ms (ends at 3 ms), a
  // moves 1e6 B more. At 2 ms the link has carried 1e6 + 0.5e6 (a) + 0.5e6 (b) = 2e6 B in 2 ms.
  // At 3.5 ms a (0.5e6 B left) is alone, and B drops to 5e8: it ends at 3.5 + 1 = 4.5 ms, with no
  // break in the busy period. Flow c: 1e6 B at 10 ms, at 5e8 B/s: 10-12 ms.
  // Recorded: [0.5, 4.5] ms carrying 4e6 - 0.5e6 = 3.5e6 B, and [10, 12] ms carrying 1e6 B;
  // in all 5e6 B in 4.5 + 2 = 6.5 ms busy.
  Harness h({{bytes_per_second(1e9), Duration{0}}});
  const std::vector<LinkId> path{LinkId{0}};
  const auto start = [&](std::int64_t at_us, std::int64_t size) {
    h.sim.schedule_after(microseconds(at_us), sim::Phase::kDispatch,
                         [&h, &path, size] { h.net.start_flow(path, bytes(size), Duration{0}, [] {}); });
  };
  start(0, 3'000'000);
  start(1'000, 1'000'000);
  start(10'000, 1'000'000);
  h.sim.schedule_after(microseconds(500), sim::Phase::kStatistics, [&] { h.net.enable_busy_intervals(); });
  LinkStats at_2ms;
  h.sim.schedule_after(microseconds(2'000), sim::Phase::kStatistics, [&] { at_2ms = h.net.link_stats(LinkId{0}); });
  h.sim.schedule_after(microseconds(3'500), sim::Phase::kTopologyChange,
                       [&] { h.net.set_capacity(LinkId{0}, bytes_per_second(5e8)); });
  h.sim.run();
  EXPECT_EQ(at_2ms.bytes.value(), 2'000'000);
  EXPECT_EQ(at_2ms.busy, microseconds(2'000));
  EXPECT_EQ(h.net.link_stats(LinkId{0}).bytes.value(), 5'000'000);
  EXPECT_EQ(h.net.link_stats(LinkId{0}).busy, microseconds(6'500));
  const std::vector<BusyInterval>& busy = h.net.busy_intervals(LinkId{0});
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_EQ(busy[0].begin.time_since_epoch(), microseconds(500));
  EXPECT_EQ(busy[0].end.time_since_epoch(), microseconds(4'500));
  EXPECT_EQ(busy[0].bytes.value(), 3'500'000);
  EXPECT_EQ(busy[1].begin.time_since_epoch(), microseconds(10'000));
  EXPECT_EQ(busy[1].end.time_since_epoch(), microseconds(12'000));
  EXPECT_EQ(busy[1].bytes.value(), 1'000'000);
}

TEST(FlowNetwork, ThreeFlowsOnTwoLinksWithDifferentBottlenecks) {
  // Links: L0 = 10 B/us (1e7 B/s), L1 = 4e6 B/s.
  // Flow x on L0 only, flow y on L0 and L1, flow z on L1 only.
  // Progressive filling: fair shares L0: 1e7/2 = 5e6, L1: 4e6/2 = 2e6 -> L1 saturates first:
  //   y = z = 2e6. Then L0 has 1e7 - 2e6 = 8e6 left for x alone: x = 8e6.
  // Sizes: x = 8e6 B (1 s), y = 2e6 B (1 s), z = 2e6 B (1 s): all finish at exactly 1 s.
  Harness h({{bytes_per_second(1e7), Duration{0}}, {bytes_per_second(4e6), Duration{0}}});
  const std::vector<LinkId> px{LinkId{0}}, py{LinkId{0}, LinkId{1}}, pz{LinkId{1}};
  SimTime x = kTimeNever, y = kTimeNever, z = kTimeNever;
  h.net.start_flow(px, bytes(8'000'000), Duration{0}, [&] { x = h.sim.now(); });
  h.net.start_flow(py, bytes(2'000'000), Duration{0}, [&] { y = h.sim.now(); });
  h.net.start_flow(pz, bytes(2'000'000), Duration{0}, [&] { z = h.sim.now(); });
  h.sim.run_until(SimTime{Duration{1}});
  EXPECT_DOUBLE_EQ(h.net.link_rate(LinkId{0}).value(), 1e7);  // x 8e6 + y 2e6
  EXPECT_DOUBLE_EQ(h.net.link_rate(LinkId{1}).value(), 4e6);  // y 2e6 + z 2e6
  h.sim.run();
  const std::int64_t one_second = 1'000'000'000'000LL;
  EXPECT_EQ(x.time_since_epoch().count(), one_second);
  EXPECT_EQ(y.time_since_epoch().count(), one_second);
  EXPECT_EQ(z.time_since_epoch().count(), one_second);
}

TEST(FlowNetwork, ExtraLatencyAndZeroByteFlows) {
  // A zero-byte flow is delivered after path latency + extra latency: 2 us + 3 us = 5 us.
  Harness h({{bytes_per_second(1e9), microseconds(2)}});
  const std::vector<LinkId> path{LinkId{0}};
  SimTime done = kTimeNever;
  h.net.start_flow(path, bytes(0), microseconds(3), [&] { done = h.sim.now(); });
  h.sim.run();
  EXPECT_EQ(done.time_since_epoch(), microseconds(5));
}

// A path of 1 to max_hops distinct links among `links`, drawn from rng.
std::vector<LinkId> random_path(Rng& rng, std::uint64_t links, std::uint64_t max_hops) {
  std::vector<LinkId> p;
  const auto hops = 1 + rng.below(max_hops);
  for (std::uint64_t k = 0; k < hops; ++k) {
    LinkId l{static_cast<std::uint32_t>(rng.below(links))};
    if (std::find(p.begin(), p.end(), l) == p.end()) p.push_back(l);
  }
  return p;
}

TEST(FlowNetwork, RandomFlowsConserveBytesAndNeverExceedCapacity) {
  // Property: on random paths over 12 links, every link's carried bytes equal the sum of the
  // sizes of the flows crossing it, and no link ever runs above its capacity.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng = Rng::derive(seed, 7);
    std::vector<LinkCapacity> caps;
    for (int i = 0; i < 12; ++i) caps.push_back({bytes_per_second(1e6 * static_cast<double>(1 + rng.below(50))), Duration{0}});
    Harness h(caps);
    std::vector<std::vector<LinkId>> paths(40);
    std::vector<double> expected(12, 0);
    int delivered = 0;
    for (auto& p : paths) {
      p = random_path(rng, 12, 4);
      const Bytes b = bytes(static_cast<std::int64_t>(1 + rng.below(5'000'000)));
      for (LinkId l : p) expected[l.value] += static_cast<double>(b.value());
      h.net.start_flow(p, b, Duration{0}, [&] { ++delivered; });
    }
    while (h.sim.pending_events() > 0) {
      h.sim.run_until(h.sim.now() + microseconds(20'000));
      for (std::uint32_t l = 0; l < 12; ++l) {
        EXPECT_LE(h.net.link_rate(LinkId{l}).value(), caps[l].bandwidth.value() * (1 + 1e-9));
      }
    }
    EXPECT_EQ(delivered, 40);
    for (std::uint32_t l = 0; l < 12; ++l) {
      const auto st = h.net.link_stats(LinkId{l});
      EXPECT_NEAR(static_cast<double>(st.bytes.value()), expected[l], 1 + expected[l] * 1e-9) << l;
      const double util = static_cast<double>(st.bytes.value()) /
                          (caps[l].bandwidth.value() * to_seconds(h.sim.now() - kTimeZero));
      EXPECT_LE(util, 1 + 1e-9);
    }
  }
}

// Max-min fair rates by progressive filling, written out plainly (the reference for the solver).
std::vector<double> max_min_rates(const std::vector<std::vector<LinkId>>& paths, const std::vector<double>& capacity) {
  std::vector<double> rate(paths.size(), 0);
  std::vector<bool> frozen(paths.size(), false);
  std::vector<double> residual = capacity;
  for (;;) {
    double best = std::numeric_limits<double>::infinity();
    std::size_t at = capacity.size();
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      int users = 0;
      for (std::size_t f = 0; f < paths.size(); ++f) {
        if (!frozen[f] && std::find(paths[f].begin(), paths[f].end(), LinkId{static_cast<std::uint32_t>(l)}) != paths[f].end()) ++users;
      }
      if (users > 0 && residual[l] / users < best) {
        best = residual[l] / users;
        at = l;
      }
    }
    if (at == capacity.size()) return rate;
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f] || std::find(paths[f].begin(), paths[f].end(), LinkId{static_cast<std::uint32_t>(at)}) == paths[f].end()) continue;
      frozen[f] = true;
      rate[f] = best;
      for (LinkId l : paths[f]) residual[l.value] -= best;
    }
  }
}

// n links of capacity unit x (1 + a draw below spread), bytes/s, in both forms the tests use.
struct RandomLinks {
  std::vector<LinkCapacity> caps;
  std::vector<double> capacity;
};
RandomLinks random_links(Rng& rng, int n, double unit, std::uint64_t spread) {
  RandomLinks out;
  for (int i = 0; i < n; ++i) {
    out.capacity.push_back(unit * static_cast<double>(1 + rng.below(spread)));
    out.caps.push_back({bytes_per_second(out.capacity.back()), Duration{0}});
  }
  return out;
}

// Every link's rate in `net` is the sum of the reference max-min rates of the `active` flows.
void expect_max_min(const FlowNetwork& net, const std::vector<std::vector<LinkId>>& active,
                    const std::vector<double>& capacity, std::uint64_t seed) {
  const std::vector<double> rate = max_min_rates(active, capacity);
  for (std::uint32_t l = 0; l < capacity.size(); ++l) {
    double sum = 0;
    for (std::size_t f = 0; f < active.size(); ++f) {
      if (std::find(active[f].begin(), active[f].end(), LinkId{l}) != active[f].end()) sum += rate[f];
    }
    EXPECT_NEAR(net.link_rate(LinkId{l}).value(), sum, capacity[l] * 1e-9) << "seed " << seed << " link " << l;
  }
}

// A seeded random run checked against max_min_rates: `flows` flows of 1-3 hops over `links`
// links, started in `waves` waves `wave_gap` apart; every `check_every` each link's rate must be
// the reference's. Returns how many instants were checked.
struct MaxMinRun {
  std::uint64_t salt;
  int links;
  double unit;                // link capacity unit, bytes/s
  std::uint64_t spread;       // capacities unit x 1..spread
  std::size_t flows;
  std::uint64_t max_bytes;
  std::uint64_t waves;
  Duration wave_gap;
  Duration check_every;
};
int run_checking_max_min(const MaxMinRun& p, std::uint64_t seed) {
  Rng rng = Rng::derive(seed, p.salt);
  const auto [caps, capacity] = random_links(rng, p.links, p.unit, p.spread);
  Harness h(caps);
  std::vector<std::vector<LinkId>> paths(p.flows);
  std::vector<int> state(paths.size(), 0);  // 0 not started, 1 sending, 2 done
  for (std::size_t i = 0; i < paths.size(); ++i) {
    paths[i] = random_path(rng, static_cast<std::uint64_t>(p.links), 3);
    const Bytes b = bytes(static_cast<std::int64_t>(1 + rng.below(p.max_bytes)));
    const Duration at = p.wave_gap * static_cast<std::int64_t>(rng.below(p.waves));
    h.sim.schedule_after(at, sim::Phase::kDispatch, [&, i, b] {
      state[i] = 1;
      h.net.start_flow(paths[i], b, Duration{0}, [&, i] { state[i] = 2; });
    });
  }
  int checks = 0;
  while (h.sim.pending_events() > 0) {
    h.sim.run_until(h.sim.now() + p.check_every);
    std::vector<std::vector<LinkId>> active;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (state[i] == 1) active.push_back(paths[i]);
    }
    expect_max_min(h.net, active, capacity, seed);
    ++checks;
  }
  EXPECT_TRUE(std::all_of(state.begin(), state.end(), [](int st) { return st == 2; })) << "seed " << seed;
  return checks;
}

TEST(FlowNetwork, RatesStayMaxMinFairWhileFlowsFinish) {
  // 60 flows started together with different sizes finish one after another; a solve after
  // departures only refills the flows at or above the slowest departed flow's rate
  // (flow_network.h, "Removals"). At every instant each link's rate equals the sum of the
  // reference max-min rates of the flows still sending.
  const MaxMinRun run{13, 10, 1e6, 20, 60, 2'000'000, 1, Duration{0}, microseconds(5'000)};
  for (std::uint64_t seed = 1; seed <= 10; ++seed) EXPECT_GT(run_checking_max_min(run, seed), 20);
}

TEST(FlowNetwork, ManyFlowsPerLinkStayMaxMinFairThroughStartsAndDepartures) {
  // Links that carry about a hundred flows each, as a NIC's link does in an all-to-all: a solve
  // after departures finds the flows it refills at the top of each link's heap by rate and
  // charges the rest by the link's total rate (flow_network.h, "Removals"). Flows start in three
  // waves (solves that refill everything) and finish one by one (solves that refill the top).
  const MaxMinRun run{17, 6, 1e8, 8, 300, 20'000'000, 3, microseconds(40'000), microseconds(3'000)};
  for (std::uint64_t seed = 1; seed <= 4; ++seed) EXPECT_GT(run_checking_max_min(run, seed), 100);
}

// One seeded random run on `net` (its simulator `sim`): 30 flows of 1-3 hops over 12 links, some
// started later; the delivery time of each, then every link's bytes and busy time.
std::vector<std::int64_t> random_run(sim::Simulator& sim, FlowNetwork& net, std::uint64_t seed) {
  Rng rng = Rng::derive(seed, 11);
  std::vector<std::int64_t> out(30, -1);
  std::vector<std::vector<LinkId>> paths(30);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    paths[i] = random_path(rng, 12, 3);
    const Bytes b = bytes(static_cast<std::int64_t>(1 + rng.below(5'000'000)));
    const Duration at = microseconds(static_cast<std::int64_t>(rng.below(3)) * 1000);
    sim.schedule_after(at, sim::Phase::kDispatch, [&, i, b] {
      net.start_flow(paths[i], b, Duration{0}, [&, i] { out[i] = sim.now().time_since_epoch().count(); });
    });
  }
  sim.run();
  for (std::uint32_t l = 0; l < 12; ++l) {
    const LinkStats st = net.link_stats(LinkId{l});
    out.push_back(st.bytes.value());
    out.push_back(st.busy.count());
  }
  return out;
}

TEST(FlowNetwork, AResetNetworkRunsExactlyAsANewOne) {
  // Reset (the tuner's reuse of one network) must leave nothing behind: after a run, a capacity
  // change and busy-interval recording, a reset network gives the same delivery times, bytes
  // and busy times, to the picosecond and byte, as a network built new.
  std::vector<LinkCapacity> caps;
  for (int i = 0; i < 12; ++i) caps.push_back({bytes_per_second(1e6 * (1 + i % 5)), picoseconds(1000 * i)});
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    sim::Simulator fresh_sim;
    FlowNetwork fresh(fresh_sim, caps);
    const std::vector<std::int64_t> expected = random_run(fresh_sim, fresh, seed);
    sim::Simulator first_sim;
    FlowNetwork reused(first_sim, caps);
    reused.enable_busy_intervals();
    random_run(first_sim, reused, seed + 100);
    reused.set_capacity(LinkId{3}, bytes_per_second(1));
    sim::Simulator second_sim;
    reused.reset(second_sim);
    EXPECT_TRUE(reused.busy_intervals(LinkId{0}).empty());
    EXPECT_EQ(reused.capacity(LinkId{3}), caps[3].bandwidth);
    EXPECT_EQ(random_run(second_sim, reused, seed), expected) << "seed " << seed;
    EXPECT_EQ(reused.flows_started(), fresh.flows_started());
    EXPECT_EQ(reused.solves(), fresh.solves());
  }
}

}  // namespace
}  // namespace cs::net

namespace cs::net {
namespace {

TEST(FlowNetworkPipeline, MembersShareOneRateAndLoadLinksByWeight) {
  // A pipeline of two members, both crossing link 0 (weight 2), one also crossing link 1, and a
  // plain flow on link 0. Capacity 1e9 B/s each. Link 0 carries weight 3: fair share 1e9/3 for
  // the pipeline (per member) and the flow. Sizes: pipeline 1e6 B per member, flow 1e6 B:
  // both drain at 1e9/3 B/s -> 3 ms; delivery of the pipeline at 3 ms + its tail (5 us).
  sim::Simulator sim;
  FlowNetwork net(sim, {{bytes_per_second(1e9), Duration{0}}, {bytes_per_second(1e9), Duration{0}}});
  const std::vector<LinkId> m1{LinkId{0}}, m2{LinkId{0}, LinkId{1}}, solo{LinkId{0}};
  const std::span<const LinkId> members[2] = {m1, m2};
  SimTime pipe = kTimeNever, flow = kTimeNever;
  net.start_pipeline(members, bytes(1'000'000), microseconds(5), [&] { pipe = sim.now(); });
  net.start_flow(solo, bytes(1'000'000), Duration{0}, [&] { flow = sim.now(); });
  sim.run_until(SimTime{Duration{1}});
  EXPECT_NEAR(net.link_rate(LinkId{0}).value(), 1e9, 1e-3);      // 2 x 1e9/3 + 1e9/3
  EXPECT_NEAR(net.link_rate(LinkId{1}).value(), 1e9 / 3, 1e-3);  // one member
  sim.run();
  EXPECT_EQ(flow.time_since_epoch().count(), 3'000'000'000LL);
  EXPECT_EQ(pipe.time_since_epoch().count(), 3'000'000'000LL + 5'000'000LL);
  // Bytes: link 0 carried 2 members + the flow = 3e6; link 1 one member = 1e6.
  EXPECT_EQ(net.link_stats(LinkId{0}).bytes.value(), 3'000'000);
  EXPECT_EQ(net.link_stats(LinkId{1}).bytes.value(), 1'000'000);
}

TEST(FlowNetworkPipeline, TheSlowestMemberSetsThePace) {
  // Members on link 0 (1e9 B/s) and link 1 (2.5e8 B/s): one rate, bounded by link 1:
  // 1e6 B / 2.5e8 B/s = 4 ms for both (an independent flow on link 0 would take 1 ms).
  sim::Simulator sim;
  FlowNetwork net(sim, {{bytes_per_second(1e9), Duration{0}}, {bytes_per_second(2.5e8), Duration{0}}});
  const std::vector<LinkId> fast{LinkId{0}}, slow{LinkId{1}};
  const std::span<const LinkId> members[2] = {fast, slow};
  SimTime done = kTimeNever;
  net.start_pipeline(members, bytes(1'000'000), Duration{0}, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done.time_since_epoch().count(), 4'000'000'000LL);
}

}  // namespace
}  // namespace cs::net
