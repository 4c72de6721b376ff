#include "sim/network/flow_network.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/errors.h"

namespace cs::net {
namespace {

// A solve after departures walks a link with more flows than kHeapFrom from the top of a 4-ary
// max-heap by rate (flow_network.h, "Removals"), kept from that walk on until a solve scans the
// link or changes most of its flows (Link::stale); 4-ary for half the levels of a binary heap, so half the
// moves, each of which writes the moved flow's slot (a cache miss), a level's children side by
// side. Smaller links are scanned, as cheap as walking a heap and free of its upkeep.
constexpr std::size_t kArity = 4;
constexpr std::size_t kHeapFrom = 16;

}  // namespace

FlowNetwork::FlowNetwork(sim::Simulator& simulator, std::vector<LinkCapacity> links)
    : sim_(&simulator), links_(links.size()), accounts_(links.size()), latencies_(links.size()) {
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (!(links[i].bandwidth.value() > 0)) {
      throw InternalError("FlowNetwork: link " + std::to_string(i) + " has no capacity");
    }
    links_[i].capacity = links[i].bandwidth.value();
    latencies_[i] = links[i].latency;
  }
}

// The links' lists that grew past one flow hold heap blocks (pooled_lists.h); every such link is
// in used_.
FlowNetwork::~FlowNetwork() {
  for (std::uint32_t l : used_) flow_refs_.release(links_[l].flows);
}

void FlowNetwork::reset(sim::Simulator& simulator) {
  sim_ = &simulator;
  // Its capacity is all a new link holds (latencies never change); only set_capacity changes a capacity.
  for (const auto& [l, capacity] : original_capacity_) links_[l].capacity = capacity;
  original_capacity_.clear();
  for (std::uint32_t l : used_) {
    if (l < intervals_.size()) intervals_[l].clear();
    const double capacity = links_[l].capacity;
    flow_refs_.release(links_[l].flows);
    links_[l] = Link{};
    links_[l].capacity = capacity;
    accounts_[l] = Account{};
  }
  used_.clear();
  flow_refs_.clear();  // the used links' lists, released above, were all it held
  record_intervals_ = false;
  flows_.clear();
  free_flows_.clear();
  dirty_links_.clear();
  batching_ = false;
  batched_.clear();
  solve_pending_ = false;
  only_removals_ = true;
  removed_min_rate_ = std::numeric_limits<double>::infinity();
  // Marks are compared with epoch_ for equality only, and it keeps counting, so the marks that
  // merge_hops left on links no flow used are all stale. Long before it wraps, start afresh.
  if (epoch_ > (1u << 31)) {
    for (Link& l : links_) l.mark = 0;
    epoch_ = 0;
  }
  active_flows_ = 0;
  flows_started_ = 0;
  solves_ = 0;
}

Duration FlowNetwork::path_latency(std::span<const LinkId> path) const {
  Duration d{0};
  for (LinkId l : path) d += latencies_[l.value];
  return d;
}

void FlowNetwork::start_flow(std::span<const LinkId> path, Bytes bytes, Duration extra_latency,
                             sim::Callback on_delivered) {
  const std::span<const LinkId> members[1] = {path};
  start_pipeline(members, bytes, path_latency(path) + extra_latency, std::move(on_delivered));
}

void FlowNetwork::start_pipeline(std::span<const std::span<const LinkId>> members,
                                 Bytes bytes_per_member, Duration tail,
                                 sim::Callback on_delivered) {
  start_pipeline(members, {}, bytes_per_member, tail, std::move(on_delivered));
}

void FlowNetwork::start_pipeline(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies,
                                 Bytes bytes_per_member, Duration tail, sim::Callback on_delivered) {
  ++flows_started_;
  std::size_t links = 0;
  for (const auto& m : members) links += m.size();
  if (bytes_per_member.value() <= 0 || links == 0) {
    sim_->schedule_after(tail, sim::Phase::kCompletion, std::move(on_delivered));
    return;
  }
  const std::uint32_t f = new_flow(bytes_per_member, tail, std::move(on_delivered));
  merge_hops(members, copies, flows_[f].hops);
  activate(f);
}

