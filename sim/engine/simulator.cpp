#include "sim/engine/simulator.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "core/random.h"

namespace cs::sim {

EventHandle Simulator::schedule_at(SimTime t, Phase phase, Callback cb) {
  if (t > kTimeHorizon) checked_add(t, Duration{0});  // throws the RangeError
  if (t < now_) {
    throw InternalError("event scheduled in the past: " + std::to_string(t.time_since_epoch().count()) +
                        " ps < now " + std::to_string(now_.time_since_epoch().count()) + " ps");
  }
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.callback = std::move(cb);
  s.pending = true;
  const std::uint64_t order = (static_cast<std::uint64_t>(phase) << 56) | next_sequence_++;
  heap_.push_back(Entry{t.time_since_epoch().count(), order, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  ++pending_;
  return EventHandle{slot, s.generation};
}

bool Simulator::is_pending(EventHandle h) const {
  return h.valid() && h.slot < slots_.size() && slots_[h.slot].generation == h.generation &&
         slots_[h.slot].pending;
}

bool Simulator::cancel(EventHandle h) {
  if (!is_pending(h)) return false;
  Slot& s = slots_[h.slot];
  s.callback.reset();
  s.pending = false;
  ++s.generation;  // the heap entry no longer matches and is dropped when popped
  free_slots_.push_back(h.slot);
  --pending_;
  return true;
}

bool Simulator::step(std::int64_t limit) {
  while (!heap_.empty()) {
    const Entry top = heap_.front();
    if (top.time > limit) return false;
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    Slot& s = slots_[top.slot];
    if (s.generation != top.generation || !s.pending) continue;  // cancelled
    Callback cb = std::move(s.callback);
    s.pending = false;
    ++s.generation;
    free_slots_.push_back(top.slot);
    --pending_;
    now_ = SimTime{Duration{top.time}};
    ++executed_;
    trace_hash_ = hash_combine(hash_combine(trace_hash_, static_cast<std::uint64_t>(top.time)),
                               top.order >> 56);
    cb();
    return true;
  }
  return false;
}

void Simulator::run() {
  while (!stopping_ && step(INT64_MAX)) {
  }
  stopping_ = false;
}

void Simulator::run_until(SimTime t) {
  const std::int64_t limit = t.time_since_epoch().count();
  while (!stopping_ && step(limit)) {
  }
  if (stopping_) {
    stopping_ = false;
    return;
  }
  if (t > now_) now_ = t;
}

}  // namespace cs::sim
