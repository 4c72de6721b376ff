#include "workloads/rank_grid.h"

#include <algorithm>

#include "core/errors.h"

namespace cs::wl {

RankGrid::RankGrid(const ParallelPlan& plan, const std::string& file, const std::string& path) {
  extent_ = {plan.dp, plan.pp, plan.cp, plan.tp};
  static constexpr const char* kNames[] = {"dp", "pp", "cp", "tp"};
  std::vector<std::string> order = plan.order;
  std::vector<std::string> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != std::vector<std::string>{"cp", "dp", "pp", "tp"}) {
    throw ConfigError(file, path, "expected an order of the four dimensions \"tp\", \"cp\", \"pp\", \"dp\" (innermost first)");
  }
  int stride = 1;
  for (const std::string& name : order) {
    const int d = static_cast<int>(std::find(std::begin(kNames), std::end(kNames), name) - std::begin(kNames));
    stride_[static_cast<std::size_t>(d)] = stride;
    stride *= extent_[static_cast<std::size_t>(d)];
  }
  size_ = stride;
}

int RankGrid::rank(GridCoord c) const {
  return c.dp * stride_[kDp] + c.pp * stride_[kPp] + c.cp * stride_[kCp] + c.tp * stride_[kTp];
}

GridCoord RankGrid::coord(int rank) const {
  GridCoord c;
  c.dp = rank / stride_[kDp] % extent_[kDp];
  c.pp = rank / stride_[kPp] % extent_[kPp];
  c.cp = rank / stride_[kCp] % extent_[kCp];
  c.tp = rank / stride_[kTp] % extent_[kTp];
  return c;
}

}  // namespace cs::wl
