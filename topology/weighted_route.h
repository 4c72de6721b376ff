// Weighted routes: a flow's load per link as integer weights over a common denominator, and sums
// of them. Adaptive routing's spreads (topology/adaptive_spread.h) are such routes; so is a flow
// made of several parts (GPU -> NIC, NIC -> NIC, NIC -> GPU), a static-ECMP flow over d
// connections, and the load of a pipeline's members together.
//
// A route's link l carries weight(l) / scale of the flow's rate. Sums are exact: the common
// scale of a sum is the lcm of its parts' scales, and each part's weights are multiplied up to
// it. When that lcm would exceed kMaxSpreadScale (2^20), the sum falls back to kMaxSpreadScale
// with every weight rounded up, ceil(weight x kMaxSpreadScale / scale), so a link's load is
// overestimated by less than 1/kMaxSpreadScale of the rate per part and never underestimated;
// `exact` is then false. Links keep the order of their first addition, so a sum is a function
// of its parts and their order alone.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/random.h"

namespace cs::topo {

// Largest common denominator of a WeightedRoute before the rounded fallback.
inline constexpr std::uint32_t kMaxSpreadScale = 1u << 20;

// Link l carries weight/scale of the flow's rate. Links are distinct, weights positive.
struct WeightedRoute {
  std::vector<std::pair<LinkId, std::uint32_t>> links;
  std::uint32_t scale = 1;  // K, the common denominator
  bool exact = true;        // false after the rounded-up fallback (see the header)
};

// Throws InternalError: a link's weight in a weighted route exceeds 2^32.
[[noreturn]] void weight_overflow();

// Weights summed per link, in the order of each link's first addition, kept in one of three
// ways as the sums grow (Storage):
// - a linear scan while the sums are few (a path, a connection's parts);
// - an open-addressing table whose slots hold the link and its sum (one cache line touched per
//   addition to a link already there), at most half full (doubled when it would be more), and
//   the links in order beside it: 20 to 36 bytes per link;
// - once the links are dense among the ids below the largest (at a table's growth, the largest
//   id under 8x the links), a sum per id indexed directly, 0 while absent, and the links in
//   order beside it: at most the 36 bytes per link of the table it replaces, no hash, and
//   additions to nearby ids (the links of one server) touch nearby memory. A pipeline of a whole
//   cluster's members adds tens of millions of weights over a few million links this way (the
//   131,072-GPU tree: 16 pipelines of 626,688 links each, the largest id 1,703,809). An id past
//   8x the links in this storage goes back to a table.
// Memory grows with the distinct links, not the additions. Every weight added is at least 1
// (what a WeightedRoute holds); a sum past 2^32 - 1 throws InternalError.
class LinkSums {
 public:
  enum class Storage { kScan, kTable, kDense };
  // `additions`: how many add() calls are expected, when known: more than kLinear start with
  // the table (a scan per addition would cost up to kLinear compares each); reserves up to
  // 4,096 sums. `dense_ids` > 0: start in the dense storage, spanning ids below it (a caller
  // that expects the sums to be dense: dense_span() of a like sum).
  explicit LinkSums(std::size_t additions = 0, std::size_t dense_ids = 0);
  // Adds w (1 to 2^32 - 1) to l's sum. The dense storage's case inline (a few instructions:
  // the pipelines' sums make tens of millions of additions), the rest out of line.
  void add(LinkId l, std::uint64_t w) {
    if (l.value < dense_.size()) {
      std::uint32_t& s = dense_[l.value];
      if (s == 0) order_.push_back(l);
      s = checked(s + w);
      return;
    }
    add_elsewhere(l, w);
  }
  std::size_t size() const { return storage() == Storage::kScan ? small_.size() : order_.size(); }
  Storage storage() const {
    return !dense_.empty() ? Storage::kDense : table_.empty() ? Storage::kScan : Storage::kTable;
  }
  // The ids the dense storage spans when it holds a link per kDenseSpan of them or more, else 0.
  std::size_t dense_span() const { return kDenseSpan * order_.size() > dense_.size() ? dense_.size() : 0; }
  // Replaces every sum s by f(s) (a rescale), which must be at most 2^32 - 1.
  template <class F>
  void transform(F&& f) {
    for (auto& e : small_) e.second = checked(f(std::uint64_t{e.second}));
    for (Slot& s : table_) {
      if (s.link != kFree) s.sum = checked(f(std::uint64_t{s.sum}));
    }
    if (!dense_.empty()) {
      for (LinkId l : order_) dense_[l.value] = checked(f(std::uint64_t{dense_[l.value]}));
    }
  }
  // The sums in the order of their links' first addition.
  void write(std::vector<std::pair<LinkId, std::uint32_t>>& out) const;

