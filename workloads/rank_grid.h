// Rank placement: where each rank of a job sits in the parallel grid (dp, pp, cp, tp).
//
// `order` lists the dimensions innermost first; the default {"tp", "cp", "pp", "dp"} puts the
// ranks of one TP group on consecutive GPUs (inside one server), then CP, then pipeline stages,
// then data-parallel replicas, as Megatron-LM and Llama 3 do:
//   rank = tp + T (cp + C (pp + P dp))   for the default order.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "workloads/parallel_plan.h"

namespace cs::wl {

struct GridCoord {
  int dp = 0, pp = 0, cp = 0, tp = 0;
};

class RankGrid {
 public:
  // Throws ConfigError at `path` (e.g. "/plan/order") when the order is not a permutation of
  // tp, cp, pp, dp.
  RankGrid(const ParallelPlan& plan, const std::string& file, const std::string& path);
  int size() const { return size_; }
  int rank(GridCoord c) const;
  GridCoord coord(int rank) const;
  // Each dimension's stride: rank = dp x strides().dp + pp x strides().pp + ...
  GridCoord strides() const { return {stride_[kDp], stride_[kPp], stride_[kCp], stride_[kTp]}; }

 private:
  enum Dim { kDp, kPp, kCp, kTp };
  std::array<int, 4> extent_{};   // by Dim
  std::array<int, 4> stride_{};   // by Dim
  int size_ = 1;
};

}  // namespace cs::wl
