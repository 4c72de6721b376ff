// A round of flows that start together on an idle network, every one moving the same bytes, in
// closed form: when its last flow is delivered, without simulating how the rates change between.
//
// Model: FlowNetwork's (flow_network.h). Flow f moves B bytes at rate r_f and puts w_{f,l} r_f
// on link l (a path's links once each, a pipeline's members' multiplicities, a spread's
// weight / scale); the rates are the max-min fair allocation of the flows still moving, solved
// again whenever one finishes. With every flow started at t = 0 and moving the same B:
//
//     T = B / lambda*,    lambda* = min over links l of c_l / W_l,    W_l = sum_f w_{f,l}
//
// is the instant the last byte of the round leaves, exactly, and the round's last delivery is
// T + its flows' common tail (delivery latency after the last byte).
// Why. (1) At any instant every moving flow has r_f >= min over its links of c_l / W_l(t): the
// link l whose saturation froze f in the progressive filling is full, c_l = sum_g w_{g,l} r_g,
// and every flow on it froze at or below f's level, so c_l <= r_f W_l(t). Flows only leave a
// round, so W_l(t) <= W_l(0), and every flow moves at >= lambda* throughout: none finishes after
// T. (2) The link l* attaining lambda* saturates first (the filling's first level is the
// smallest c_l / W_l), freezing all its flows at lambda*; by (1) none is ever slower, and l* full
// with all of them at lambda* leaves none faster, so they move at lambda* until they end
// together at T. A link that cannot saturate (FlowNetwork skips it) has c_l / W_l > lambda*, so
// it is never the minimum. Equal bytes are needed: with different sizes the link that is full
// longest need not be the one with the largest W_l / c_l.
//
// What it gives is FlowNetwork's own time up to rounding: the network sums each link's weights
// in its own order and advances remaining bytes in steps, so the two agree to a few picoseconds,
// not bit for bit (tests/network/equal_flows_round_test.cpp compares them). It gives no
// per-link busy time or per-flow end (only the bottleneck's flows end at T); a caller that
// reports those simulates the flows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/ids.h"
#include "core/units.h"
#include "sim/network/flow_network.h"

namespace cs::net {

class EqualFlowsRound {
 public:
  // Capacities and latencies are the network's; it must outlive this.
  explicit EqualFlowsRound(const FlowNetwork& network);

  // The flows of the round, as FlowNetwork's starts of the same names take them (no callback).
  // Every flow that moves bytes (bytes > 0 on at least one link) must move the same bytes with
  // the same tail (InternalError otherwise: the closed form does not hold).
  void add_flow(std::span<const LinkId> path, Bytes bytes, Duration extra_latency);
  void add_pipeline(std::span<const std::span<const LinkId>> members, std::span<const std::uint32_t> copies,
                    Bytes bytes_per_member, Duration tail);
  void add_weighted(std::span<const WeightedLink> links, std::uint32_t scale, Bytes bytes, Duration tail);

  // From the round's start to its last delivery: T + the common tail, or the largest tail of a
  // flow that moves nothing if that is later. Zero for no flows.
  Duration end() const;
  // Empties the round (O(links it touched)).
  void clear();

 private:
  void load(std::uint32_t link, double weight);
  void moves(Bytes bytes, Duration tail);

  const FlowNetwork& network_;
  std::vector<double> weight_;          // W_l by link id, 0 where untouched
  std::vector<std::uint32_t> touched_;  // links with W_l > 0, in first-load order
  Bytes bytes_{0};                      // B, once a flow moves
  Duration tail_{0};                    // their common tail
  Duration idle_tail_{0};               // the largest tail of flows that move nothing
  bool moving_ = false;
};

}  // namespace cs::net
