#include "topology/weighted_route.h"

#include <numeric>

#include "core/errors.h"

namespace cs::topo {

LinkSums::LinkSums(std::size_t additions) {
  sums_.reserve(std::min<std::size_t>(additions, 4096));
  if (additions > kLinear) rehash(std::min<std::size_t>(additions, 4096));
}

void LinkSums::rehash(std::size_t entries) {
  std::size_t size = 64;
  while (size < 2 * entries) size *= 2;
  position_.assign(size, kFree);
  for (std::size_t k = 0; k < sums_.size(); ++k) {
    std::size_t i = slot(sums_[k].first);
    while (position_[i] != kFree) i = (i + 1) & (size - 1);
    position_[i] = static_cast<std::uint32_t>(k);
  }
}

void RouteSum::overflow() { throw InternalError("a weighted route: a link's weight exceeds 2^32"); }

bool RouteSum::rescale_to(std::uint32_t scale) {
  const std::uint64_t lcm = std::lcm<std::uint64_t>(scale_, scale);
  if (lcm == scale_) return true;
  const bool exact = lcm <= kMaxSpreadScale;
  const std::uint64_t to = exact ? lcm : kMaxSpreadScale;
  for (auto& [l, w] : sums_.sums()) {
    if (w > UINT32_MAX) overflow();
    w = exact ? w * (to / scale_) : (w * to + scale_ - 1) / scale_;
  }
  scale_ = static_cast<std::uint32_t>(to);
  exact_ = exact_ && exact;
  return exact;
}

void RouteSum::finish(WeightedRoute& out) const {
  out.links.clear();
  out.links.reserve(sums_.sums().size());
  for (const auto& [l, w] : sums_.sums()) {
    if (w > UINT32_MAX) overflow();
    out.links.emplace_back(l, static_cast<std::uint32_t>(w));
  }
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