void FlowNetwork::start_weighted(std::span<const WeightedLink> links, std::uint32_t scale,
                                 Bytes bytes, Duration tail, sim::Callback on_delivered) {
  if (scale == 0) throw InternalError("FlowNetwork: a weighted flow needs a scale > 0");
  ++flows_started_;
  scratch_hops_.clear();
  ++epoch_;
  for (const WeightedLink& l : links) {
    if (l.link.value >= links_.size()) {
      throw InternalError("FlowNetwork: unknown link " + std::to_string(l.link.value));
    }
    if (l.weight > 0) add_hop(scratch_hops_, l.link.value, l.weight);  // integers: exact sums
  }
  if (bytes.value() <= 0 || scratch_hops_.empty()) {
    sim_->schedule_after(tail, sim::Phase::kCompletion, std::move(on_delivered));
    return;
  }
  const std::uint32_t f = new_flow(bytes, tail, std::move(on_delivered));
  for (Hop& h : scratch_hops_) h.weight /= scale;  // per unit of the flow's own rate
  flows_[f].hops.assign(scratch_hops_.begin(), scratch_hops_.end());
  activate(f);
}

void FlowNetwork::add_hop(std::vector<Hop>& hops, std::uint32_t link, double weight) {
  Link& l = links_[link];
  if (l.mark != epoch_) {
    l.mark = epoch_;
    l.scratch = static_cast<std::uint32_t>(hops.size());  // the index of its hop
    hops.push_back(Hop{link, 0, 0});
  }
  hops[l.scratch].weight += weight;
}

void FlowNetwork::merge_hops(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies,
                             std::vector<Hop>& hops) {
  hops.clear();
  ++epoch_;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::uint32_t c = copies.empty() ? 1 : copies[i];
    for (LinkId l : members[i]) add_hop(hops, l.value, c);
  }
}

Bandwidth FlowNetwork::idle_rate(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies) {
  merge_hops(members, copies, scratch_hops_);
  double rate = 0;
  for (const Hop& h : scratch_hops_) {
    const double r = links_[h.link].capacity / h.weight;
    rate = rate == 0 ? r : std::min(rate, r);
  }
  return Bandwidth{rate};
}

std::uint32_t FlowNetwork::new_flow(Bytes bytes, Duration tail, sim::Callback on_delivered) {
  std::uint32_t f;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    f = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[f];
  flow.bytes = static_cast<double>(bytes.value());
  flow.remaining = flow.bytes;
  flow.rate = 0;
  flow.updated = sim_->now();
  flow.tail = tail;
  flow.completion = {};
  flow.on_delivered = std::move(on_delivered);
  return f;
}

void FlowNetwork::activate(std::uint32_t f) {
  only_removals_ = false;
  flows_[f].active = true;
  if (batching_) batched_.push_back(f);
  else attach(f, Attach::kStart);
  ++active_flows_;
  request_solve();
}

void FlowNetwork::begin_batch() {
  check_not_batching("begin_batch");
  batching_ = true;
}

void FlowNetwork::end_batch() {
  if (!batching_) throw InternalError("FlowNetwork: end_batch without begin_batch");
  batching_ = false;
  // Each link's flows to come, counted in its scratch (read by a solve only when its mark is
  // that solve's epoch, and every solve takes a new one); the first of them to join makes room
  // for all (attach).
  ++epoch_;
  for (std::uint32_t f : batched_) {
    for (const Hop& h : flows_[f].hops) {
      Link& link = links_[h.link];
      if (link.mark != epoch_) {
        link.mark = epoch_;
        link.scratch = 0;
      }
      ++link.scratch;
    }
  }
  for (std::uint32_t f : batched_) attach(f, Attach::kStartInBatch);
  batched_.clear();
}

void FlowNetwork::check_not_batching(const char* what) const {
  if (batching_) throw InternalError(std::string("FlowNetwork: ") + what + " inside a batch of starts");
}

