#include "taskgraph/rank_symmetries.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "core/config.h"
#include "core/errors.h"

namespace cs::tg {

namespace {

constexpr std::uint32_t kNone = UINT32_MAX;

// Whether `v` holds each of 0 .. n-1 once.
bool is_permutation_of(const std::vector<std::uint32_t>& v, std::uint32_t n) {
  if (v.size() != n) return false;
  std::vector<bool> seen(n, false);
  for (std::uint32_t x : v) {
    if (x >= n || seen[x]) return false;
    seen[x] = true;
  }
  return true;
}

std::uint32_t as_u32(const ConfigNode& n, std::int64_t max = UINT32_MAX) {
  return static_cast<std::uint32_t>(n.as_int(0, max));
}

}  // namespace

RankSymmetries::RankSymmetries(std::vector<GridAxis> axes, std::vector<std::uint32_t> grid_index)
    : axes_(std::move(axes)), grid_index_(std::move(grid_index)), rank_at_(grid_index_.size(), kNone) {
  if (axes_.empty()) throw InternalError("RankSymmetries: a grid needs at least one axis");
  for (std::size_t r = 0; r < grid_index_.size(); ++r) {
    if (grid_index_[r] < rank_at_.size()) rank_at_[grid_index_[r]] = static_cast<std::uint32_t>(r);
  }
}

void RankSymmetries::add_shift(std::vector<std::uint32_t> shift) {
  if (explicit_form() || shift.size() != axes_.size()) throw InternalError("RankSymmetries: a shift needs one entry per grid axis");
  shifts_.insert(shifts_.end(), shift.begin(), shift.end());
}

void RankSymmetries::add_permutation(std::vector<std::uint32_t> permutation) {
  if (!explicit_form()) throw InternalError("RankSymmetries: a grid holds shifts, not permutations");
  permutations_.push_back(std::move(permutation));
}

bool RankSymmetries::permutes_symmetries(std::size_t k) const {
  if (explicit_form() || k >= size()) return false;
  const std::size_t m = axes_.size();
  std::set<std::vector<std::uint32_t>> listed;
  for (std::size_t j = 0; j < size(); ++j) listed.emplace(shifts_.begin() + static_cast<std::ptrdiff_t>(j * m), shifts_.begin() + static_cast<std::ptrdiff_t>((j + 1) * m));
  listed.emplace(m, 0);  // the identity
  std::vector<std::uint32_t> sum(m);
  for (const std::vector<std::uint32_t>& s : listed) {
    for (std::size_t i = 0; i < m; ++i) sum[i] = (s[i] + shifts_[k * m + i]) % axes_[i].radix;
    if (!listed.count(sum)) return false;
  }
  return true;
}

std::uint32_t RankSymmetries::image(std::size_t k, std::uint32_t rank) const {
  if (explicit_form()) return permutations_[k][rank];
  const std::uint32_t* shift = shifts_.data() + k * axes_.size();
  const std::int64_t g = grid_index_[rank];
  std::int64_t out = g;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    const std::int64_t digit = g / axes_[i].stride % axes_[i].radix;
    std::int64_t moved = digit + shift[i];
    if (moved >= axes_[i].radix) moved -= axes_[i].radix;
    out += (moved - digit) * axes_[i].stride;
  }
  return rank_at_[static_cast<std::size_t>(out)];
}

std::vector<std::size_t> RankSymmetries::set_image_representatives(const std::vector<std::uint32_t>& ranks) const {
  std::vector<std::size_t> out;
  if (explicit_form()) {
    out.resize(size());
    std::iota(out.begin(), out.end(), std::size_t{0});
    return out;
  }
  if (grid_index_.empty()) return out;  // no rank: the identity alone, which is no image
  std::vector<std::uint32_t> sorted(ranks);
  std::sort(sorted.begin(), sorted.end());
  // Axis i is invariant when the unit shift along it maps every rank of the set into the set.
  std::vector<bool> invariant(axes_.size());
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    const std::int64_t radix = axes_[i].radix, stride = axes_[i].stride;
    invariant[i] = std::all_of(ranks.begin(), ranks.end(), [&](std::uint32_t r) {
      const std::int64_t g = grid_index_[r];
      const std::int64_t digit = g / stride % radix;
      const std::int64_t moved = g + (digit + 1 == radix ? -(radix - 1) : 1) * stride;
      return std::binary_search(sorted.begin(), sorted.end(), rank_at_[static_cast<std::size_t>(moved)]);
    });
  }
  // A class of shifts: its shift off the invariant axes, as a grid offset below n (the axes'
  // digits are distinct). Offset 0 is the identity's class, which maps the set onto itself.
  std::vector<bool> seen(grid_index_.size(), false);
  seen[0] = true;
  for (std::size_t k = 0; k < size(); ++k) {
    const std::uint32_t* shift = shifts_.data() + k * axes_.size();
    std::size_t offset = 0;
    for (std::size_t i = 0; i < axes_.size(); ++i) {
      if (!invariant[i]) offset += std::size_t{shift[i]} * axes_[i].stride;
    }
    if (seen[offset]) continue;
    seen[offset] = true;
    out.push_back(k);
  }
  return out;
}

