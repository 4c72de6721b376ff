// The request router of a serving deployment (docs/serving.md, "Routers"): which replica of a pool
// takes the next request.
//   round_robin        the next replica that is up, in pool order
//   least_outstanding  fewest requests queued or running (join the shortest queue); ties in
//                      round-robin order (the scan starts after the replica chosen last)
//   least_kv           fewest KV blocks in use or needed by its queue; ties to the first
//   power_of_two       two distinct replicas drawn at random, the one with fewer outstanding
//                      requests (Mitzenmacher, IEEE TPDS 12(10), 2001); ties to the first drawn
//                      in pool order
//   session_affinity   hash of the session id modulo the replicas that are up
#pragma once

#include <cstdint>
#include <span>

#include "core/random.h"
#include "drivers/serving_config.h"

namespace cs::drv {

struct ReplicaLoad {
  bool up = true;
  std::int64_t outstanding = 0;  // requests queued or running
  std::int64_t kv_blocks = 0;    // blocks in use plus blocks its queue will need
};

class ServingRouter {
 public:
  ServingRouter(RouterPolicy policy, std::uint64_t seed) : policy_(policy), rng_(Rng::derive(seed, 11)) {}
  // The position in `pool` of the chosen replica, or -1 when none is up.
  int pick(std::span<const ReplicaLoad> pool, std::uint64_t session);

 private:
  RouterPolicy policy_;
  Rng rng_;
  std::size_t next_ = 0;  // round-robin position
};

}  // namespace cs::drv
