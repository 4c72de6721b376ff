// The discrete-event engine: a clock and an event queue. It knows nothing of GPUs or networks.
//
// Events are ordered by (time, phase, sequence number). The phase says what runs first at one
// instant; the sequence number comes from one counter in the queue, so the order of events at
// the same time and phase is the order in which they were scheduled, never heap internals.
// Cancellation is lazy: a handle (slot, generation) marks the event dead, and the queue drops it
// when it comes up. Only run() moves the clock. There are no singletons: components receive the
// Simulator by reference.
#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "sim/engine/callback.h"

namespace cs::sim {

// What runs first at one instant, in this order.
enum class Phase : std::uint8_t {
  kTopologyChange = 0,  // links fail or recover
  kCompletion = 1,      // transfers and ops finish, freeing resources
  kDispatch = 2,        // new work starts (flows are added)
  kRateUpdate = 3,      // one bandwidth solve for everything that changed at this instant
  kStatistics = 4,      // sampling and reporting
};

struct EventHandle {
  std::uint32_t slot = UINT32_MAX;
  std::uint32_t generation = 0;
  bool valid() const { return slot != UINT32_MAX; }
};

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  SimTime now() const { return now_; }

  // Schedules `cb` at `t` (not before now()).
  EventHandle schedule_at(SimTime t, Phase phase, Callback cb);
  EventHandle schedule_after(Duration d, Phase phase, Callback cb) {
    return schedule_at(checked_add(now_, d), phase, std::move(cb));
  }
  // Cancels a pending event; returns false when it already ran or was cancelled.
  bool cancel(EventHandle h);
  bool is_pending(EventHandle h) const;

  // Runs events until the queue is empty, or until an event calls stop().
  void run();
  // Runs events with time <= t, then sets the clock to t; after stop(), returns at once with the
  // clock where the stopping event left it.
  void run_until(SimTime t);
  // Makes run() or run_until() return once the event running now has finished; the events still
  // queued stay queued (a caller that stops discards the run: a folded attempt whose fold broke,
  // sim/collectives/network_fold.h). Called outside an event, the next run() returns at once.
  void stop() { stopping_ = true; }

  std::uint64_t events_executed() const { return executed_; }
  std::size_t pending_events() const { return pending_; }
  // A hash of the (time, phase) sequence of executed events: equal inputs give equal hashes.
  std::uint64_t trace_hash() const { return trace_hash_; }

 private:
  struct Entry {
    std::int64_t time;
    std::uint64_t order;  // phase in the top 8 bits, sequence number below
    std::uint32_t slot;
    std::uint32_t generation;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.time != b.time ? a.time > b.time : a.order > b.order;
    }
  };
  struct Slot {
    Callback callback;
    std::uint32_t generation = 0;
    bool pending = false;
  };

  bool step(std::int64_t limit);  // runs one live event with time <= limit; false if none

  SimTime now_ = kTimeZero;
  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t executed_ = 0;
  std::size_t pending_ = 0;
  std::uint64_t trace_hash_ = 0;
  bool stopping_ = false;
};

}  // namespace cs::sim