void FlowNetwork::attach(std::uint32_t f, Attach how) {
  Flow& flow = flows_[f];
  flow.bound = std::numeric_limits<double>::infinity();
  for (const Hop& h : flow.hops) flow.bound = std::min(flow.bound, links_[h.link].capacity / h.weight);
  for (std::uint32_t i = 0; i < flow.hops.size(); ++i) {
    Hop& h = flow.hops[i];
    Link& link = use(h.link);
    if (how == Attach::kStartInBatch && link.scratch > 0) {  // a batch's first flow here: room for the batch's
      flow_refs_.reserve(link.flows, link.flows.size() + link.scratch);
      link.scratch = 0;
    }
    if (how != Attach::kRebound && link.flows.empty()) {  // an idle link's busy period begins
      accounts_[h.link].since = sim_->now();
      if (record_intervals_) open_[h.link] = OpenInterval{sim_->now(), link.bytes};
    }
    const auto pos = static_cast<std::uint32_t>(link.flows.size());
    h.slot = pos;
    flow_refs_.push_back(link.flows, FlowRef{f, i, h.weight, flow.rate});
    if (!link.stale) sift(link, pos);
    link.bound_sum += flow.bound * h.weight;
    dirty_links_.push_back(h.link);
  }
}

void FlowNetwork::detach(std::uint32_t f) {
  Flow& flow = flows_[f];
  for (const Hop& h : flow.hops) {
    Link& link = links_[h.link];
    link.bound_sum = link.flows.size() == 1 ? 0 : link.bound_sum - flow.bound * h.weight;
    const FlowRef moved = link.flows.back();
    link.flows.pop_back();
    if (h.slot < link.flows.size()) {  // it was not the last: the last takes its place
      place(link, h.slot, moved);
      if (!link.stale) sift(link, h.slot);
    }
    dirty_links_.push_back(h.link);
  }
}

void FlowNetwork::place(Link& link, std::uint32_t pos, const FlowRef& r) {
  link.flows[pos] = r;
  flows_[r.flow].hops[r.hop].slot = pos;
}

void FlowNetwork::sift(Link& link, std::uint32_t pos) {
  // Strict comparisons: equal rates never move, so the order is a function of the operations.
  const FlowRef r = link.flows[pos];
  const std::uint32_t start = pos;
  while (pos > 0) {
    const auto parent = static_cast<std::uint32_t>((pos - 1) / kArity);
    if (!(link.flows[parent].rate < r.rate)) break;
    place(link, pos, link.flows[parent]);
    pos = parent;
  }
  if (pos != start) {
    place(link, pos, r);
  } else {
    sift_down(link, pos);
  }
}

void FlowNetwork::sift_down(Link& link, std::uint32_t pos) {
  const FlowRef r = link.flows[pos];
  const std::uint32_t start = pos;
  const std::size_t n = link.flows.size();
  for (;;) {
    const std::size_t first = kArity * pos + 1;
    if (first >= n) break;
    std::size_t child = first;  // the fastest child, the first of equals
    for (std::size_t c = first + 1; c < std::min(first + kArity, n); ++c) {
      if (link.flows[c].rate > link.flows[child].rate) child = c;
    }
    if (!(link.flows[child].rate > r.rate)) break;
    place(link, pos, link.flows[child]);
    pos = static_cast<std::uint32_t>(child);
  }
  if (pos != start) place(link, pos, r);
}

void FlowNetwork::heapify(Link& link) {
  // Floyd's order: every entry with children, the deepest first.
  for (auto pos = static_cast<std::uint32_t>((link.flows.size() + kArity - 2) / kArity); pos-- > 0;) {
    sift_down(link, pos);
  }
}

std::pair<double, double> FlowNetwork::collect(Link& link, double floor) {
  if (link.stale) {
    heapify(link);
    link.stale = false;
  }
  double weight = 0, load = 0;
  // Every entry under one below the floor is below it too (the heap's order).
  walk_.clear();
  if (!link.flows.empty()) walk_.push_back(0);
  while (!walk_.empty()) {
    const std::uint32_t pos = walk_.back();
    walk_.pop_back();
    const FlowRef& r = link.flows[pos];
    if (r.rate < floor) continue;
    cand_.push_back(r.flow);
    weight += r.weight;
    load += r.rate * r.weight;
    const std::size_t first = kArity * pos + 1;
    for (std::size_t c = std::min(first + kArity, link.flows.size()); c-- > first;) {
      walk_.push_back(static_cast<std::uint32_t>(c));
    }
  }
  return {weight, load};
}

void FlowNetwork::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  sim_->schedule_after(Duration{0}, sim::Phase::kRateUpdate, [this] { solve(); });
}

