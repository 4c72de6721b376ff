// Integer arithmetic that cannot overflow silently (docs/cli.md, "Limits"): products of counts
// from the input (parallel degrees, batch sizes) are formed here before anything trusts them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

namespace cs {

// The product of non-negative factors, or INT64_MAX when it would overflow: a product compared
// with a limit needs no more than that.
constexpr std::int64_t saturating_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t p = 1;
  for (const std::int64_t f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) return std::numeric_limits<std::int64_t>::max();
  }
  return p;
}

}  // namespace cs