 private:
  static constexpr std::size_t kLinear = 32;
  static constexpr std::size_t kDenseSpan = 8;  // ids per link at most in the dense storage
  static constexpr std::uint32_t kFree = UINT32_MAX;  // the invalid LinkId's value: no link's
  struct Slot {
    std::uint32_t link = kFree;
    std::uint32_t sum = 0;
  };
  // The slot holding `link`, else the free slot where it goes (linear probing; the table is
  // never full).
  Slot& probe(std::uint32_t link) { return table_[probe_index(link)]; }
  const Slot& probe(std::uint32_t link) const { return table_[probe_index(link)]; }
  std::size_t probe_index(std::uint32_t link) const {
    std::size_t i = mix64(link) & (table_.size() - 1);
    while (table_[i].link != link && table_[i].link != kFree) i = (i + 1) & (table_.size() - 1);
    return i;
  }
  static std::uint32_t checked(std::uint64_t sum) {
    if (sum > UINT32_MAX) weight_overflow();
    return static_cast<std::uint32_t>(sum);
  }
  // Room for at least `entries` sums: the dense storage when the ids so far are dense enough
  // (largest_ < kDenseSpan x the links), else a table of at least 64 slots and twice `entries`,
  // refilled from the sums so far (the small list's, moved into it the first time).
  void grow(std::size_t entries);
  // add() outside the dense storage's span: the scan, the table, or an id past the span.
  void add_elsewhere(LinkId l, std::uint64_t w);
  // add() in the dense storage for an id past its end: the storage extended while the ids stay
  // dense enough, else the sums moved back into a table.
  void add_beyond(LinkId l, std::uint64_t w);
  std::vector<std::pair<LinkId, std::uint32_t>> small_;  // while scanning; empty after
  std::vector<Slot> table_;                               // the table, else empty
  std::vector<std::uint32_t> dense_;                      // the dense storage by id, else empty
  std::vector<LinkId> order_;                             // the table's or dense links, first added first
  std::uint32_t largest_ = 0;  // the largest id added (in the dense storage, as of its last extension)
};

// A sum of routes built one part at a time (the segments of one flow, the members of one
// pipeline, `times` its copies): the shares of a link add. Cost O(links added), plus a pass over
// the sums each time the common scale grows (at most 20 times before the fallback). A link's
// weight above 2^32 throws InternalError.
class RouteSum {
 public:
  // `additions`: the links the parts will add, when known; `dense_ids`: start with the sums
  // dense below it (LinkSums).
  explicit RouteSum(std::size_t additions = 0, std::size_t dense_ids = 0) : sums_(additions, dense_ids) {}
  // A single path: each link weighted by how often the path crosses it, scale 1.
  void add(std::span<const LinkId> path, std::uint32_t times = 1) { add(path, times, [](LinkId l) { return l; }); }
  void add(const WeightedRoute& part, std::uint32_t times = 1) { add(part, times, [](LinkId l) { return l; }); }
  // The same with every link first replaced by map(link) (a folded run's orbit representatives:
  // the links of one orbit then add into one).
  template <class Map>
  void add(std::span<const LinkId> path, std::uint32_t times, Map&& map) {
    if (path.empty() || times == 0) return;
    const std::uint64_t one = check(std::uint64_t{scale_}, times);
    for (LinkId l : path) sums_.add(map(l), one);
  }
  template <class Map>
  void add(const WeightedRoute& part, std::uint32_t times, Map&& map) {
    if (part.links.empty() || times == 0) return;
    if (rescale_to(part.scale)) {
      const std::uint64_t factor = scale_ / part.scale;
      for (const auto& [l, w] : part.links) sums_.add(map(l), check(w * factor, times));
    } else {  // the rounded fallback: each weight rounded up to a multiple of 1 / kMaxSpreadScale
      for (const auto& [l, w] : part.links) sums_.add(map(l), check(round_up(w, part.scale), times));
    }
    exact_ = exact_ && part.exact;
  }
  bool empty() const { return sums_.size() == 0; }
  // LinkSums::dense_span of the sums: where another sum like this one should start dense.
  std::size_t dense_span() const { return sums_.dense_span(); }
  // The common scale so far: a multiple of every exact part's added while the sum is exact, so
  // adding a part whose scale divides it rescales nothing.
  std::uint32_t scale() const { return scale_; }
  // The sum so far.
  void finish(WeightedRoute& out) const;
  WeightedRoute finish() const;

 private:
  // Brings the sums to the common scale with `scale`: the lcm when it is at most
  // kMaxSpreadScale (true), else kMaxSpreadScale with the sums rounded up (false; exact_ false).
  bool rescale_to(std::uint32_t scale);
  std::uint64_t round_up(std::uint64_t w, std::uint64_t from) const { return (w * scale_ + from - 1) / from; }
  // w x times, which must fit 32 bits (a sum of such only grows).
  static std::uint64_t check(std::uint64_t w, std::uint32_t times) {
    if (w > UINT32_MAX / times) weight_overflow();
    return w * times;
  }
  LinkSums sums_;
  std::uint32_t scale_ = 1;
  bool exact_ = true;
};

// A single path as a WeightedRoute: scale 1, each link weighted by how often the path crosses it.
WeightedRoute weighted_path(std::span<const LinkId> path);

// Adds `times` x the load of `part` to `sum`: RouteSum's sum of the two, written into `sum`.
void add_route(WeightedRoute& sum, const WeightedRoute& part, std::uint32_t times = 1);

// The sum of many parts (the members of one pipeline, each `times` over), as RouteSum gives adding
// them in order, in O(total links of the parts). A part is a WeightedRoute, or (route null) a
// single path.
struct RoutePart {
  const WeightedRoute* route = nullptr;
  std::uint32_t times = 1;
  std::span<const LinkId> path = {};
};
WeightedRoute sum_routes(std::span<const RoutePart> parts);
// The same sum written into `out` (its links' buffer reused).
void sum_routes(std::span<const RoutePart> parts, WeightedRoute& out);

}  // namespace cs::topo