double FlowNetwork::delivered(const Flow& f) const {
  const double left = f.remaining - f.rate * to_seconds(sim_->now() - f.updated);
  return f.bytes - std::max(left, 0.0);
}

double FlowNetwork::carried(std::uint32_t l) const {
  double bytes = links_[l].bytes;
  for (const FlowRef& r : links_[l].flows) bytes += r.weight * delivered(flows_[r.flow]);
  return bytes;
}

bool FlowNetwork::can_saturate(const Link& l) {
  // Rates never exceed their flows' bounds, so a link whose bounds add up to less than its
  // capacity cannot saturate; the tolerance errs toward "can" (always safe).
  return l.bound_sum >= l.capacity * (1 - 1e-9);
}

void FlowNetwork::solve() {
  check_not_batching("a solve");
  solve_pending_ = false;
  ++solves_;
  ++epoch_;
  const SimTime now = sim_->now();
  // When flows only left since the last solve, the flows slower than the slowest of them keep
  // their rates (flow_network.h, "Removals"): they stay as they are, a fixed load on their links.
  const double fixed_below = only_removals_ ? removed_min_rate_ : 0;
  only_removals_ = true;
  removed_min_rate_ = std::numeric_limits<double>::infinity();
  const auto fixed = [&](const FlowRef& r) { return r.rate < fixed_below; };

  // 1. The flows whose rates may change: those on changed links, and, transitively, those that
  //    share a link that can saturate with them. A link that cannot saturate constrains nobody,
  //    so it does not couple its flows. `touched_` collects every link of those flows (their
  //    accounting changes); `comp_links_` the ones that can saturate (the solver's constraints).
  //    On a link with many flows after departures, the unfixed ones are the top of its heap
  //    (collected in cand_: the link is `walked`) and the fixed ones load it by its total rate
  //    less theirs; any other link is scanned.
  comp_links_.clear();
  comp_flows_.clear();
  touched_.clear();
  stack_.clear();
  cand_.clear();
  work_.clear();
  auto touch = [&](std::uint32_t l) {
    Link& link = links_[l];
    if (link.mark == epoch_) return;
    link.mark = epoch_;
    link.scratch = static_cast<std::uint32_t>(touched_.size());
    touched_.push_back(l);
    Work& w = work_.emplace_back();
    link.walked = false;
    if (!can_saturate(link)) return;  // no constraint: its residual and unfrozen weight go unused
    const bool heaped = link.flows.size() > kHeapFrom;
    if (heaped && fixed_below > 0) {
      link.walked = true;
      w.cand_begin = static_cast<std::uint32_t>(cand_.size());
      const auto [weight, load] = collect(link, fixed_below);
      w.cand_count = static_cast<std::uint32_t>(cand_.size()) - w.cand_begin;
      w.unfrozen = weight;
      w.unfrozen_flows = w.cand_count;
      w.residual = link.capacity - std::max(link.rate_sum - load, 0.0);
    } else {
      w.residual = link.capacity;
      for (const FlowRef& r : link.flows) {
        if (fixed(r)) {
          w.residual -= r.rate * r.weight;
        } else {
          w.unfrozen += r.weight;
          ++w.unfrozen_flows;
        }
      }
    }
    // A scanned link's entries stay where they are while the filling reads them, and where most
    // of a link's flows may change its heap is restored when next walked, not at every change.
    if (!link.walked || 4 * std::size_t{w.unfrozen_flows} >= link.flows.size()) link.stale = true;
    comp_links_.push_back(l);
    stack_.push_back(l);
  };
  for (std::uint32_t l : dirty_links_) {
    touch(l);
    if (!can_saturate(links_[l])) stack_.push_back(l);  // its flows may speed up all the same
  }
  dirty_links_.clear();
  while (!stack_.empty()) {
    const std::uint32_t l = stack_.back();
    stack_.pop_back();
    const auto visit = [&](std::uint32_t f) {
      Flow& flow = flows_[f];
      if (flow.mark == epoch_) return;
      flow.mark = epoch_;
      comp_flows_.push_back(f);
      for (const Hop& h : flow.hops) touch(h.link);
    };
    const Link& link = links_[l];
    if (link.walked) {
      const Work& w = work_[link.scratch];  // by index here and below: touch appends to work_ and cand_
      const std::uint32_t begin = w.cand_begin, end = w.cand_begin + w.cand_count;
      for (std::uint32_t k = begin; k < end; ++k) visit(cand_[k]);
    } else {
      for (const FlowRef& r : link.flows) {  // no entry moves before the filling
        if (!fixed(r)) visit(r.flow);
      }
    }
  }

  // 2. Remaining bytes up to now under the old rates.
  old_rate_.clear();
  for (std::uint32_t f : comp_flows_) {
    Flow& flow = flows_[f];
    flow.remaining -= flow.rate * to_seconds(now - flow.updated);
    if (flow.remaining < 0) flow.remaining = 0;
    flow.updated = now;
    flow.frozen = false;
    old_rate_.push_back(flow.rate);
  }

  // 3. Progressive filling over the links that can saturate. A heap of (fair share, link),
  //    smallest first. Freezing flows at the current minimum share r can only raise another
  //    link's share ((res - r w)/(u - w) >= res/u when r <= res/u, for a freezing flow's weight w), so heap keys are lower bounds:
  //    a popped entry whose link's share has grown is pushed back with the new value, and one
  //    that is still exact is the true minimum. Every flow's narrowest link can saturate, so
  //    every flow of the component freezes.
  std::vector<std::pair<double, std::uint32_t>>& heap = heap_;
  heap.clear();
  const auto later = [](const auto& a, const auto& b) { return a > b; };
  for (std::uint32_t l : comp_links_) {
    const Work& w = work_[links_[l].scratch];
    if (w.unfrozen_flows > 0) heap.emplace_back(w.residual / w.unfrozen, l);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  // Once every flow of the component is frozen, each link left on the heap has no unfrozen flow
  // and would only be popped and skipped: the filling stops there. On a tree across 131,072 GPUs
  // (16 weighted flows) that saves 31% of the solves' instructions.
  std::size_t unfrozen = comp_flows_.size();
  while (!heap.empty() && unfrozen > 0) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [share, l] = heap.back();
    heap.pop_back();
    const Link& link = links_[l];
    const Work& lw = work_[link.scratch];
    if (lw.unfrozen_flows == 0) continue;
    const double current = lw.residual / lw.unfrozen;
    if (current > share) {
      heap.emplace_back(current, l);
      std::push_heap(heap.begin(), heap.end(), later);
      continue;
    }
    const double rate = std::max(share, 0.0);
    const auto freeze = [&](std::uint32_t f) {
      Flow& flow = flows_[f];
      if (flow.frozen || flow.mark != epoch_) return;
      flow.frozen = true;
      flow.rate = rate;
      --unfrozen;
      for (const Hop& h : flow.hops) {
        Link& m = links_[h.link];
        Work& mw = work_[m.scratch];
        mw.residual -= rate * h.weight;
        mw.unfrozen -= h.weight;
        --mw.unfrozen_flows;
        m.flows[h.slot].rate = rate;
        if (!m.stale) sift(m, h.slot);  // never a scanned link
      }
    };
    if (link.walked) {
      for (std::uint32_t k = lw.cand_begin; k < lw.cand_begin + lw.cand_count; ++k) freeze(cand_[k]);
    } else {
      for (const FlowRef& r : link.flows) {
        if (!fixed(r)) freeze(r.flow);  // fixed, or frozen now below the fixed rates
      }
    }
  }

  // 4. Link rates change by the flows' rate changes.
  for (std::size_t k = 0; k < comp_flows_.size(); ++k) {
    const Flow& flow = flows_[comp_flows_[k]];
    const double delta = flow.rate - old_rate_[k];
    if (delta == 0) continue;
    for (const Hop& h : flow.hops) links_[h.link].rate_sum += delta * h.weight;
  }
  for (std::uint32_t l : touched_) {
    // Sums of many rate changes drift by rounding: an empty link carries exactly nothing.
    Link& link = links_[l];
    if (link.flows.empty() || link.rate_sum < link.capacity * 1e-12) link.rate_sum = 0;
  }

  // 5. Completion events for flows whose rate changed.
  for (std::size_t k = 0; k < comp_flows_.size(); ++k) {
    const std::uint32_t f = comp_flows_[k];
    Flow& flow = flows_[f];
    if (flow.rate == old_rate_[k] && sim_->is_pending(flow.completion)) continue;
    sim_->cancel(flow.completion);
    if (!(flow.rate > 0)) throw InternalError("FlowNetwork: an active flow got no bandwidth");
    const Duration left = drain_time(flow.remaining, Bandwidth{flow.rate});
    flow.completion = sim_->schedule_after(left, sim::Phase::kCompletion,
                                          [this, f] { finish_bandwidth_phase(f); });
  }
}

