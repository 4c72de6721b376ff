#include "topology/router.h"

#include <limits>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/random.h"
#include "topology/rendezvous_hash.h"
#include "topology/server_orbits.h"

namespace cs::topo {

// A cached route: key (src, dst, label) and its links in the arena. src == kEmpty: free slot.
struct Router::Slot {
  std::uint32_t src;
  std::uint32_t dst;
  std::uint64_t label;
  const LinkId* path;
  std::uint32_t length;
};

// Per-vertex marks of the bidirectional search; a mark is valid only when its generation is
// the current one, so nothing is cleared between queries.
struct Router::Mark {
  std::uint32_t gen_fwd = 0, gen_bwd = 0;
  std::uint32_t dist_fwd = 0, dist_bwd = 0;  // hops from src / to dst
  // The widest link reaching this vertex from the previous forward layer, and leaving it
  // toward the previous backward layer: recorded while searching, so choosing the middle
  // vertex never rescans a switch's links.
  double widest_fwd = 0, widest_bwd = 0;
  // Compressed search only: the frontier class whose links reached this class when it was
  // found, or kSeveral when more than one did (router.cpp, search_compressed).
  std::uint32_t pred_fwd = 0, pred_bwd = 0;
};

// The exchanges of twin servers that take a pair to its canonical pair (ServerTwins::canonical),
// as maps of devices: to_canonical applies (a1 b1) then (a2 b2), from_canonical undoes them.
// Without twins, the identity.
struct Router::Exchange {
  const ServerTwins* twins = nullptr;
  ServerTwins::Canonical pair{};
  std::uint32_t to_canonical(std::uint32_t v) const {
    if (!twins) return v;
    if (pair.a1 != pair.b1) v = twins->image(v, pair.a1, pair.b1);
    return pair.a2 != pair.b2 ? twins->image(v, pair.a2, pair.b2) : v;
  }
  std::uint32_t from_canonical(std::uint32_t v) const {
    if (!twins) return v;
    if (pair.a2 != pair.b2) v = twins->image(v, pair.a2, pair.b2);
    return pair.a1 != pair.b1 ? twins->image(v, pair.a1, pair.b1) : v;
  }
};

namespace {

constexpr std::uint32_t kEmpty = UINT32_MAX;
constexpr std::size_t kChunkLinks = 16384;       // 64 KiB arena chunks
constexpr std::uint64_t kMeetSalt = 0x6d656574;  // "meet"
constexpr std::uint64_t kOutSalt = 1;
constexpr std::uint64_t kMemberSalt = 0x6d656d62;  // "memb": the member of a class chosen among several
constexpr std::uint32_t kDirect = 1u << 31;  // a class's small row, read from the adjacency
constexpr std::uint32_t kSeveral = UINT32_MAX;  // Mark::pred_*: found from several classes
// Searched::plan_at: not walked yet, walked once, not to be planned (else the plan's offset)
constexpr std::uint32_t kUnplanned = UINT32_MAX, kWalkedOnce = UINT32_MAX - 1, kUnplannable = UINT32_MAX - 2;
constexpr std::uint32_t kPlanLink = UINT32_MAX, kPlanEnd = UINT32_MAX - 1;  // PlanStep::vertex: a link, the path's end
constexpr std::uint32_t kInRow = 1u << 31;          // PlanStep::slot: of the in-row
constexpr std::uint32_t kTwins = 1u << 31;      // class_of_: a class of several vertices
// A row of this many links or more is a big row: the compressed search reads it as blocks of
// entries, and the walk finds the links from a known vertex in it by binary search.
constexpr std::uint32_t kBigRow = 16;

std::uint64_t key_hash(std::uint32_t src, std::uint32_t dst, std::uint64_t label) {
  return hash_combine(hash_combine(mix64(src), dst), label);
}

// Open-addressing intern table of integer lists (a block's entries, a twin's signature): the
// id of an equal list added before, else of the new one. Lists live in `words` at `begin`.
class ListTable {
 public:
  // The id of the list words[first, last) if an equal one was interned, else interns it.
  // Interned ids are consecutive from 0; `words` must not shrink while the table is used.
  std::uint32_t intern(const std::vector<std::uint64_t>& words, std::size_t first, std::size_t last) {
    if ((count_ + 1) * 2 > table_.size()) grow(words);
    const std::uint64_t h = hash(words, first, last);
    for (std::size_t i = h & (table_.size() - 1);; i = (i + 1) & (table_.size() - 1)) {
      if (table_[i] == kFree) {
        table_[i] = count_;
        begin_.push_back(first);
        end_.push_back(last);
        return count_++;
      }
      const std::uint32_t id = table_[i];
      if (end_[id] - begin_[id] == last - first &&
          std::equal(words.begin() + static_cast<std::ptrdiff_t>(first), words.begin() + static_cast<std::ptrdiff_t>(last),
                     words.begin() + static_cast<std::ptrdiff_t>(begin_[id]))) {
        return id;
      }
    }
  }
  std::size_t first(std::uint32_t id) const { return begin_[id]; }
  std::size_t last(std::uint32_t id) const { return end_[id]; }

