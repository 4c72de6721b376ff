// The event engine (sim/engine/simulator.h): events run in (time, phase, sequence) order, lazy
// cancellation by (slot, generation) handle, the clock, and the trace hash.
#include "sim/engine/simulator.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/random.h"

namespace cs::sim {
namespace {

SimTime at_ps(std::int64_t ps) { return kTimeZero + picoseconds(ps); }
std::int64_t ps_of(SimTime t) { return t.time_since_epoch().count(); }

constexpr std::array kAllPhases{Phase::kTopologyChange, Phase::kCompletion, Phase::kDispatch,
                                Phase::kRateUpdate, Phase::kStatistics};

TEST(EngineSimulator, OrdersByTimePhaseThenSequence) {
  // 2000 events at random (time, phase) from a seeded stream; each records its key when it runs.
  // The executed keys must be sorted by (time, phase, sequence number).
  Simulator sim;
  Rng rng(2024);
  std::vector<std::tuple<std::int64_t, int, int>> ran;
  for (int seq = 0; seq < 2000; ++seq) {
    const auto t = static_cast<std::int64_t>(rng.below(50));
    const Phase phase = kAllPhases[rng.below(kAllPhases.size())];
    sim.schedule_at(at_ps(t), phase, [&ran, &sim, phase, seq] {
      ran.emplace_back(ps_of(sim.now()), static_cast<int>(phase), seq);
    });
  }
  sim.run();
  ASSERT_EQ(ran.size(), 2000u);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
  EXPECT_EQ(sim.events_executed(), 2000u);
  EXPECT_EQ(sim.pending_events(), 0u);
  EXPECT_EQ(ps_of(sim.now()), std::get<0>(ran.back()));
}

TEST(EngineSimulator, SameTimeAndPhaseKeepsSchedulingOrder) {
  Simulator sim;
  std::vector<int> ran;
  for (int i = 0; i < 100; ++i) {
    sim.schedule_at(at_ps(7), Phase::kDispatch, [&ran, i] { ran.push_back(i); });
  }
  sim.run();
  std::vector<int> expected(100);
  for (int i = 0; i < 100; ++i) expected[i] = i;
  EXPECT_EQ(ran, expected);
}

TEST(EngineSimulator, PhasesRunInTheirNamedOrder) {
  // Scheduled in reverse phase order at one instant, they run in enum order.
  EXPECT_LT(Phase::kTopologyChange, Phase::kCompletion);
  EXPECT_LT(Phase::kCompletion, Phase::kDispatch);
  EXPECT_LT(Phase::kDispatch, Phase::kRateUpdate);
  EXPECT_LT(Phase::kRateUpdate, Phase::kStatistics);
  Simulator sim;
  std::vector<Phase> ran;
  for (auto it = kAllPhases.rbegin(); it != kAllPhases.rend(); ++it) {
    const Phase p = *it;
    sim.schedule_at(at_ps(5), p, [&ran, p] { ran.push_back(p); });
  }
  // An earlier time beats any phase.
  sim.schedule_at(at_ps(4), Phase::kStatistics, [&ran] { ran.push_back(Phase::kStatistics); });
  sim.run();
  const std::vector<Phase> expected{Phase::kStatistics, Phase::kTopologyChange, Phase::kCompletion,
                                    Phase::kDispatch, Phase::kRateUpdate, Phase::kStatistics};
  EXPECT_EQ(ran, expected);
}

TEST(EngineSimulator, CancelReturnsTrueOnceAndTheEventNeverRuns) {
  Simulator sim;
  int ran = 0;
  const EventHandle h = sim.schedule_at(at_ps(10), Phase::kCompletion, [&ran] { ++ran; });
  sim.schedule_at(at_ps(20), Phase::kCompletion, [&ran] { ran += 10; });
  EXPECT_TRUE(sim.is_pending(h));
  EXPECT_EQ(sim.pending_events(), 2u);
  EXPECT_TRUE(sim.cancel(h));
  EXPECT_FALSE(sim.cancel(h));
  EXPECT_FALSE(sim.is_pending(h));
  EXPECT_EQ(sim.pending_events(), 1u);
  sim.run();
  EXPECT_EQ(ran, 10);
  EXPECT_EQ(sim.events_executed(), 1u);
  EXPECT_FALSE(sim.cancel(EventHandle{}));  // a default handle names no event
}

TEST(EngineSimulator, CancelAfterRunReturnsFalse) {
  Simulator sim;
  const EventHandle h = sim.schedule_at(at_ps(1), Phase::kDispatch, [] {});
  sim.run();
  EXPECT_FALSE(sim.is_pending(h));
  EXPECT_FALSE(sim.cancel(h));
}

TEST(EngineSimulator, CancelReleasesTheCallbackAtOnce) {
  Simulator sim;
  auto token = std::make_shared<int>(0);
  const EventHandle h = sim.schedule_at(at_ps(1), Phase::kDispatch, [token] {});
  EXPECT_EQ(token.use_count(), 2);
  sim.cancel(h);
  EXPECT_EQ(token.use_count(), 1);
}

TEST(EngineSimulator, StaleHandleDoesNotCancelTheEventThatReusedItsSlot) {
  Simulator sim;
  std::vector<std::string> ran;
  // Cancelled: slot freed, then reused by `b`.
  const EventHandle a = sim.schedule_at(at_ps(10), Phase::kDispatch, [&ran] { ran.push_back("a"); });
  ASSERT_TRUE(sim.cancel(a));
  const EventHandle b = sim.schedule_at(at_ps(10), Phase::kDispatch, [&ran] { ran.push_back("b"); });
  ASSERT_EQ(b.slot, a.slot);  // the slot was recycled; only the generation tells them apart
  EXPECT_NE(b.generation, a.generation);
  EXPECT_FALSE(sim.cancel(a));
  EXPECT_FALSE(sim.is_pending(a));
  EXPECT_TRUE(sim.is_pending(b));
  sim.run();
  // Executed: slot freed, then reused by `d`.
  const EventHandle c = sim.schedule_at(at_ps(20), Phase::kDispatch, [&ran] { ran.push_back("c"); });
  sim.run();
  const EventHandle d = sim.schedule_at(at_ps(30), Phase::kDispatch, [&ran] { ran.push_back("d"); });
  ASSERT_EQ(d.slot, c.slot);
  EXPECT_FALSE(sim.cancel(c));
  sim.run();
  EXPECT_EQ(ran, (std::vector<std::string>{"b", "c", "d"}));
}

TEST(EngineSimulator, StaleHeapEntryOfACancelledEventIsSkippedAfterReuse) {
  // a (t=5) is cancelled and its slot reused by b (t=50). The old heap entry for t=5 still
  // names that slot; it must not run b early.
  Simulator sim;
  std::vector<std::int64_t> times;
  const EventHandle a = sim.schedule_at(at_ps(5), Phase::kDispatch, [] {});
  sim.cancel(a);
  sim.schedule_at(at_ps(50), Phase::kDispatch, [&] { times.push_back(ps_of(sim.now())); });
  sim.run();
  EXPECT_EQ(times, std::vector<std::int64_t>{50});
  EXPECT_EQ(sim.events_executed(), 1u);
}

TEST(EngineSimulator, SchedulingInThePastThrows) {
  Simulator sim;
  sim.run_until(at_ps(100));
  EXPECT_THROW(sim.schedule_at(at_ps(99), Phase::kDispatch, [] {}), InternalError);
  EXPECT_NO_THROW(sim.schedule_at(at_ps(100), Phase::kDispatch, [] {}));  // now is allowed
  EXPECT_EQ(sim.pending_events(), 1u);
  // From inside a callback, too: the error leaves run().
  sim.schedule_at(at_ps(200), Phase::kDispatch,
                  [&sim] { sim.schedule_at(at_ps(150), Phase::kDispatch, [] {}); });
  EXPECT_THROW(sim.run(), InternalError);
}

TEST(EngineSimulator, RunUntilStopsAndSetsTheClock) {
  Simulator sim;
  std::vector<std::int64_t> ran;
  for (std::int64_t t : {10, 20, 30}) {
    sim.schedule_at(at_ps(t), Phase::kDispatch, [&ran, t] { ran.push_back(t); });
  }
  sim.run_until(at_ps(20));  // events at t <= 20 run
  EXPECT_EQ(ran, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(ps_of(sim.now()), 20);
  sim.run_until(at_ps(25));  // nothing to run; the clock still moves
  EXPECT_EQ(ps_of(sim.now()), 25);
  EXPECT_EQ(sim.pending_events(), 1u);
  sim.run_until(at_ps(5));  // never backwards
  EXPECT_EQ(ps_of(sim.now()), 25);
  sim.run();
  EXPECT_EQ(ps_of(sim.now()), 30);
  EXPECT_EQ(ran, (std::vector<std::int64_t>{10, 20, 30}));
}

TEST(EngineSimulator, StopReturnsAfterTheCurrentEventAndKeepsTheRest) {
  // An event that calls stop() finishes; run() then returns with the later events still queued,
  // and a second run() resumes them. run_until after stop() leaves the clock at the stopping
  // event. stop() outside an event makes the next run() return before running any.
  Simulator sim;
  std::vector<std::int64_t> ran;
  for (std::int64_t t : {10, 20, 30, 40}) {
    sim.schedule_at(at_ps(t), Phase::kDispatch, [&sim, &ran, t] {
      ran.push_back(t);
      if (t == 20 || t == 30) sim.stop();
    });
  }
  sim.run();
  EXPECT_EQ(ran, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(ps_of(sim.now()), 20);
  EXPECT_EQ(sim.pending_events(), 2u);
  sim.run_until(at_ps(100));
  EXPECT_EQ(ran, (std::vector<std::int64_t>{10, 20, 30}));
  EXPECT_EQ(ps_of(sim.now()), 30);  // not 100: stopped
  sim.stop();
  sim.run();
  EXPECT_EQ(sim.events_executed(), 3u);
  sim.run();
  EXPECT_EQ(ran, (std::vector<std::int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(sim.pending_events(), 0u);
}

TEST(EngineSimulator, ScheduleAfterIsRelativeToNow) {
  Simulator sim;
  std::int64_t fired = -1;
  sim.run_until(at_ps(1000));
  sim.schedule_after(nanoseconds(2), Phase::kDispatch, [&] { fired = ps_of(sim.now()); });
  sim.run();
  EXPECT_EQ(fired, 3000);
}

TEST(EngineSimulator, EventsScheduledFromCallbacks) {
  // A chain: each event schedules the next 10 ps later; at each instant a same-time event at a
  // later phase and one at the same phase are added too, and run at that instant after it.
  Simulator sim;
  std::vector<std::string> log;
  int remaining = 3;
  std::function<void()> tick = [&] {
    log.push_back("tick@" + std::to_string(ps_of(sim.now())));
    sim.schedule_after(Duration{0}, Phase::kStatistics, [&] { log.push_back("stats"); });
    sim.schedule_after(Duration{0}, Phase::kDispatch, [&] { log.push_back("same"); });
    if (--remaining > 0) sim.schedule_after(picoseconds(10), Phase::kDispatch, [&] { tick(); });
  };
  sim.schedule_at(at_ps(0), Phase::kDispatch, [&] { tick(); });
  sim.run();
  EXPECT_EQ(log, (std::vector<std::string>{"tick@0", "same", "stats", "tick@10", "same", "stats",
                                           "tick@20", "same", "stats"}));
  EXPECT_EQ(sim.events_executed(), 9u);
}

TEST(EngineSimulator, HeapCallbackAndMoveOnlyCapture) {
  Simulator sim;
  std::array<int, 64> big{};  // 256 bytes: the heap path of Callback
  big[63] = 7;
  auto owned = std::make_unique<int>(35);
  int result = 0;
  sim.schedule_at(at_ps(1), Phase::kDispatch, [big, &result] { result += big[63]; });
  sim.schedule_at(at_ps(2), Phase::kDispatch,
                  [p = std::move(owned), &result] { result += *p; });
  sim.run();
  EXPECT_EQ(result, 42);
}

// ---- determinism ----------------------------------------------------------------------------

struct Outcome {
  std::vector<std::pair<std::int64_t, int>> log;  // (time, component) of each visible action
  std::uint64_t hash;
  std::uint64_t executed;
  std::uint64_t noops_scheduled;
};

// A seeded little system: 20 components each re-arm themselves a few times at random delays, and
// some cancel a peer's pending event; a last "report" event runs at 10 ns + `shift_ps`.
// `noop_phase` adds a do-nothing event at every visible event's time, at that phase.
Outcome run_system(std::uint64_t seed, std::int64_t shift_ps, const Phase* noop_phase) {
  Simulator sim;
  Outcome out{};
  constexpr int kComponents = 20;
  std::vector<EventHandle> pending(kComponents);
  std::vector<int> left(kComponents, 5);
  std::vector<Rng> rngs;
  for (int c = 0; c < kComponents; ++c) rngs.push_back(Rng::derive(seed, static_cast<std::uint64_t>(c)));
  std::function<void(int)> fire = [&](int c) {
    out.log.emplace_back(ps_of(sim.now()), c);
    if (noop_phase != nullptr) {
      sim.schedule_after(Duration{0}, *noop_phase, [] {});
      ++out.noops_scheduled;
    }
    Rng& rng = rngs[static_cast<std::size_t>(c)];
    if (rng.below(4) == 0) sim.cancel(pending[(static_cast<std::size_t>(c) + 1) % kComponents]);
    if (--left[static_cast<std::size_t>(c)] > 0) {
      pending[static_cast<std::size_t>(c)] = sim.schedule_after(
          picoseconds(static_cast<std::int64_t>(1 + rng.below(100))), Phase::kCompletion, [&, c] { fire(c); });
    }
  };
  for (int c = 0; c < kComponents; ++c) {
    const auto t = static_cast<std::int64_t>(rngs[static_cast<std::size_t>(c)].below(50));
    pending[static_cast<std::size_t>(c)] = sim.schedule_at(at_ps(t), Phase::kCompletion, [&, c] { fire(c); });
  }
  sim.schedule_at(at_ps(10000 + shift_ps), Phase::kStatistics,
                  [&] { out.log.emplace_back(ps_of(sim.now()), -1); });
  sim.run();
  out.hash = sim.trace_hash();
  out.executed = sim.events_executed();
  return out;
}

TEST(EngineSimulator, TraceHashIsEqualAcrossIdenticalRuns) {
  const Outcome a = run_system(99, 0, nullptr);
  const Outcome b = run_system(99, 0, nullptr);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.executed, b.executed);
  EXPECT_NE(a.hash, 0u);
}

TEST(EngineSimulator, TraceHashChangesWhenAnEventTimeDiffers) {
  const Outcome a = run_system(99, 0, nullptr);
  const Outcome b = run_system(99, 1, nullptr);  // the report event runs 1 ps later
  EXPECT_NE(a.log, b.log);
  EXPECT_NE(a.hash, b.hash);
  // And a different seed gives a different run.
  EXPECT_NE(a.hash, run_system(100, 0, nullptr).hash);
}

TEST(EngineSimulator, NoOpEventsAtAnotherPhaseChangeNothingVisible) {
  // No-op events at kStatistics (after every completion at that instant) and at kTopologyChange
  // (scheduled at the current instant, so they run before the next completion at that time):
  // the visible log is identical; only the counters see the extra events.
  const Outcome plain = run_system(7, 0, nullptr);
  for (Phase p : {Phase::kStatistics, Phase::kTopologyChange}) {
    const Outcome with_noops = run_system(7, 0, &p);
    EXPECT_EQ(with_noops.log, plain.log);
    EXPECT_GT(with_noops.noops_scheduled, 50u);
    EXPECT_EQ(with_noops.executed, plain.executed + with_noops.noops_scheduled);
  }
}

TEST(EngineSimulator, RandomScheduleCancelAndRunMatchAnOrderedReference) {
  // Against a reference queue (an ordered map of (time, phase, scheduling order)): random
  // schedules at random times and phases, cancels of live and of stale handles, and partial
  // runs; every event runs in the reference's order, and the pending count is the reference's
  // size at every step.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    Rng rng(seed);
    Simulator sim;
    using Key = std::tuple<std::int64_t, int, std::uint64_t>;  // time, phase, scheduling order
    std::map<Key, std::uint64_t> reference;                     // -> event id
    struct Live {
      EventHandle handle;
      Key key;
    };
    std::vector<Live> live, dead;
    std::vector<std::uint64_t> ran, expected;
    std::uint64_t next_id = 0, order = 0;
    const auto sync_expected = [&](std::int64_t limit) {
      while (!reference.empty() && std::get<0>(reference.begin()->first) <= limit) {
        expected.push_back(reference.begin()->second);
        reference.erase(reference.begin());
      }
    };
    for (int op = 0; op < 20000; ++op) {
      const std::uint64_t r = rng.below(10);
      if (r < 5 || live.empty()) {
        const std::int64_t t = ps_of(sim.now()) + static_cast<std::int64_t>(rng.below(1001));
        const int phase = static_cast<int>(rng.below(kAllPhases.size()));
        const std::uint64_t id = next_id++;
        const Key key{t, phase, order++};
        const EventHandle h = sim.schedule_at(at_ps(t), kAllPhases[phase], [&ran, id] { ran.push_back(id); });
        reference.emplace(key, id);
        live.push_back({h, key});
      } else if (r < 8) {
        const std::size_t i = rng.below(live.size());
        const bool still_pending = reference.count(live[i].key) == 1;
        EXPECT_EQ(sim.cancel(live[i].handle), still_pending);
        reference.erase(live[i].key);
        dead.push_back(live[i]);
        live[i] = live.back();
        live.pop_back();
        if (!dead.empty()) {
          EXPECT_FALSE(sim.cancel(dead[rng.below(dead.size())].handle));
        }
      } else {
        const std::int64_t limit = ps_of(sim.now()) + static_cast<std::int64_t>(rng.below(301));
        sim.run_until(at_ps(limit));
        sync_expected(limit);
      }
      ASSERT_EQ(sim.pending_events(), reference.size()) << "seed " << seed << ", operation " << op;
    }
    sim.run();
    sync_expected(INT64_MAX);
    EXPECT_EQ(ran, expected) << "seed " << seed;
    EXPECT_GT(expected.size(), 1000u);
  }
}

}  // namespace
}  // namespace cs::sim