void FlowNetwork::finish_bandwidth_phase(std::uint32_t f) {
  check_not_batching("a flow's end");
  Flow& flow = flows_[f];
  for (const Hop& h : flow.hops) {
    Link& link = links_[h.link];
    link.rate_sum -= flow.rate * h.weight;
    link.bytes += flow.bytes * h.weight;  // its last byte has left
  }
  removed_min_rate_ = std::min(removed_min_rate_, flow.rate);
  flow.rate = 0;
  detach(f);
  const SimTime now = sim_->now();
  for (const Hop& h : flow.hops) {  // the links it leaves idle end a busy period
    const Link& link = links_[h.link];
    if (!link.flows.empty()) continue;
    Account& account = accounts_[h.link];
    account.busy += now - account.since;
    if (record_intervals_) {
      const OpenInterval& open = open_[h.link];
      intervals_[h.link].push_back(
          BusyInterval{open.since, now, Bytes{static_cast<std::int64_t>(link.bytes - open.bytes + 0.5)}});
    }
  }
  flow.active = false;
  flow.remaining = 0;
  --active_flows_;
  sim_->schedule_after(flow.tail, sim::Phase::kCompletion, std::move(flow.on_delivered));
  flow.on_delivered.reset();
  flow.completion = {};
  free_flows_.push_back(f);
  request_solve();
}

