#include "drivers/serving_router.h"

#include <algorithm>
#include <vector>

namespace cs::drv {

int ServingRouter::pick(std::span<const ReplicaLoad> pool, std::uint64_t session) {
  std::vector<int> up;
  for (std::size_t r = 0; r < pool.size(); ++r)
    if (pool[r].up) up.push_back(static_cast<int>(r));
  if (up.empty()) return -1;
  const std::size_t n = pool.size();
  switch (policy_) {
    case RouterPolicy::kRoundRobin:
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t r = (next_ + k) % n;
        if (pool[r].up) {
          next_ = r + 1;
          return static_cast<int>(r);
        }
      }
      return -1;
    case RouterPolicy::kLeastOutstanding: {
      int best = -1;
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t r = (next_ + k) % n;
        if (pool[r].up && (best < 0 || pool[r].outstanding < pool[static_cast<std::size_t>(best)].outstanding)) {
          best = static_cast<int>(r);
        }
      }
      next_ = static_cast<std::size_t>(best) + 1;
      return best;
    }
    case RouterPolicy::kLeastKv:
      return *std::min_element(up.begin(), up.end(), [&](int a, int b) {
        return pool[static_cast<std::size_t>(a)].kv_blocks < pool[static_cast<std::size_t>(b)].kv_blocks;
      });
    case RouterPolicy::kPowerOfTwo: {
      if (up.size() == 1) return up[0];
      const std::size_t i = rng_.below(up.size());
      std::size_t j = rng_.below(up.size() - 1);
      if (j >= i) ++j;
      const int a = up[std::min(i, j)], b = up[std::max(i, j)];
      return pool[static_cast<std::size_t>(b)].outstanding < pool[static_cast<std::size_t>(a)].outstanding ? b : a;
    }
    case RouterPolicy::kSessionAffinity:
      return up[mix64(session) % up.size()];
  }
  return -1;
}

}  // namespace cs::drv