RankSymmetries::Problem RankSymmetries::check(std::uint32_t all_ranks) const {
  const std::string range = "ranks 0.." + std::to_string(all_ranks - 1);
  if (explicit_form()) {
    for (std::size_t k = 0; k < permutations_.size(); ++k) {
      if (!is_permutation_of(permutations_[k], all_ranks)) return {"/" + std::to_string(k), "expected a permutation of the " + range};
    }
    return {};
  }
  if (!is_permutation_of(grid_index_, all_ranks)) return {"/grid_index", "expected a permutation of the " + range + " (each rank's grid index)"};
  // The axes must be distinct digits of one mixed-radix number below all_ranks: by increasing
  // stride, each stride a multiple of the previous stride x radix.
  std::vector<std::size_t> by_stride(axes_.size());
  std::iota(by_stride.begin(), by_stride.end(), std::size_t{0});
  std::stable_sort(by_stride.begin(), by_stride.end(), [&](std::size_t a, std::size_t b) { return axes_[a].stride < axes_[b].stride; });
  std::uint64_t end = 1;
  for (std::size_t i : by_stride) {
    const GridAxis& a = axes_[i];
    if (a.radix == 0 || a.stride == 0 || a.stride % end != 0) {
      return {"/axes/" + std::to_string(i), "expected an axis whose stride is a multiple of the stride x radix of every axis of smaller stride"};
    }
    end = std::uint64_t{a.stride} * a.radix;
  }
  if (all_ranks % end != 0) return {"/axes", "expected axes whose largest stride x radix divides ranks + mirrored = " + std::to_string(all_ranks)};
  for (std::size_t k = 0; k < size(); ++k) {
    for (std::size_t i = 0; i < axes_.size(); ++i) {
      if (shifts_[k * axes_.size() + i] >= axes_[i].radix) {
        return {"/shifts/" + std::to_string(k) + "/" + std::to_string(i), "expected a shift below the axis's radix " + std::to_string(axes_[i].radix)};
      }
    }
  }
  return {};
}

nlohmann::json RankSymmetries::to_json() const {
  if (explicit_form()) return permutations_;
  nlohmann::json axes = nlohmann::json::array();
  for (const GridAxis& a : axes_) axes.push_back({{"radix", a.radix}, {"stride", a.stride}});
  nlohmann::json shifts = nlohmann::json::array();
  for (std::size_t k = 0; k < size(); ++k) {
    shifts.push_back(std::vector<std::uint32_t>(shifts_.begin() + static_cast<std::ptrdiff_t>(k * axes_.size()),
                                                shifts_.begin() + static_cast<std::ptrdiff_t>((k + 1) * axes_.size())));
  }
  return {{"axes", std::move(axes)}, {"grid_index", grid_index_}, {"shifts", std::move(shifts)}};
}

RankSymmetries RankSymmetries::from_config(const ConfigNode& node) {
  if (node.is_array()) {
    RankSymmetries out;
    for (const ConfigNode& perm : node.elements()) {
      std::vector<std::uint32_t> p;
      for (const ConfigNode& r : perm.elements()) p.push_back(as_u32(r));
      out.add_permutation(std::move(p));
    }
    return out;
  }
  if (!node.is_object()) node.fail_expected("an object {\"axes\", \"grid_index\", \"shifts\"} or an array of permutations");
  node.expect_only({"axes", "grid_index", "shifts"});
  std::vector<GridAxis> axes;
  for (const ConfigNode& a : node.at("axes").elements()) {
    a.expect_only({"radix", "stride"});
    axes.push_back({static_cast<std::uint32_t>(a.at("radix").as_int(1, UINT32_MAX)), static_cast<std::uint32_t>(a.at("stride").as_int(1, UINT32_MAX))});
  }
  if (axes.empty()) node.at("axes").fail_expected("at least one axis");
  std::vector<std::uint32_t> grid_index;
  for (const ConfigNode& g : node.at("grid_index").elements()) grid_index.push_back(as_u32(g));
  RankSymmetries out(axes, std::move(grid_index));
  for (const ConfigNode& s : node.at("shifts").elements()) {
    if (s.size() != axes.size()) s.fail_expected("one shift per axis (" + std::to_string(axes.size()) + ")");
    std::vector<std::uint32_t> shift;
    for (std::size_t i = 0; i < axes.size(); ++i) shift.push_back(as_u32(s.at(i), axes[i].radix - 1));
    out.add_shift(std::move(shift));
  }
  return out;
}

}  // namespace cs::tg
