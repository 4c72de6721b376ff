// The symmetries of a job: permutations of all its ranks (simulated and mirrored, task_graph.h)
// under which the job maps onto itself, held as shifts over a rank grid instead of one dense
// permutation each (which took |symmetries| x ranks integers: 268 MB for a 32,768-GPU job).
//
// The grid form. Every rank r has a grid index p(r), a bijection of 0..n-1 (n = all ranks). A
// grid index is a mixed-radix number whose listed axes are some of its digits:
//   digit_i(g) = (g / stride_i) mod radix_i,
// the axes' digits being distinct (sorted by stride, each stride a multiple of the previous
// stride x radix, and stride x radix dividing n). A shift s = (s_0, .., s_{m-1}), 0 <= s_i <
// radix_i, moves each listed digit cyclically and keeps every other digit:
//   shift_s(g) = g + sum_i ((digit_i(g) + s_i) mod radix_i - digit_i(g)) x stride_i,
// and the symmetry it stands for maps rank r to p^-1(shift_s(p(r))). A training job's grid is
// its (dp, pp, cp, tp) placement, the axes the coordinates it shifts (workloads/training_graph.h).
// The shifts are listed in order (the order in which images are replayed, which fixes their
// flow labels); the identity is not listed.
//
// The explicit form: dense permutations, as schema clustersim.taskgraph/1 wrote them (read for
// compatibility; a graph holds one form or the other).
//
// Cost: the grid form holds 2n + m x |shifts| integers; image(k, r) is O(m). The explicit form
// holds n x |symmetries| integers; image(k, r) is O(1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cs {
class ConfigNode;
}

namespace cs::tg {

struct GridAxis {
  std::uint32_t radix = 1;
  std::uint32_t stride = 1;
};

class RankSymmetries {
 public:
  RankSymmetries() = default;
  // The grid form: `grid_index[r]` is rank r's grid index (a permutation of 0..n-1); shifts are
  // added with add_shift.
  RankSymmetries(std::vector<GridAxis> axes, std::vector<std::uint32_t> grid_index);

  // One shift per axis, each below its radix (check(), which TaskGraph::validate calls).
  void add_shift(std::vector<std::uint32_t> shift);
  // The explicit form: a permutation of all ranks (check()).
  void add_permutation(std::vector<std::uint32_t> permutation);

  std::size_t size() const { return explicit_form() ? permutations_.size() : shifts_.size() / axes_.size(); }
  bool empty() const { return size() == 0; }
  bool explicit_form() const { return axes_.empty(); }
  // Per rank, its grid index (the grid form); empty in the explicit form.
  const std::vector<std::uint32_t>& grid_index() const { return grid_index_; }
  // The image of rank r under symmetry k < size(). O(axes).
  std::uint32_t image(std::size_t k, std::uint32_t rank) const;
  // Whether symmetry k followed by any listed symmetry, or alone, is a listed symmetry or the
  // identity: then k permutes the listed symmetries and the identity, and maps every family of
  // images onto itself. The grid form: shift k added to every shift (mod the radices); the
  // explicit form: false (not checked). O(axes x |shifts| log |shifts|).
  bool permutes_symmetries(std::size_t k) const;
  // Symmetries whose images of the rank set `ranks` include every image other than the set
  // itself: in order, the first of each class of shifts that agree off the axes along which the
  // set is invariant, the identity's class left out. A unit shift along such an axis maps the
  // set onto itself, so every shift along it does, and two shifts that differ only there map the
  // set onto the same set. The explicit form: every symmetry.
  // A data-parallel group spans the dp axis, so its dp shifts fall into one class: replaying
  // its images asks n / |group| symmetries, not |symmetries| (O(n) per group, not O(n^2 / tp pp)).
  // O(axes x |ranks| log |ranks| + axes x |shifts| + n).
  std::vector<std::size_t> set_image_representatives(const std::vector<std::uint32_t>& ranks) const;

  // The first reason the description does not stand for permutations of `all_ranks` ranks: a
  // JSON path below "/symmetries" and a message; an empty message when all is well. O(n + m x
  // |shifts|) for the grid form, O(n x |symmetries|) for the explicit one.
  struct Problem {
    std::string path;
    std::string message;
  };
  Problem check(std::uint32_t all_ranks) const;

  // JSON (docs/taskgraph-format.md): the grid form as an object {"axes": [{"radix", "stride"},
  // ...], "grid_index": [...], "shifts": [[...], ...]}; the explicit form as the array of
  // permutations schema 1 wrote. from_config reads either (ConfigError at the node).
  nlohmann::json to_json() const;
  static RankSymmetries from_config(const ConfigNode& node);

 private:
  std::vector<GridAxis> axes_;
  std::vector<std::uint32_t> grid_index_;  // per rank
  std::vector<std::uint32_t> rank_at_;     // per grid index: the inverse of grid_index_
  std::vector<std::uint32_t> shifts_;      // |shifts| x |axes|, row by row
  std::vector<std::vector<std::uint32_t>> permutations_;
};

}  // namespace cs::tg
