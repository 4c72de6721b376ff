#include "core/statistics.h"

#include <cmath>

namespace cs {

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw InternalError("quantile of no values");
  q = std::clamp(q, 0.0, 1.0);
  const double h = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace cs