 private:
  static constexpr std::uint32_t kFree = UINT32_MAX;
  static std::uint64_t hash(const std::vector<std::uint64_t>& words, std::size_t first, std::size_t last) {
    std::uint64_t h = mix64(last - first);
    for (std::size_t k = first; k < last; ++k) h = hash_combine(h, words[k]);
    return h;
  }
  void grow(const std::vector<std::uint64_t>& words) {
    table_.assign(std::max<std::size_t>(64, table_.size() * 2), kFree);
    for (std::uint32_t id = 0; id < count_; ++id) {
      for (std::size_t i = hash(words, begin_[id], end_[id]) & (table_.size() - 1);; i = (i + 1) & (table_.size() - 1)) {
        if (table_[i] == kFree) {
          table_[i] = id;
          break;
        }
      }
    }
  }
  std::vector<std::uint32_t> table_;
  std::vector<std::size_t> begin_, end_;
  std::uint32_t count_ = 0;
};

// The first round's state of a search from s to d (vertices, or classes) in generation g.
template <class Marks>
void start_search(Marks& marks, std::vector<std::uint32_t>& front_fwd, std::vector<std::uint32_t>& front_bwd,
                  std::uint32_t s, std::uint32_t d, std::uint32_t g) {
  marks[s].gen_fwd = g;
  marks[s].dist_fwd = 0;
  marks[d].gen_bwd = g;
  marks[d].dist_bwd = 0;
  front_fwd.assign(1, s);
  front_bwd.assign(1, d);
}

// Where the search for v starts (for_links_from); null when v is outside the row's far ends.
template <class Slot>
const Slot* interpolate(const Slot* first, const Slot* last, std::uint32_t v) {
  const std::uint32_t low = first->far, high = last[-1].far;
  if (v < low || v > high) return nullptr;
  const auto n = static_cast<std::uint64_t>(last - first);
  return first + (high == low ? 0 : std::uint64_t{v - low} * (n - 1) / (high - low));
}

// Where far end v's slots lie in a row of runs [runs, runs_end) (Router::RowRun): from the row's
// slot `slot` on, `copies` of them; none (copies 0) when v is not a far end of the row. The runs
// ascend and do not overlap: v lies in the last run that starts at or below it, if any.
struct RunPlace {
  std::uint32_t slot = 0, copies = 0;
};
template <class Run>
RunPlace run_place(const Run* runs, const Run* runs_end, std::uint32_t v) {
  for (const Run* r = runs; r != runs_end && r->first <= v; ++r) {
    const std::uint32_t d = v - r->first;
    if (d > (r->count - 1) * r->stride) continue;  // past the run's last far end
    const std::uint32_t q = d / r->stride;
    if (q * r->stride != d) break;  // between two of its far ends
    return {r->begin + q * r->copies, r->copies};
  }
  return {};
}

// Calls f(slot) for each slot of a sorted row [first, last) (Router::SortedSlot) whose far end
// is one of the level's vertices (a Router::SmallLevel); a vertex may hold several parallel
// links. A row of a few runs (Router::RowRun, [runs, runs_end)) gives each vertex's place by
// arithmetic: one entry read, the one the walk takes. Any other row is searched from where the
// vertex would lie were its far ends evenly spaced (interpolation), galloping from there to a
// range that holds the vertex, then searching that: where a binary search of a row of hundreds
// reads eight or nine entries, each a cache miss on a large cluster.
template <class Level, class Slot, class Run, class F>
void for_links_from(const Level& level, const Slot* first, const Slot* last, const Run* runs, const Run* runs_end,
                    const F& f) {
  const auto below = [](const Slot& slot, std::uint32_t x) { return slot.far < x; };
  for (std::uint32_t i = 0; i < level.size; ++i) {
    const std::uint32_t v = level.vertex[i];
    if (runs != runs_end) {
      const RunPlace at = run_place(runs, runs_end, v);
      for (std::uint32_t c = 0; c < at.copies; ++c) f(first[at.slot + c]);
      continue;
    }
    const Slot* guess = interpolate(first, last, v);
    if (!guess) continue;
    // [lo, hi) holds the first slot whose far end is v or more: lo[-1].far < v <= hi->far.
    const Slot *lo = guess, *hi = lo;
    if (lo->far < v) {
      for (std::size_t step = 1; hi != last && hi->far < v; step *= 2) {
        lo = hi + 1;
        hi = static_cast<std::size_t>(last - hi) > step ? hi + step : last;
      }
    } else {
      for (std::size_t step = 1; lo != first && lo[-1].far >= v; step *= 2) {
        hi = lo - 1;
        lo = static_cast<std::size_t>(lo - first) > step ? lo - step : first;
      }
    }
    for (const Slot* k = std::lower_bound(lo, hi, v, below); k != last && k->far == v; ++k) f(*k);
  }
}

// The runs of a sorted row (Router::RowRun), each as long as it goes, into `out`; none when
// there would be more than `most`. Groups of equal far ends are a run's far ends: a group joins
// the run when it has the run's copies and lies one stride past the run's last.
template <class Slot, class Run>
void row_runs(const Slot* row, std::uint32_t size, std::size_t most, std::vector<Run>& out) {
  const std::size_t before = out.size();
  const auto copies_at = [&](std::uint32_t i) {
    std::uint32_t j = i + 1;
    while (j < size && row[j].far == row[i].far) ++j;
    return j - i;
  };
  for (std::uint32_t i = 0; i < size;) {
    Run run{row[i].far, 1, i, 1, copies_at(i)};
    std::uint32_t next = i + run.copies;
    if (next < size && copies_at(next) == run.copies) {
      run.stride = row[next].far - run.first;
      std::uint32_t last = run.first;
      while (next < size && row[next].far - last == run.stride && copies_at(next) == run.copies) {
        last = row[next].far;
        ++run.count;
        next += run.copies;
      }
    }
    if (out.size() - before == most) {
      out.resize(before);
      return;
    }
    out.push_back(run);
    i = next;
  }
}

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace

Router::Router(const Cluster& cluster, Search search) : Router(cluster, {}, search) {}

Router::Router(const Cluster& cluster, std::span<const LinkId> down) : Router(cluster, down, Search::kGeneric) {}

Router::Router(const Cluster& cluster, std::span<const LinkId> down, Search search)
    : cluster_(cluster),
      vertex_count_(static_cast<std::uint32_t>(cluster.node_count())),
      out_begin_(cluster.out_adjacency().begin.data()),
      out_node_(cluster.out_adjacency().node.data()),
      in_begin_(cluster.in_adjacency().begin.data()),
      in_node_(cluster.in_adjacency().node.data()),
      out_link_(cluster.out_adjacency().link.data()),
      in_link_(cluster.in_adjacency().link.data()) {
  auto bandwidths = [&](const std::vector<LinkId>& links, std::vector<double>& out) {
    out.resize(links.size());
    for (std::size_t k = 0; k < links.size(); ++k) out[k] = cluster.link(links[k]).bandwidth.value();
  };
  bandwidths(cluster.out_adjacency().link, out_bw_);
  bandwidths(cluster.in_adjacency().link, in_bw_);
  for (LinkId l : down) {
    for (std::size_t k = 0; k < cluster.out_adjacency().link.size(); ++k) {
      if (out_link_[k] == l) out_bw_[k] = 0;
    }
    for (std::size_t k = 0; k < cluster.in_adjacency().link.size(); ++k) {
      if (in_link_[k] == l) in_bw_[k] = 0;
    }
  }
  links_down_ = !down.empty();
  slots_.assign(64, Slot{kEmpty, kEmpty, 0, nullptr, 0});
  build_twins();  // over the rates as seen: a failed link's ends are no longer their twins' equals
  if (search != Search::kGeneric) build_compressed(cluster, search);
}

// Twin switches (NVSwitches and network switches): equal sorted (far end, rate) lists of
// out-links and of in-links, no self-loop. A vertex outside the class reaches every member at
// the same distance (a shortest path's last hop x -> u has the twin x -> v; x is neither, as
// twins are not adjacent without a self-loop), over links of the same rates, and likewise from
// every member to a vertex outside. The walk chooses a route's middle by class (router.h), the
// compressed search runs on them. Rates as the router sees them: a link that is down (rate 0)
// tells its ends apart from their twins.
void Router::build_twins() {
  const std::uint32_t n = vertex_count_;
  if (n >= kTwins) throw InternalError("Router: more than 2^31 devices");
  std::vector<std::uint64_t> words;
  std::vector<std::uint32_t> signature(n, UINT32_MAX);
  {
    ListTable table;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> row;
    for (std::uint32_t v = 0; v < n; ++v) {
      const NodeKind node_kind = cluster_.node(NodeId{v}).kind;
      if (!is_switch(node_kind) || node_kind == NodeKind::kPcieSwitch) continue;  // each its own GPUs
      const std::size_t first = words.size();
      bool loop = false;
      for (int dir = 0; dir < 2; ++dir) {
        const std::uint32_t* begin = dir == 0 ? out_begin_ : in_begin_;
        const std::uint32_t* node = dir == 0 ? out_node_ : in_node_;
        const std::vector<double>& bw = dir == 0 ? out_bw_ : in_bw_;
        row.clear();
        for (std::uint32_t k = begin[v]; k < begin[v + 1]; ++k) {
          loop = loop || node[k] == v;
          row.emplace_back(node[k], bits_of(bw[k]));
        }
        std::sort(row.begin(), row.end());
        words.push_back(row.size());
        for (const auto& [far, rate] : row) {
          words.push_back(far);
          words.push_back(rate);
        }
      }
      if (loop) {
        words.resize(first);
        continue;
      }
      signature[v] = table.intern(words, first, words.size());
    }
  }
  // Classes numbered in the order of their first member; members ascending.
  class_of_.assign(n, 0);
  std::vector<std::uint32_t> class_of_signature;
  std::uint32_t classes = 0;
  std::vector<std::uint32_t> size;
  for (std::uint32_t v = 0; v < n; ++v) {
    std::uint32_t c;
    if (signature[v] == UINT32_MAX) {
      c = classes++;
    } else {
      if (signature[v] >= class_of_signature.size()) class_of_signature.resize(signature[v] + 1, UINT32_MAX);
      if (class_of_signature[signature[v]] == UINT32_MAX) class_of_signature[signature[v]] = classes++;
      c = class_of_signature[signature[v]];
    }
    class_of_[v] = c;
    if (c >= size.size()) size.resize(c + 1, 0);
    ++size[c];
  }
  class_begin_.assign(classes + 1, 0);
  for (std::uint32_t c = 0; c < classes; ++c) class_begin_[c + 1] = class_begin_[c] + size[c];
  class_members_.resize(n);
  {
    std::vector<std::uint32_t> fill(class_begin_.begin(), class_begin_.end() - 1);
    for (std::uint32_t v = 0; v < n; ++v) class_members_[fill[class_of_[v]]++] = v;
  }
  for (std::uint32_t v = 0; v < n; ++v) {
    if (size[class_of_[v]] > 1) class_of_[v] |= kTwins;
  }
}

// The quotient of the compressed search (router.h, "Cost"), over the twin classes.
void Router::build_compressed(const Cluster& cluster, Search search) {
  const std::uint32_t n = vertex_count_;
  if (n >= kDirect) return;  // ids must leave kDirect's bit free
  std::vector<std::uint8_t> kind(n);
  for (std::uint32_t v = 0; v < n; ++v) kind[v] = static_cast<std::uint8_t>(cluster.node(NodeId{v}).kind);
  std::vector<std::uint64_t> words;  // block entries
  const auto classes = static_cast<std::uint32_t>(class_begin_.size() - 1);
  const auto class_at = [&](std::uint32_t v) { return class_of_[v] & ~kTwins; };
  const auto size_of = [&](std::uint32_t c) { return class_begin_[c + 1] - class_begin_[c]; };

  // 2. Each class's links, from its first member, as entries (far class, its members, widest
  // rate): a member reaches every member of a twin class over the same rates. A row of
  // kBigRow links or more (where the search spends its time) is split by the far end's kind
  // into lists sorted by far class, interned as blocks shared by equal lists; a smaller row is
  // read from the adjacency arrays (kDirect | its first member).
  ListTable table;
  std::vector<std::uint32_t> interned_block;  // interned id -> block
  std::vector<Entry> entries;
  std::vector<Block> blocks;
  // kAuto's measure, on the big rows: entries of the blocks they add plus block references,
  // against the links of all their members.
  std::size_t big_work = 0, big_slots = 0;
  struct Item {
    std::uint32_t key, cls;
    double bw;
  };
  std::vector<Item> row;
  const auto add_block = [&](std::size_t first) {
    blocks.push_back(Block{static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(entries.size()), 0, 0, 0});
    return static_cast<std::uint32_t>(blocks.size() - 1);
  };
  const auto entry = [&](std::uint32_t cls, double bw) {
    entries.push_back(Entry{cls, size_of(cls), bw});
  };
  for (int dir = 0; dir < 2; ++dir) {
    const std::uint32_t* begin = dir == 0 ? out_begin_ : in_begin_;
    const std::uint32_t* node = dir == 0 ? out_node_ : in_node_;
    const std::vector<double>& bw = dir == 0 ? out_bw_ : in_bw_;
    std::vector<std::uint32_t>& list_begin = dir == 0 ? out_block_begin_ : in_block_begin_;
    std::vector<std::uint32_t>& lists = dir == 0 ? out_blocks_ : in_blocks_;
    list_begin.assign(classes + 1, 0);
    for (std::uint32_t c = 0; c < classes; ++c) {
      const std::uint32_t v = class_members_[class_begin_[c]];
      const std::uint32_t degree = begin[v + 1] - begin[v];
      if (degree < kBigRow) {
        if (degree > 0) lists.push_back(kDirect | v);
        list_begin[c + 1] = static_cast<std::uint32_t>(lists.size());
        continue;
      }
      big_slots += std::size_t{degree} * size_of(c);
      row.clear();
      for (std::uint32_t k = begin[v]; k < begin[v + 1]; ++k) row.push_back({kind[node[k]], class_at(node[k]), bw[k]});
      // One entry per far class: its widest rate, under the key of a widest link.
      std::sort(row.begin(), row.end(), [](const Item& a, const Item& b) {
        return a.cls != b.cls ? a.cls < b.cls : a.bw > b.bw;
      });
      row.erase(std::unique(row.begin(), row.end(), [](const Item& a, const Item& b) { return a.cls == b.cls; }),
                row.end());
      std::stable_sort(row.begin(), row.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
      for (std::size_t i = 0; i < row.size();) {
        std::size_t j = i;
        const std::size_t first = words.size();
        for (; j < row.size() && row[j].key == row[i].key; ++j) {
          words.push_back(row[j].cls);
          words.push_back(bits_of(row[j].bw));
        }
        const std::uint32_t id = table.intern(words, first, words.size());
        if (id == interned_block.size()) {
          const std::size_t first_entry = entries.size();
          for (std::size_t e = i; e < j; ++e) entry(row[e].cls, row[e].bw);
          interned_block.push_back(add_block(first_entry));
          big_work += j - i;
        } else {
          words.resize(first);
        }
        lists.push_back(interned_block[id]);
        ++big_work;
        i = j;
      }
      list_begin[c + 1] = static_cast<std::uint32_t>(lists.size());
    }
  }
  // kAuto: only where the quotient halves the work of the big rows.
  if (search == Search::kAuto && (big_slots == 0 || big_work * 2 > big_slots)) {
    out_block_begin_ = {};
    out_blocks_ = {};
    in_block_begin_ = {};
    in_blocks_ = {};
    return;
  }
  entries_ = std::move(entries);
  blocks_ = std::move(blocks);
  // 3. The slots of each row of kBigRow links or more, sorted by far end (SortedSlot): the walk
  // finds the links from a known vertex by a search instead of a pass over the row. A rate's
  // width is its rank among the distinct rates of both directions.
  std::set<double> distinct(out_bw_.begin(), out_bw_.end());
  distinct.insert(in_bw_.begin(), in_bw_.end());
  const std::vector<double> rates(distinct.begin(), distinct.end());
  for (int dir = 0; dir < 2; ++dir) {
    const std::uint32_t* begin = dir == 0 ? out_begin_ : in_begin_;
    const std::uint32_t* node = dir == 0 ? out_node_ : in_node_;
    const LinkId* link = dir == 0 ? out_link_ : in_link_;
    const std::vector<double>& bw = dir == 0 ? out_bw_ : in_bw_;
    std::vector<SortedSlot>& sorted = dir == 0 ? out_sorted_ : in_sorted_;
    std::vector<RowRun>& runs = dir == 0 ? out_runs_ : in_runs_;
    std::vector<SortedAt>& at = dir == 0 ? out_sorted_at_ : in_sorted_at_;
    at.assign(n + 1, SortedAt{});
    for (std::uint32_t v = 0; v < n; ++v) {
      const std::uint32_t size = begin[v + 1] - begin[v];
      at[v + 1].begin = at[v].begin + (size < kBigRow ? 0 : size);
    }
    sorted.resize(at[n].begin);
    runs.clear();
    for (std::uint32_t v = 0; v < n; ++v) {
      if (at[v + 1].begin != at[v].begin) {
        for (std::uint32_t k = begin[v]; k < begin[v + 1]; ++k) {
          const auto rank = std::lower_bound(rates.begin(), rates.end(), bw[k]) - rates.begin();
          const auto width = static_cast<std::uint32_t>(rank);
          sorted[at[v].begin + k - begin[v]] = {node[k], k - begin[v], link[k].value, width};
        }
        std::sort(sorted.begin() + at[v].begin, sorted.begin() + at[v + 1].begin,
                  [](const SortedSlot& a, const SortedSlot& b) {
                    return a.far != b.far ? a.far < b.far : a.place < b.place;
                  });
        row_runs(sorted.data() + at[v].begin, at[v + 1].begin - at[v].begin, kRowRuns, runs);
      }
      at[v + 1].runs = static_cast<std::uint32_t>(runs.size());
    }
    runs.shrink_to_fit();
    std::vector<std::uint32_t>& links = dir == 0 ? out_sorted_link_ : in_sorted_link_;
    links.resize(sorted.size());
    for (std::size_t k = 0; k < sorted.size(); ++k) links[k] = sorted[k].link;
  }
  compressed_ = true;
}

Router::~Router() = default;

std::size_t Router::cached_routes() const { return size_; }

void Router::check_node(NodeId id, const char* what) const {
  if (id.value >= vertex_count_) {
    throw InternalError(std::string("Router: unknown ") + what + " node " +
                        std::to_string(id.value));
  }
}

void Router::next_generation() {
  if (++generation_ == 0) {  // wrapped after 2^32 queries: forget every stale mark
    std::fill(marks_.begin(), marks_.end(), Mark{});
    for (Searched& found : searches_) {
      std::fill(found.marks.begin(), found.marks.end(), Mark{});
      found.src = found.dst = UINT32_MAX;
    }
    generation_ = 1;
    searched_src_ = UINT32_MAX;
  }
}

bool Router::takes_compressed(std::uint32_t src, std::uint32_t dst) const {
  return compressed_ && !(class_of_[src] & kTwins) && !(class_of_[dst] & kTwins);
}

int Router::distance(std::uint32_t src, std::uint32_t dst) {
  if (!takes_compressed(src, dst)) return search(src, dst);
  return searched(src, dst, false).distance;
}

void Router::set_server_twins_source(std::function<std::shared_ptr<const ServerTwins>()> source) {
  server_twins_source_ = std::move(source);
}

Router::Exchange Router::exchange_of(std::uint32_t src, std::uint32_t dst) {
  Exchange exchange;
  if (twin_servers_ == TwinServers::kOff) return exchange;
  if (!server_twins_) server_twins_ = server_twins_source_ ? server_twins_source_() : ServerSymmetry(cluster_).server_twins();
  // Read from the twins' compact table, not the nodes' (a cache miss per query on thousands of
  // servers' NICs).
  if (server_twins_->server_of[src] == ServerTwins::kNone || server_twins_->server_of[dst] == ServerTwins::kNone) {
    return exchange;
  }
  exchange.twins = server_twins_.get();
  exchange.pair = server_twins_->canonical(src, dst);
  return exchange;
}

// A canonical pair's search is kept until the least recently used of searches_[1, kSearches] is
// needed for another: the pairs of an all-to-all, taken in rank order, come back to each rail's
// canonical pair every few queries. A pair searched as itself (a route to be cached, walked
// once; a distance) takes searches_[0], so that it never evicts those, and where no route is
// left uncached only its marks are ever allocated.
Router::Searched& Router::searched(std::uint32_t src, std::uint32_t dst, bool canonical) {
  const std::span<Searched> ways = canonical ? std::span<Searched>(searches_).subspan(1) : std::span<Searched>(searches_).first(1);
  Searched* oldest = &ways[0];
  for (Searched& found : ways) {
    if (found.src == src && found.dst == dst) {
      found.used = ++search_clock_;
      return found;
    }
    if (found.used < oldest->used) oldest = &found;
  }
  if (oldest->marks.empty()) oldest->marks.resize(class_begin_.size() - 1);
  oldest->src = src;
  oldest->dst = dst;
  oldest->used = ++search_clock_;
  oldest->distance = search_compressed(src, dst, *oldest);
  oldest->branched = -1;
  oldest->plan_at.clear();
  oldest->plan_steps.clear();
  ++compressed_searches_;
  return *oldest;
}

int Router::search(std::uint32_t src, std::uint32_t dst) {
  if (marks_.empty()) marks_.resize(vertex_count_);  // the compressed search may be all there is
  next_generation();
  const std::uint32_t g = generation_;
  start_search(marks_, front_fwd_, front_bwd_, src, dst, g);
  meet_.clear();
  std::uint32_t depth_fwd = 0, depth_bwd = 0;

  // Invariant: before a round, the forward marks hold exact distances up to depth_fwd, the
  // backward ones up to depth_bwd, and the two sets are disjoint, so the distance D exceeds
  // depth_fwd + depth_bwd. The first round that discovers a vertex already marked by the other
  // side therefore finds D = depth_fwd + depth_bwd (after the increment), and every vertex it
  // so discovers lies at that depth on some shortest path: the middle layer.
  while (!front_fwd_.empty() && !front_bwd_.empty()) {
    next_.clear();
    if (front_fwd_.size() <= front_bwd_.size()) {
      for (std::uint32_t u : front_fwd_) {
        for (std::uint32_t k = out_begin_[u]; k < out_begin_[u + 1]; ++k) {
          if (links_down_ && out_bw_[k] == 0) continue;
          const std::uint32_t v = out_node_[k];
          Mark& m = marks_[v];
          if (m.gen_fwd == g) {
            if (m.dist_fwd == depth_fwd + 1) m.widest_fwd = std::max(m.widest_fwd, out_bw_[k]);
            continue;
          }
          m.gen_fwd = g;
          m.dist_fwd = depth_fwd + 1;
          m.widest_fwd = out_bw_[k];
          next_.push_back(v);
          if (m.gen_bwd == g) meet_.push_back(v);
        }
      }
      ++depth_fwd;
      front_fwd_.swap(next_);
    } else {
      for (std::uint32_t u : front_bwd_) {
        for (std::uint32_t k = in_begin_[u]; k < in_begin_[u + 1]; ++k) {
          if (links_down_ && in_bw_[k] == 0) continue;
          const std::uint32_t v = in_node_[k];
          Mark& m = marks_[v];
          if (m.gen_bwd == g) {
            if (m.dist_bwd == depth_bwd + 1) m.widest_bwd = std::max(m.widest_bwd, in_bw_[k]);
            continue;
          }
          m.gen_bwd = g;
          m.dist_bwd = depth_bwd + 1;
          m.widest_bwd = in_bw_[k];
          next_.push_back(v);
          if (m.gen_fwd == g) meet_.push_back(v);
        }
      }
      ++depth_bwd;
      front_bwd_.swap(next_);
    }
    if (!meet_.empty()) return static_cast<int>(depth_fwd + depth_bwd);
  }
  return -1;
}

// search() on the quotient: the same rounds (frontier sizes count members), the same marks by
// class, meet_ the meeting classes. src and dst are classes of one vertex (takes_compressed).
int Router::search_compressed(std::uint32_t src, std::uint32_t dst, Searched& into) {
  next_generation();
  const std::uint32_t g = generation_;
  into.gen = g;
  std::vector<Mark>& class_marks = into.marks;
  std::vector<std::uint32_t>& meet = into.meet;
  start_search(class_marks, front_fwd_, front_bwd_, class_of_[src], class_of_[dst], g);
  meet.clear();
  into.levels[0].assign(1, SmallLevel{1, {src}});
  into.levels[1].assign(1, SmallLevel{1, {dst}});
  std::uint32_t depth_fwd = 0, depth_bwd = 0;
  std::size_t size_fwd = 1, size_bwd = 1;  // vertices in each frontier
  while (!front_fwd_.empty() && !front_bwd_.empty()) {
    next_.clear();
    std::size_t size_next = 0;
    if (++round_ == 0) {  // wrapped: forget which blocks were scanned
      for (Block& b : blocks_) b.round = b.shared = 0;
      round_ = 1;
    }
    const bool forward = size_fwd <= size_bwd;
    const std::vector<std::uint32_t>& front = forward ? front_fwd_ : front_bwd_;
    const std::uint32_t* list_begin = forward ? out_block_begin_.data() : in_block_begin_.data();
    const std::uint32_t* lists = forward ? out_blocks_.data() : in_blocks_.data();
    const std::uint32_t depth = (forward ? depth_fwd : depth_bwd) + 1;
    // A link from frontier class u to class v of `members` vertices at rate bw, as search()
    // visits one; also records u as v's predecessor class (kSeveral if another one reaches v).
    const auto visit = [&](std::uint32_t u, std::uint32_t v, std::uint32_t members, double bw) {
      Mark& m = class_marks[v];
      std::uint32_t& gen = forward ? m.gen_fwd : m.gen_bwd;
      std::uint32_t& dist = forward ? m.dist_fwd : m.dist_bwd;
      double& widest = forward ? m.widest_fwd : m.widest_bwd;
      std::uint32_t& pred = forward ? m.pred_fwd : m.pred_bwd;
      if (gen == g) {
        if (dist == depth) {
          widest = std::max(widest, bw);
          if (pred != u) pred = kSeveral;
        }
        return;
      }
      gen = g;
      dist = depth;
      widest = bw;
      pred = u;
      next_.push_back(v);
      size_next += members;
      if ((forward ? m.gen_bwd : m.gen_fwd) == g) meet.push_back(v);
    };
    const std::uint32_t* row_begin = forward ? out_begin_ : in_begin_;
    const std::uint32_t* row_node = forward ? out_node_ : in_node_;
    const double* row_bw = forward ? out_bw_.data() : in_bw_.data();
    shared_.clear();
    for (std::uint32_t u : front) {
      for (std::uint32_t i = list_begin[u]; i < list_begin[u + 1]; ++i) {
        if (lists[i] & kDirect) {  // a small row: the first member's links
          const std::uint32_t r = lists[i] & ~kDirect;
          for (std::uint32_t k = row_begin[r]; k < row_begin[r + 1]; ++k) {
            const std::uint32_t c = class_of_[row_node[k]], v = c & ~kTwins;
            visit(u, v, c & kTwins ? class_begin_[v + 1] - class_begin_[v] : 1, row_bw[k]);
          }
          continue;
        }
        Block& b = blocks_[lists[i]];
        if (b.round == round_) {  // scanned for another class: its entries have several
          if (b.holder != u && b.shared != round_) {
            b.shared = round_;
            shared_.push_back(lists[i]);
          }
          continue;
        }
        b.round = round_;
        b.holder = u;
        for (std::uint32_t k = b.begin; k < b.end; ++k) visit(u, entries_[k].cls, entries_[k].members, entries_[k].bw);
      }
    }
    for (std::uint32_t id : shared_) {  // predecessors: a block held by several frontier classes
      for (std::uint32_t k = blocks_[id].begin; k < blocks_[id].end; ++k) {
        Mark& m = class_marks[entries_[k].cls];
        if ((forward ? m.gen_fwd : m.gen_bwd) == g && (forward ? m.dist_fwd : m.dist_bwd) == depth) {
          (forward ? m.pred_fwd : m.pred_bwd) = kSeveral;
        }
      }
    }
    SmallLevel& level = into.levels[forward ? 0 : 1].emplace_back();
    if (size_next <= level.vertex.size()) {
      for (std::uint32_t c : next_) {
        for (std::uint32_t i = class_begin_[c]; i < class_begin_[c + 1]; ++i) level.vertex[level.size++] = class_members_[i];
      }
    } else {
      level.size = SmallLevel::kLarge;
    }
    if (forward) {
      ++depth_fwd;
      front_fwd_.swap(next_);
      size_fwd = size_next;
    } else {
      ++depth_bwd;
      front_bwd_.swap(next_);
      size_bwd = size_next;
    }
    if (!meet.empty()) return static_cast<int>(depth_fwd + depth_bwd);
  }
  return -1;
}

// The middle's class (router.h): its index among the widest classes in widest_ (each class's
// first candidate) and class_weight_ (its candidates), by weighted rendezvous when there are
// several; *member_seed, the seed its member is chosen by, is salted then, so that the member's
// hash is independent of the hash that chose the class.
std::size_t Router::middle_class(std::uint64_t meet_seed, std::uint64_t* member_seed) const {
  if (widest_.size() == 1) {
    *member_seed = meet_seed;
    return 0;
  }
  *member_seed = hash_combine(meet_seed, kMemberSalt);
  return max_weighted_hash(widest_.data(), class_weight_.data(), widest_.size(), meet_seed);
}

// Builds path_ from the marks of the last (generic) search: a middle vertex chosen by hash,
// then the links back to src and on to dst, each chosen by hash among those that stay on a
// shortest path (a predecessor one hop closer to src, or a successor one hop closer to dst).
// walk_branched_: whether any choice was decided by the hash (ties of the widest candidates),
// i.e. whether another flow label could take another path.
void Router::walk_path(std::uint32_t src, std::uint32_t dst, std::uint64_t hash) {
  constexpr double kEndpoint = std::numeric_limits<double>::infinity();
  const std::uint64_t meet_seed = hash_combine(hash, kMeetSalt);
  // Middle vertex: among the meeting vertices, those whose adjacent path links are widest
  // (NVLink beats a PCIe detour of equal hop count), grouped by twin class.
  auto width = [&](std::uint32_t v) {
    const double in = v == src ? kEndpoint : marks_[v].widest_fwd;
    const double out = v == dst ? kEndpoint : marks_[v].widest_bwd;
    return std::min(in, out);
  };
  double middle_width = -1;
  for (std::uint32_t v : meet_) middle_width = std::max(middle_width, width(v));
  by_class_.clear();
  for (std::uint32_t v : meet_) {
    if (width(v) == middle_width) by_class_.emplace_back(class_of_[v] & ~kTwins, v);
  }
  std::sort(by_class_.begin(), by_class_.end());
  widest_.clear();        // each class's first candidate
  class_weight_.clear();  // and its number of candidates
  for (std::size_t i = 0; i < by_class_.size(); ++i) {
    if (i == 0 || by_class_[i].first != by_class_[i - 1].first) {
      widest_.push_back(by_class_[i].second);
      class_weight_.push_back(0);
    }
    ++class_weight_.back();
  }
  walk_branched_ = by_class_.size() > 1;
  std::uint64_t member_seed = 0;
  const std::size_t c = middle_class(meet_seed, &member_seed);
  // The chosen class's candidates: by_class_ holds the classes in the order of widest_.
  const std::size_t first = std::accumulate(class_weight_.begin(), class_weight_.begin() + static_cast<std::ptrdiff_t>(c), std::size_t{0});
  const std::size_t count = class_weight_[c];
  widest_.clear();
  for (std::size_t i = first; i < first + count; ++i) widest_.push_back(by_class_[i].second);
  const std::uint32_t middle = widest_[max_hash(widest_.data(), widest_.size(), member_seed)];
  walk_hops(src, dst, middle, hash, generation_, [this](std::uint32_t v) -> const Mark& { return marks_[v]; },
            nullptr, nullptr);
}

// walk_path's choice on the quotient, from the compressed search `found` of the canonical pair
// of (src, dst) under `exchange` (the identity where the pair is its own): a vertex v of the pair's
// search has the marks of exchange.to_canonical(v) in `found`, since the exchanges are
// automorphisms that map the search of one pair onto the other's (vertex by vertex, class by
// class), and the walk runs on the pair's own vertices, links and hashes: the same path as
// walking the pair's own search. A class's members have the class's width and all meet (src and
// dst are classes of their own), so the candidates are the members of the widest classes, each
// class weighing its size; a class inside a server is the image of the canonical one, its
// members in the same order (a server's devices by position are in NodeId order).
void Router::walk_compressed(std::uint32_t src, std::uint32_t dst, std::uint64_t hash, Searched& found,
                             const Exchange& exchange) {
  constexpr double kEndpoint = std::numeric_limits<double>::infinity();
  const std::uint64_t meet_seed = hash_combine(hash, kMeetSalt);
  const std::uint32_t cs = class_of_[found.src], cd = class_of_[found.dst];
  auto width = [&](std::uint32_t c) {
    const double in = c == cs ? kEndpoint : found.marks[c].widest_fwd;
    const double out = c == cd ? kEndpoint : found.marks[c].widest_bwd;
    return std::min(in, out);
  };
  double middle_width = -1;
  for (std::uint32_t c : found.meet) middle_width = std::max(middle_width, width(c));
  std::size_t ties = 0;
  widest_.clear();        // each widest class's first member, on the pair's side of the exchanges
  class_weight_.clear();  // and its size
  for (std::uint32_t c : found.meet) {
    if (width(c) == middle_width) {
      const std::uint32_t members = class_begin_[c + 1] - class_begin_[c];
      ties += members;
      widest_.push_back(exchange.from_canonical(class_members_[class_begin_[c]]));
      class_weight_.push_back(members);
    }
  }
  std::uint64_t member_seed = 0;
  const std::size_t w = middle_class(meet_seed, &member_seed);
  const std::uint32_t chosen = class_of_[widest_[w]] & ~kTwins;
  const std::uint32_t* members = class_members_.data() + class_begin_[chosen];
  const std::size_t member = max_hash(members, class_begin_[chosen + 1] - class_begin_[chosen], member_seed);
  const std::uint32_t middle = members[member];
  walk_branched_ = ties > 1;
  // The middle's plan (router.h, "Walks by middle"; Searched::plan_at): the candidates are
  // numbered as the widest classes list them, each class's members in order.
  std::size_t candidate = member;
  for (std::size_t k = 0; k < w; ++k) candidate += class_weight_[k];
  if (found.plan_at.size() != ties) {
    found.plan_at.assign(ties, kUnplanned);
    found.plan_steps.clear();
  }
  if (found.plan_at[candidate] < kUnplannable) {
    ++planned_walks_;
    path_.clear();
    for (const PlanStep* step = found.plan_steps.data() + found.plan_at[candidate]; step->vertex != kPlanEnd; ++step) {
      LinkId l{step->slot};
      if (step->vertex != kPlanLink) {
        const std::uint32_t v = exchange.from_canonical(step->vertex);
        l = step->slot & kInRow ? in_link_[in_begin_[v] + (step->slot & ~kInRow)] : out_link_[out_begin_[v] + step->slot];
      }
      path_.push_back(l);
      __builtin_prefetch(cluster_.link_timing_slot(l));
    }
    return;
  }
  hop_tied_ = false;
  walk_hops(src, dst, middle, hash, found.gen,
            [this, &found, &exchange](std::uint32_t v) -> const Mark& {
              return found.marks[class_of_[exchange.to_canonical(v)] & ~kTwins];
            },
            &found, &exchange);
  // The second walk through this middle (a search met once, as most are outside a large round,
  // pays no more than a flag): kept as its plan when no hop decided a tie. A link with an end in
  // a server is kept as its source's out-row slot, or its destination's in-row slot when only
  // the destination is in a server; a path with a link between two servers is not planned (an
  // exchange may move one end and not the other).
  std::uint32_t& state = found.plan_at[candidate];
  if (state == kUnplanned) {
    state = kWalkedOnce;
    return;
  }
  if (state != kWalkedOnce) return;
  state = kUnplannable;
  if (hop_tied_) return;
  const std::size_t at = found.plan_steps.size();
  for (LinkId l : path_) {
    const LinkInfo& info = cluster_.link(l);
    const std::uint32_t from = server_twins_ ? server_twins_->server_of[info.src.value] : ServerTwins::kNone;
    const std::uint32_t to = server_twins_ ? server_twins_->server_of[info.dst.value] : ServerTwins::kNone;
    if (from != ServerTwins::kNone && to != ServerTwins::kNone && from != to) {
      found.plan_steps.resize(at);
      return;
    }
    PlanStep step{kPlanLink, l.value};
    if (from != ServerTwins::kNone || to != ServerTwins::kNone) {
      const bool out = from != ServerTwins::kNone;
      const std::uint32_t v = out ? info.src.value : info.dst.value;
      const std::uint32_t* begin = out ? out_begin_ : in_begin_;
      const LinkId* links = out ? out_link_ : in_link_;
      std::uint32_t k = begin[v];
      while (links[k] != l) ++k;
      step = {exchange.to_canonical(v), (k - begin[v]) | (out ? 0u : kInRow)};
    }
    found.plan_steps.push_back(step);
  }
  found.plan_steps.push_back({kPlanEnd, 0});
  if (found.plan_steps.size() >= kUnplannable) throw InternalError("Router: a plan of 2^32 steps");
  state = static_cast<std::uint32_t>(at);
}

// The links from src to middle and from middle to dst: at each vertex, among the links that
// stay on a shortest path, the widest, then the largest hash (one pass over its links). With
// `levels` (a compressed search, of the canonical pair under `exchange`), when the vertices one
// hop back are known to be few (a small level, or the single vertex whose links reached the
// class), the pass compares ids (mapped back through the exchanges) instead of reading marks,
// and in a row of kBigRow links or more finds their slots by a search of the sorted row
// (for_links_from). Both directions take the same step (hop), with the in- or the out-links.
// g: the generation of the marks.
template <class MarkOf>
void Router::walk_hops(std::uint32_t src, std::uint32_t dst, std::uint32_t middle, std::uint64_t hash, std::uint32_t g,
                       const MarkOf& mark_of, const Searched* levels, const Exchange* exchange) {
  path_.clear();
  // The vertices one hop back from cur (side 0: toward src, at depth `want`; 1: toward dst)
  // when a compressed search knows them few: the level of that depth, or the one class that
  // reached cur's class (its predecessor), if it is a single vertex. Null: read the marks.
  SmallLevel one;
  const auto small = [&](int side, std::uint32_t cur, std::uint32_t want) -> const SmallLevel* {
    if (!levels) return nullptr;
    const SmallLevel& level = levels->levels[side][want];
    if (level.size != SmallLevel::kLarge) {
      one.size = level.size;
      for (std::uint32_t i = 0; i < level.size; ++i) one.vertex[i] = exchange->from_canonical(level.vertex[i]);
      return &one;
    }
    const Mark& m = mark_of(cur);
    const std::uint32_t pred = side == 0 ? m.pred_fwd : m.pred_bwd;
    if (pred == kSeveral || class_begin_[pred + 1] - class_begin_[pred] != 1) return nullptr;
    one.size = 1;
    one.vertex[0] = exchange->from_canonical(class_members_[class_begin_[pred]]);
    return &one;
  };

  // The link taken from cur one hop toward src (side 0: among the in-links from one hop closer
  // to src) or toward dst (side 1: the out-links to one hop closer to dst), and its far end.
  struct Step {
    LinkId link;
    std::uint32_t far;
  };
  const auto hop = [&](int side, std::uint32_t cur) {
    const bool back = side == 0;
    const std::uint32_t* begin = back ? in_begin_ : out_begin_;
    const std::uint32_t* node = back ? in_node_ : out_node_;
    const double* bw = back ? in_bw_.data() : out_bw_.data();
    const Mark& here = mark_of(cur);
    const std::uint32_t want = (back ? here.dist_fwd : here.dist_bwd) - 1;
    const SmallLevel* level = small(side, cur, want);
    Step best{};
    // A rate, or in a sorted row a rate's rank: either orders the slots as their rates do.
    double best_width = -1;
    std::uint64_t best_hash = 0;
    int ties = 0;
    const std::uint64_t salt = back ? hash_combine(hash, cur) : hash_combine(hash_combine(hash, cur), kOutSalt);
    const auto consider = [&](std::uint32_t place, double width, LinkId link, std::uint32_t far) {
      const std::uint64_t h = hash_combine(salt, place);
      ties = width > best_width ? 1 : ties + (width == best_width ? 1 : 0);
      if (width > best_width || (width == best_width && h > best_hash)) {
        best = {link, far};
        best_width = width;
        best_hash = h;
      }
    };
    // cur's row sorted by far end (side 0: its in-links), if it has one (kBigRow links or more).
    const std::vector<SortedAt>& sorted_at = back ? in_sorted_at_ : out_sorted_at_;
    if (level && !sorted_at.empty() && sorted_at[cur + 1].begin != sorted_at[cur].begin) {
      const SortedSlot* row = (back ? in_sorted_ : out_sorted_).data();
      const RowRun* runs = (back ? in_runs_ : out_runs_).data();
      const SortedAt at = sorted_at[cur], end = sorted_at[cur + 1];
      // One vertex one hop back, with one link to it: no choice, so its link alone is read, from
      // the 4-byte links beside the slots (*_sorted_link_), not its 16-byte slot.
      if (level->size == 1 && at.runs != end.runs) {
        const RunPlace place = run_place(runs + at.runs, runs + end.runs, level->vertex[0]);
        if (place.copies == 1) {
          return Step{LinkId{(back ? in_sorted_link_ : out_sorted_link_)[at.begin + place.slot]}, level->vertex[0]};
        }
      }
      for_links_from(*level, row + at.begin, row + end.begin, runs + at.runs, runs + end.runs,
                     [&](const SortedSlot& s) { consider(s.place, s.width, LinkId{s.link}, s.far); });
    } else {
      const LinkId* link = back ? in_link_ : out_link_;
      for (std::uint32_t k = begin[cur]; k < begin[cur + 1]; ++k) {
        if (level) {
          if (!level->holds(node[k])) continue;
        } else {
          const Mark& m = mark_of(node[k]);
          if ((back ? m.gen_fwd : m.gen_bwd) != g || (back ? m.dist_fwd : m.dist_bwd) != want) continue;
        }
        consider(k - begin[cur], bw[k], link[k], node[k]);
      }
    }
    // A vertex on a shortest path always has a link one hop closer to the end it walks to.
    if (ties == 0) throw InternalError("Router: no link one hop closer from node " + std::to_string(cur));
    walk_branched_ = walk_branched_ || ties > 1;
    hop_tied_ = hop_tied_ || ties > 1;
    return best;
  };
  // Each link taken has its timing's index (Cluster::link_timing) fetched into the caches while
  // the walk goes on: whoever routes the path reads the links' latency and class next, a cache
  // miss each on a large cluster, which the walk's remaining hashes then hide.
  const auto take = [&](LinkId l) {
    path_.push_back(l);
    __builtin_prefetch(cluster_.link_timing_slot(l));
  };
  for (std::uint32_t cur = middle; cur != src;) {
    const Step step = hop(0, cur);
    take(step.link);
    cur = step.far;
  }
  std::reverse(path_.begin(), path_.end());
  for (std::uint32_t cur = middle; cur != dst;) {
    const Step step = hop(1, cur);
    take(step.link);
    cur = step.far;
  }
}

const LinkId* Router::store(std::span<const LinkId> path) {
  if (path.size() > chunk_left_) {
    const std::size_t n = std::max(kChunkLinks, path.size());
    chunks_.push_back(std::make_unique<LinkId[]>(n));
    chunk_free_ = chunks_.back().get();
    chunk_left_ = n;
  }
  LinkId* out = chunk_free_;
  std::copy(path.begin(), path.end(), out);
  chunk_free_ += path.size();
  chunk_left_ -= path.size();
  return out;
}

// The slot holding the key, or the free slot where it belongs (linear probing).
Router::Slot* Router::find_slot(std::uint32_t src, std::uint32_t dst, std::uint64_t label,
                                std::uint64_t h) {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.src == kEmpty || (s.src == src && s.dst == dst && s.label == label)) return &s;
  }
}

void Router::grow_table() {
  std::vector<Slot> old(slots_.size() * 2, Slot{kEmpty, kEmpty, 0, nullptr, 0});
  old.swap(slots_);
  for (const Slot& s : old) {
    if (s.src != kEmpty) *find_slot(s.src, s.dst, s.label, key_hash(s.src, s.dst, s.label)) = s;
  }
}

void Router::prefetch(NodeId src, NodeId dst) const {
  if (slots_.empty()) return;
  __builtin_prefetch(&slots_[key_hash(src.value, dst.value, kAnyLabel) & (slots_.size() - 1)]);
}

std::span<const LinkId> Router::route(NodeId src, NodeId dst, std::uint64_t flow_label, bool* unique, Keep keep) {
  check_node(src, "source");
  check_node(dst, "destination");
  if (unique) *unique = true;
  if (src == dst) return {};
  if (flow_label == kAnyLabel) flow_label = kAnyLabel - 1;
  // A route not to be cached, of a pair whose canonical pair's walk branched (so its own does,
  // and no label-free route of it is cached): walked without the cache's lookups. A route of
  // its label cached before is this one (a route is a function of the pair and the label).
  Exchange exchange;
  Searched* found = nullptr;
  if (keep == Keep::kUnlessLabelled && takes_compressed(src.value, dst.value)) {
    exchange = exchange_of(src.value, dst.value);
    found = &searched(exchange.to_canonical(src.value), exchange.to_canonical(dst.value), true);
    if (found->distance < 0) no_path(src, dst);
    if (found->branched == 1) {
      walk_compressed(src.value, dst.value, key_hash(src.value, dst.value, flow_label), *found, exchange);
      if (unique) *unique = false;
      return {path_.data(), path_.size()};
    }
  }
  // Grown before the lookups, so the free slots they end on are where a new route goes.
  if ((size_ + 1) * 4 > slots_.size() * 3) grow_table();  // load factor at most 3/4
  // A pair with a single widest shortest path is cached once for every label.
  const std::uint64_t h_any = key_hash(src.value, dst.value, kAnyLabel);
  Slot* any = find_slot(src.value, dst.value, kAnyLabel, h_any);
  if (any->src != kEmpty) return {any->path, any->length};
  Slot* own = find_slot(src.value, dst.value, flow_label, key_hash(src.value, dst.value, flow_label));
  if (own->src != kEmpty) {
    if (unique) *unique = false;  // a label of its own: the pair's paths tie
    return {own->path, own->length};
  }
  if (takes_compressed(src.value, dst.value)) {
    // A route to be cached: the pair's own search (kept: another label of the pair, a member's
    // duplicated channel, walks on it again); one not to be cached: its canonical pair's, found
    // above (Router::searched). Whether the walk branched is the pair's, whatever the label (the
    // first choice decided by a hash is met by every label's walk), and its canonical pair's (the
    // exchanges map one walk's ties onto the other's).
    if (!found) {
      found = &searched(src.value, dst.value, false);
      if (found->distance < 0) no_path(src, dst);
    }
    walk_compressed(src.value, dst.value, key_hash(src.value, dst.value, flow_label), *found, exchange);
    found->branched = walk_branched_ ? 1 : 0;
  } else {
    // The marks of the last search still hold when it was for this pair (other labels of one
    // connection's pair: a member's duplicated channels), so the walk needs no new search.
    const bool again = searched_src_ == src.value && searched_dst_ == dst.value && searched_gen_ == generation_;
    if (!again && search(src.value, dst.value) < 0) no_path(src, dst);
    searched_src_ = src.value;
    searched_dst_ = dst.value;
    searched_gen_ = generation_;
    walk_path(src.value, dst.value, key_hash(src.value, dst.value, flow_label));
  }
  if (walk_branched_ && keep == Keep::kUnlessLabelled) {
    if (unique) *unique = false;
    return {path_.data(), path_.size()};  // scratch, until the next call
  }
  const LinkId* stored = store(path_);
  Slot* s = walk_branched_ ? own : any;
  *s = Slot{src.value, dst.value, walk_branched_ ? flow_label : kAnyLabel, stored,
            static_cast<std::uint32_t>(path_.size())};
  ++size_;
  if (unique) *unique = !walk_branched_;
  return {stored, path_.size()};
}

void Router::no_path(NodeId src, NodeId dst) const {
  throw TopologyError("", cluster_.node(src).origin,
                      "no path from " + cluster_.node(src).name + " to " + cluster_.node(dst).name);
}

bool Router::unique_route(NodeId src, NodeId dst) {
  bool unique = true;
  (void)route(src, dst, 0, &unique);
  return unique;
}

int Router::hops(NodeId src, NodeId dst) {
  check_node(src, "source");
  check_node(dst, "destination");
  if (src == dst) return 0;
  for (std::uint64_t label : {kAnyLabel, std::uint64_t{0}}) {
    const Slot* s = find_slot(src.value, dst.value, label, key_hash(src.value, dst.value, label));
    if (s->src != kEmpty) return static_cast<int>(s->length);
  }
  return distance(src.value, dst.value);
}

}  // namespace cs::topo
