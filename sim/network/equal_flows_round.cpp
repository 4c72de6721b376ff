#include "sim/network/equal_flows_round.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/errors.h"

namespace cs::net {

EqualFlowsRound::EqualFlowsRound(const FlowNetwork& network) : network_(network) {}

void EqualFlowsRound::load(std::uint32_t link, double weight) {
  if (link >= network_.link_count()) throw InternalError("EqualFlowsRound: unknown link " + std::to_string(link));
  if (weight_.empty()) weight_.assign(network_.link_count(), 0.0);
  if (weight_[link] == 0) touched_.push_back(link);
  weight_[link] += weight;
}

void EqualFlowsRound::moves(Bytes bytes, Duration tail) {
  if (!moving_) {
    moving_ = true;
    bytes_ = bytes;
    tail_ = tail;
    return;
  }
  if (bytes != bytes_ || tail != tail_) throw InternalError("EqualFlowsRound: flows of different bytes or tails");
}

void EqualFlowsRound::add_flow(std::span<const LinkId> path, Bytes bytes, Duration extra_latency) {
  const std::span<const LinkId> members[1] = {path};
  add_pipeline(members, {}, bytes, network_.path_latency(path) + extra_latency);
}

void EqualFlowsRound::add_pipeline(std::span<const std::span<const LinkId>> members,
                                   std::span<const std::uint32_t> copies, Bytes bytes_per_member, Duration tail) {
  std::size_t links = 0;
  for (const auto& m : members) links += m.size();
  if (bytes_per_member.value() <= 0 || links == 0) {
    idle_tail_ = std::max(idle_tail_, tail);
    return;
  }
  moves(bytes_per_member, tail);
  for (std::size_t i = 0; i < members.size(); ++i) {
    const double c = copies.empty() ? 1.0 : static_cast<double>(copies[i]);
    for (LinkId l : members[i]) load(l.value, c);
  }
}

void EqualFlowsRound::add_weighted(std::span<const WeightedLink> links, std::uint32_t scale, Bytes bytes,
                                   Duration tail) {
  if (scale == 0) throw InternalError("EqualFlowsRound: a weighted flow needs a scale > 0");
  const bool any = std::any_of(links.begin(), links.end(), [](const WeightedLink& l) { return l.weight > 0; });
  if (bytes.value() <= 0 || !any) {
    idle_tail_ = std::max(idle_tail_, tail);
    return;
  }
  moves(bytes, tail);
  for (const WeightedLink& l : links) {
    if (l.weight > 0) load(l.link.value, static_cast<double>(l.weight) / scale);
  }
}

Duration EqualFlowsRound::end() const {
  if (!moving_) return idle_tail_;
  double lambda = std::numeric_limits<double>::infinity();  // lambda*: the smallest c_l / W_l
  for (std::uint32_t l : touched_) lambda = std::min(lambda, network_.capacity(LinkId{l}).value() / weight_[l]);
  if (!(lambda > 0)) throw InternalError("EqualFlowsRound: a flow gets no bandwidth");
  // FlowNetwork's rounding: the bytes left over the rate, up to the next picosecond.
  return std::max(idle_tail_, drain_time(static_cast<double>(bytes_.value()), Bandwidth{lambda}) + tail_);
}

void EqualFlowsRound::clear() {
  for (std::uint32_t l : touched_) weight_[l] = 0;
  touched_.clear();
  bytes_ = Bytes{0};
  tail_ = idle_tail_ = Duration{0};
  moving_ = false;
}

}  // namespace cs::net
