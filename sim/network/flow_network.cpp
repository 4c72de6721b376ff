#include "sim/network/flow_network.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/errors.h"

namespace cs::net {

FlowNetwork::FlowNetwork(sim::Simulator& simulator, std::vector<LinkCapacity> links)
    : sim_(simulator), links_(links.size()) {
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (!(links[i].bandwidth.value() > 0)) {
      throw InternalError("FlowNetwork: link " + std::to_string(i) + " has no capacity");
    }
    links_[i].capacity = links[i].bandwidth.value();
    links_[i].latency = links[i].latency;
  }
}

Duration FlowNetwork::path_latency(std::span<const LinkId> path) const {
  Duration d{0};
  for (LinkId l : path) d += links_[l.value].latency;
  return d;
}

void FlowNetwork::start_flow(std::span<const LinkId> path, Bytes bytes, Duration extra_latency,
                             sim::Callback on_delivered) {
  ++flows_started_;
  const Duration tail = path_latency(path) + extra_latency;
  if (bytes.value() <= 0 || path.empty()) {
    sim_.schedule_after(tail, sim::Phase::kCompletion, std::move(on_delivered));
    return;
  }
  std::uint32_t f;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    f = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[f];
  flow.path = path.data();
  flow.hops = static_cast<std::uint32_t>(path.size());
  flow.remaining = static_cast<double>(bytes.value());
  flow.rate = 0;
  flow.updated = sim_.now();
  flow.tail = tail;
  flow.completion = {};
  flow.on_delivered = std::move(on_delivered);
  flow.active = true;
  attach(f);
  ++active_flows_;
  request_solve();
}

void FlowNetwork::attach(std::uint32_t f) {
  Flow& flow = flows_[f];
  flow.slot_in_link.resize(flow.hops);
  for (std::uint32_t i = 0; i < flow.hops; ++i) {
    const std::uint32_t l = flow.path[i].value;
    Link& link = links_[l];
    flow.slot_in_link[i] = static_cast<std::uint32_t>(link.flows.size());
    link.flows.push_back(f);
    dirty_links_.push_back(l);
  }
}

void FlowNetwork::detach(std::uint32_t f) {
  Flow& flow = flows_[f];
  for (std::uint32_t i = 0; i < flow.hops; ++i) {
    const std::uint32_t l = flow.path[i].value;
    Link& link = links_[l];
    const std::uint32_t slot = flow.slot_in_link[i];
    const std::uint32_t moved = link.flows.back();
    link.flows[slot] = moved;
    link.flows.pop_back();
    if (moved != f) {
      Flow& m = flows_[moved];
      for (std::uint32_t j = 0; j < m.hops; ++j) {
        if (m.path[j].value == l) {
          m.slot_in_link[j] = slot;
          break;
        }
      }
    }
    dirty_links_.push_back(l);
  }
}

void FlowNetwork::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  sim_.schedule_after(Duration{0}, sim::Phase::kRateUpdate, [this] { solve(); });
}

void FlowNetwork::flush_link(Link& l) {
  const SimTime now = sim_.now();
  const Duration dt = now - l.since;
  if (dt.count() > 0 && l.rate_sum > 0) {
    const double moved = l.rate_sum * to_seconds(dt);
    l.bytes += moved;
    l.busy += dt;
    l.interval_bytes += moved;
  }
  l.since = now;
}