void FlowNetwork::set_capacity(LinkId link, Bandwidth bandwidth) {
  check_not_batching("set_capacity");
  if (!(bandwidth.value() > 0)) throw InternalError("FlowNetwork: capacity must be positive");
  (void)links_.at(link.value);  // range check
  Link& changed = use(link.value);
  if (!changed.capacity_set) {  // the first change since the last reset keeps the original
    changed.capacity_set = true;
    original_capacity_.emplace_back(link.value, changed.capacity);
  }
  changed.capacity = bandwidth.value();
  only_removals_ = false;
  // The flows through it may have a new narrowest link: re-attach them with fresh bounds.
  std::vector<std::uint32_t> through;
  for (const FlowRef& r : links_[link.value].flows) through.push_back(r.flow);
  for (std::uint32_t f : through) detach(f);
  for (std::uint32_t f : through) attach(f, Attach::kRebound);
  dirty_links_.push_back(link.value);
  request_solve();
}

LinkStats FlowNetwork::link_stats(LinkId link) const {
  check_not_batching("link_stats");
  const Link& l = links_.at(link.value);  // range check
  const Account& account = accounts_[link.value];
  const Duration busy = l.flows.empty() ? account.busy : account.busy + (sim_->now() - account.since);
  return LinkStats{Bytes{static_cast<std::int64_t>(carried(link.value) + 0.5)}, busy};
}

std::vector<LinkId> FlowNetwork::touched_links() const {
  std::vector<LinkId> out;
  out.reserve(used_.size());
  for (std::uint32_t l : used_) out.push_back(LinkId{l});
  std::sort(out.begin(), out.end(), [](LinkId a, LinkId b) { return a.value < b.value; });
  return out;
}

void FlowNetwork::enable_busy_intervals() {
  record_intervals_ = true;
  if (intervals_.size() < links_.size()) {  // kept across resets
    intervals_.resize(links_.size());
    open_.resize(links_.size());
  }
  for (std::uint32_t l : used_) {
    if (!links_[l].flows.empty()) open_[l] = OpenInterval{sim_->now(), carried(l)};
  }
}

const std::vector<BusyInterval>& FlowNetwork::busy_intervals(LinkId link) {
  static const std::vector<BusyInterval> kNone;
  (void)links_.at(link.value);  // range check
  return record_intervals_ ? intervals_[link.value] : kNone;
}

}  // namespace cs::net
