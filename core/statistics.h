// Order statistics, one definition for the whole project (calibration timings, validation error
// summaries, fits).
//
//   quantile(sorted, q)  linear interpolation between the closest ranks (numpy's default): for n
//                        ascending values x[0..n-1], h = q (n - 1), x[floor h] + (h - floor h)
//                        (x[floor h + 1] - x[floor h]); q is clamped to [0, 1].
//   median(values)       the middle value of an odd count, the mean of the two middle ones of an
//                        even count (= quantile 0.5); for integer-valued types such as Duration
//                        the mean of two rounds toward zero.
#pragma once

#include <algorithm>
#include <vector>

#include "core/errors.h"

namespace cs {

double quantile(const std::vector<double>& sorted, double q);

template <class T>
T median(std::vector<T> values) {
  if (values.empty()) throw InternalError("median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace cs