void FlowNetwork::solve() {
  solve_pending_ = false;
  ++solves_;
  ++epoch_;
  const SimTime now = sim_.now();

  // 1. The connected component of everything that changed: links <-> flows, transitively.
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  for (std::uint32_t l : dirty_links_) {
    if (links_[l].mark != epoch_) {
      links_[l].mark = epoch_;
      stack_.push_back(l);
    }
  }
  dirty_links_.clear();
  while (!stack_.empty()) {
    const std::uint32_t l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (std::uint32_t f : links_[l].flows) {
      Flow& flow = flows_[f];
      if (flow.mark == epoch_) continue;
      flow.mark = epoch_;
      comp_flows_.push_back(f);
      for (std::uint32_t i = 0; i < flow.hops; ++i) {
        Link& m = links_[flow.path[i].value];
        if (m.mark != epoch_) {
          m.mark = epoch_;
          stack_.push_back(flow.path[i].value);
        }
      }
    }
  }

  // 2. Bring accounting and remaining bytes up to now under the old rates.
  for (std::uint32_t l : comp_links_) {
    Link& link = links_[l];
    flush_link(link);
    link.residual = link.capacity;
    link.unfrozen = static_cast<std::uint32_t>(link.flows.size());
  }
  for (std::uint32_t f : comp_flows_) {
    Flow& flow = flows_[f];
    flow.remaining -= flow.rate * to_seconds(now - flow.updated);
    if (flow.remaining < 0) flow.remaining = 0;
    flow.updated = now;
    flow.frozen = false;
  }

  // 3. Progressive filling. A heap of (fair share, link), smallest first. Freezing flows at the
  //    current minimum share r can only raise another link's share ((res - r)/(u - 1) >= res/u
  //    when r <= res/u), so heap keys are lower bounds: a popped entry whose link's share has
  //    grown is pushed back with the new value, and one that is still exact is the true minimum.
  std::vector<std::pair<double, std::uint32_t>>& heap = heap_;
  heap.clear();
  const auto later = [](const auto& a, const auto& b) { return a > b; };
  for (std::uint32_t l : comp_links_) {
    const Link& link = links_[l];
    if (link.unfrozen > 0) heap.emplace_back(link.residual / link.unfrozen, l);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  old_rate_.clear();
  for (std::uint32_t f : comp_flows_) old_rate_.push_back(flows_[f].rate);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [share, l] = heap.back();
    heap.pop_back();
    Link& link = links_[l];
    if (link.unfrozen == 0) continue;
    const double current = link.residual / link.unfrozen;
    if (current > share) {
      heap.emplace_back(current, l);
      std::push_heap(heap.begin(), heap.end(), later);
      continue;
    }
    const double rate = std::max(share, 0.0);
    for (std::uint32_t f : link.flows) {
      Flow& flow = flows_[f];
      if (flow.frozen) continue;
      flow.frozen = true;
      flow.rate = rate;
      for (std::uint32_t i = 0; i < flow.hops; ++i) {
        Link& m = links_[flow.path[i].value];
        m.residual -= rate;
        --m.unfrozen;
      }
    }
  }

  // 4. New link rates, busy intervals.
  for (std::uint32_t l : comp_links_) {
    Link& link = links_[l];
    double sum = 0;
    for (std::uint32_t f : link.flows) sum += flows_[f].rate;
    const bool was_busy = link.rate_sum > 0;
    const bool busy = sum > 0;
    if (!was_busy && busy) {
      link.busy_since = now;
      link.interval_bytes = 0;
    } else if (was_busy && !busy && record_intervals_) {
      link.intervals.push_back(BusyInterval{link.busy_since, now,
                                            Bytes{static_cast<std::int64_t>(link.interval_bytes + 0.5)}});
    }
    link.rate_sum = sum;
  }

  // 5. Completion events for flows whose rate changed.
  for (std::size_t k = 0; k < comp_flows_.size(); ++k) {
    const std::uint32_t f = comp_flows_[k];
    Flow& flow = flows_[f];
    if (flow.rate == old_rate_[k] && sim_.is_pending(flow.completion)) continue;
    sim_.cancel(flow.completion);
    if (!(flow.rate > 0)) throw InternalError("FlowNetwork: an active flow got no bandwidth");
    const Duration left = drain_time(flow.remaining, Bandwidth{flow.rate});
    flow.completion = sim_.schedule_after(left, sim::Phase::kCompletion,
                                          [this, f] { finish_bandwidth_phase(f); });
  }
}

void FlowNetwork::finish_bandwidth_phase(std::uint32_t f) {
  Flow& flow = flows_[f];
  detach(f);
  flow.active = false;
  flow.remaining = 0;
  --active_flows_;
  sim_.schedule_after(flow.tail, sim::Phase::kCompletion, std::move(flow.on_delivered));
  flow.on_delivered.reset();
  flow.completion = {};
  free_flows_.push_back(f);
  request_solve();
}

void FlowNetwork::set_capacity(LinkId link, Bandwidth bandwidth) {
  if (!(bandwidth.value() > 0)) throw InternalError("FlowNetwork: capacity must be positive");
  links_.at(link.value).capacity = bandwidth.value();
  dirty_links_.push_back(link.value);
  request_solve();
}

LinkStats FlowNetwork::link_stats(LinkId link) {
  Link& l = links_.at(link.value);
  flush_link(l);
  return LinkStats{Bytes{static_cast<std::int64_t>(l.bytes + 0.5)}, l.busy};
}

const std::vector<BusyInterval>& FlowNetwork::busy_intervals(LinkId link) {
  return links_.at(link.value).intervals;
}

}  // namespace cs::net
