#include "topology/weighted_route.h"

#include <algorithm>
#include <numeric>

#include "core/errors.h"

namespace cs::topo {

LinkSums::LinkSums(std::size_t additions, std::size_t dense_ids) {
  if (dense_ids > 0) {
    dense_.assign(dense_ids, 0);
  } else if (additions > kLinear) {
    grow(std::min<std::size_t>(additions, 4096));
    order_.reserve(std::min<std::size_t>(additions, 4096));
  } else {
    small_.reserve(additions);
  }
}

void weight_overflow() { throw InternalError("a weighted route: a link's weight exceeds 2^32"); }

void LinkSums::grow(std::size_t entries) {
  const std::size_t links = size();
  if (std::size_t{largest_} < kDenseSpan * links) {
    dense_.assign(std::size_t{largest_} + 1, 0);
    if (table_.empty()) {  // from the small list
      order_.reserve(small_.size());
      for (const auto& [l, w] : small_) {
        dense_[l.value] = w;
        order_.push_back(l);
      }
      small_ = {};
    } else {
      for (const Slot& s : table_) {
        if (s.link != kFree) dense_[s.link] = s.sum;
      }
      table_ = {};
    }
    return;
  }
  std::size_t size = 64;
  while (size < 2 * entries) size *= 2;
  std::vector<Slot> old(size);
  old.swap(table_);
  if (old.empty() && dense_.empty()) {  // from the small list
    order_.reserve(small_.size());
    for (const auto& [l, w] : small_) {
      probe(l.value) = {l.value, w};
      order_.push_back(l);
    }
    small_ = {};
    return;
  }
  if (!dense_.empty()) {  // from the dense storage, whose ids past largest_ were not tracked
    for (LinkId l : order_) {
      probe(l.value) = {l.value, dense_[l.value]};
      largest_ = std::max(largest_, l.value);
    }
    dense_ = {};
    return;
  }
  for (const Slot& s : old) {
    if (s.link != kFree) probe(s.link) = s;
  }
}

void LinkSums::add_elsewhere(LinkId l, std::uint64_t w) {
  if (!dense_.empty()) return add_beyond(l, w);  // add() took the ids below its end
  if (table_.empty()) {
    for (auto& e : small_) {
      if (e.first == l) {
        e.second = checked(e.second + w);
        return;
      }
    }
    small_.emplace_back(l, checked(w));
    largest_ = std::max(largest_, l.value);
    if (small_.size() > kLinear) grow(2 * small_.size());
    return;
  }
  if (2 * (order_.size() + 1) > table_.size()) {
    grow(2 * order_.size());
    if (!dense_.empty()) return add(l, w);
  }
  // probe()'s walk, written out: the branch on what stopped it then falls away (1% of the
  // 16,384-GPU tree's instructions through probe()).
  for (std::size_t i = mix64(l.value) & (table_.size() - 1);; i = (i + 1) & (table_.size() - 1)) {
    Slot& s = table_[i];
    if (s.link == l.value) {
      s.sum = checked(s.sum + w);
      return;
    }
    if (s.link == kFree) {
      s = {l.value, checked(w)};
      order_.push_back(l);
      largest_ = std::max(largest_, l.value);
      return;
    }
  }
}

void LinkSums::add_beyond(LinkId l, std::uint64_t w) {
  largest_ = std::max(largest_, l.value);
  const std::size_t links = order_.size() + 1;
  if (std::size_t{largest_} < kDenseSpan * links) {
    // Grown by half at least, so that ids added in increasing order cost amortized O(1).
    dense_.resize(std::min(std::max(std::size_t{largest_} + 1, dense_.size() + dense_.size() / 2), kDenseSpan * links));
  } else {
    grow(2 * links);
  }
  add(l, w);
}

void LinkSums::write(std::vector<std::pair<LinkId, std::uint32_t>>& out) const {
  out.clear();
  if (storage() == Storage::kScan) {
    out.assign(small_.begin(), small_.end());
    return;
  }
  out.reserve(order_.size());
  if (storage() == Storage::kDense) {
    for (LinkId l : order_) out.emplace_back(l, dense_[l.value]);
    return;
  }
  for (LinkId l : order_) out.emplace_back(l, probe(l.value).sum);
}

bool RouteSum::rescale_to(std::uint32_t scale) {
  const std::uint64_t lcm = std::lcm<std::uint64_t>(scale_, scale);
  if (lcm == scale_) return true;
  const bool exact = lcm <= kMaxSpreadScale;
  const std::uint64_t to = exact ? lcm : kMaxSpreadScale;
  const std::uint64_t from = scale_;
  if (exact) {
    sums_.transform([factor = to / from](std::uint64_t w) { return w * factor; });
  } else {
    sums_.transform([to, from](std::uint64_t w) { return (w * to + from - 1) / from; });
  }
  scale_ = static_cast<std::uint32_t>(to);
  exact_ = exact_ && exact;
  return exact;
}

void RouteSum::finish(WeightedRoute& out) const {
  sums_.write(out.links);
  out.scale = scale_;
  out.exact = exact_;
}

WeightedRoute RouteSum::finish() const {
  WeightedRoute out;
  finish(out);
  return out;
}

WeightedRoute weighted_path(std::span<const LinkId> path) {
  RouteSum sum(path.size());
  sum.add(path);
  return sum.finish();
}

void add_route(WeightedRoute& sum, const WeightedRoute& part, std::uint32_t times) {
  if (part.links.empty() || times == 0) return;
  RouteSum s(sum.links.size() + part.links.size());
  s.add(sum);
  s.add(part, times);
  s.finish(sum);
}

WeightedRoute sum_routes(std::span<const RoutePart> parts) {
  WeightedRoute out;
  sum_routes(parts, out);
  return out;
}

void sum_routes(std::span<const RoutePart> parts, WeightedRoute& out) {
  std::size_t additions = 0;
  for (const RoutePart& p : parts) additions += p.route ? p.route->links.size() : p.path.size();
  RouteSum sum(additions);
  for (const RoutePart& p : parts) {
    if (p.route) {
      sum.add(*p.route, p.times);
    } else {
      sum.add(p.path, p.times);
    }
  }
  sum.finish(out);
}

}  // namespace cs::topo
