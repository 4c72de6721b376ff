#include "topology/router.h"

#include <limits>

#include <algorithm>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/random.h"

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
};

namespace {

constexpr std::uint32_t kEmpty = UINT32_MAX;
constexpr std::size_t kChunkLinks = 16384;       // 64 KiB arena chunks
constexpr std::uint64_t kMeetSalt = 0x6d656574;  // "meet"
constexpr std::uint64_t kOutSalt = 1;

std::uint64_t key_hash(std::uint32_t src, std::uint32_t dst, std::uint64_t label) {
  return hash_combine(hash_combine(mix64(src), dst), label);
}

}  // namespace

Router::Router(const Cluster& cluster)
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
  marks_.resize(vertex_count_);
  slots_.assign(64, Slot{kEmpty, kEmpty, 0, nullptr, 0});
}

Router::~Router() = default;

std::size_t Router::cached_routes() const { return size_; }

void Router::check_node(NodeId id, const char* what) const {
  if (id.value >= vertex_count_) {
    throw InternalError(std::string("Router: unknown ") + what + " node " +
                        std::to_string(id.value));
  }
}

int Router::search(std::uint32_t src, std::uint32_t dst) {
  if (++generation_ == 0) {  // wrapped after 2^32 queries: forget every stale mark
    std::fill(marks_.begin(), marks_.end(), Mark{});
    generation_ = 1;
    searched_src_ = UINT32_MAX;
  }
  const std::uint32_t g = generation_;
  marks_[src].gen_fwd = g;
  marks_[src].dist_fwd = 0;
  marks_[dst].gen_bwd = g;
  marks_[dst].dist_bwd = 0;
  front_fwd_.assign(1, src);
  front_bwd_.assign(1, dst);
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

// Builds path_ from the marks of the last search: a middle vertex chosen by hash, then the
// links back to src and on to dst, each chosen by hash among those that stay on a shortest
// path (a predecessor one hop closer to src, or a successor one hop closer to dst).
void Router::walk_path(std::uint32_t src, std::uint32_t dst, std::uint64_t hash) {
  const std::uint32_t g = generation_;
  constexpr double kEndpoint = std::numeric_limits<double>::infinity();
  // Middle vertex: among the meeting vertices, those whose adjacent path links are widest
  // (NVLink beats a PCIe detour of equal hop count), then the one with the largest hash.
  auto width = [&](std::uint32_t v) {
    const double in = v == src ? kEndpoint : marks_[v].widest_fwd;
    const double out = v == dst ? kEndpoint : marks_[v].widest_bwd;
    return std::min(in, out);
  };
  // walk_branched_: whether any choice was decided by the hash (ties of the widest candidates),
  // i.e. whether another flow label could take another path.
  walk_branched_ = false;
  std::uint32_t middle = meet_[0];
  double middle_width = -1;
  std::uint64_t middle_hash = 0;
  int middle_ties = 0;
  for (std::uint32_t v : meet_) {
    const double w = width(v);
    const std::uint64_t h = hash_combine(hash_combine(hash, kMeetSalt), v);
    middle_ties = w > middle_width ? 1 : middle_ties + (w == middle_width ? 1 : 0);
    if (w > middle_width || (w == middle_width && h > middle_hash)) {
      middle = v;
      middle_width = w;
      middle_hash = h;
    }
  }
  walk_branched_ = middle_ties > 1;
  path_.clear();

  // Back to src: at each vertex, among the in-links from one hop closer to src, the widest,
  // then the largest hash (one pass).
  for (std::uint32_t cur = middle; cur != src;) {
    const std::uint32_t want = marks_[cur].dist_fwd - 1;
    std::uint32_t best = UINT32_MAX;
    double best_bw = -1;
    std::uint64_t best_hash = 0;
    int ties = 0;
    const std::uint64_t salt = hash_combine(hash, cur);
    for (std::uint32_t k = in_begin_[cur]; k < in_begin_[cur + 1]; ++k) {
      const Mark& m = marks_[in_node_[k]];
      if (m.gen_fwd != g || m.dist_fwd != want) continue;
      const std::uint64_t h = hash_combine(salt, k - in_begin_[cur]);
      ties = in_bw_[k] > best_bw ? 1 : ties + (in_bw_[k] == best_bw ? 1 : 0);
      if (in_bw_[k] > best_bw || (in_bw_[k] == best_bw && h > best_hash)) {
        best = k;
        best_bw = in_bw_[k];
        best_hash = h;
      }
    }
    walk_branched_ = walk_branched_ || ties > 1;
    path_.push_back(in_link_[best]);
    cur = in_node_[best];
  }
  std::reverse(path_.begin(), path_.end());

  // On to dst: among the out-links to one hop closer to dst, likewise.
  for (std::uint32_t cur = middle; cur != dst;) {
    const std::uint32_t want = marks_[cur].dist_bwd - 1;
    std::uint32_t best = UINT32_MAX;
    double best_bw = -1;
    std::uint64_t best_hash = 0;
    int ties = 0;
    const std::uint64_t salt = hash_combine(hash_combine(hash, cur), kOutSalt);
    for (std::uint32_t k = out_begin_[cur]; k < out_begin_[cur + 1]; ++k) {
      const Mark& m = marks_[out_node_[k]];
      if (m.gen_bwd != g || m.dist_bwd != want) continue;
      const std::uint64_t h = hash_combine(salt, k - out_begin_[cur]);
      ties = out_bw_[k] > best_bw ? 1 : ties + (out_bw_[k] == best_bw ? 1 : 0);
      if (out_bw_[k] > best_bw || (out_bw_[k] == best_bw && h > best_hash)) {
        best = k;
        best_bw = out_bw_[k];
        best_hash = h;
      }
    }
    walk_branched_ = walk_branched_ || ties > 1;
    path_.push_back(out_link_[best]);
    cur = out_node_[best];
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

std::span<const LinkId> Router::route(NodeId src, NodeId dst, std::uint64_t flow_label) {
  check_node(src, "source");
  check_node(dst, "destination");
  if (src == dst) return {};
  // A pair with a single widest shortest path is cached once for every label.
  const std::uint64_t h_any = key_hash(src.value, dst.value, kAnyLabel);
  if (Slot* s = find_slot(src.value, dst.value, kAnyLabel, h_any); s->src != kEmpty) return {s->path, s->length};
  if (flow_label == kAnyLabel) flow_label = kAnyLabel - 1;
  const std::uint64_t h = key_hash(src.value, dst.value, flow_label);
  if (Slot* s = find_slot(src.value, dst.value, flow_label, h); s->src != kEmpty) {
    return {s->path, s->length};
  }
  // The marks of the last search still hold when it was for this pair (other labels of one
  // connection's pair: a member's duplicated channels), so the walk needs no new search.
  const bool searched = searched_src_ == src.value && searched_dst_ == dst.value && searched_gen_ == generation_;
  if (!searched && search(src.value, dst.value) < 0) {
    throw TopologyError(
        "", cluster_.node(src).origin,
        "no path from " + cluster_.node(src).name + " to " + cluster_.node(dst).name);
  }
  searched_src_ = src.value;
  searched_dst_ = dst.value;
  searched_gen_ = generation_;
  walk_path(src.value, dst.value, h);
  const std::uint64_t key = walk_branched_ ? flow_label : kAnyLabel;
  const LinkId* stored = store(path_);
  if ((size_ + 1) * 4 > slots_.size() * 3) grow_table();  // load factor at most 3/4
  Slot* s = find_slot(src.value, dst.value, key, walk_branched_ ? h : h_any);
  *s = Slot{src.value, dst.value, key, stored, static_cast<std::uint32_t>(path_.size())};
  ++size_;
  return {stored, path_.size()};
}

int Router::hops(NodeId src, NodeId dst) {
  check_node(src, "source");
  check_node(dst, "destination");
  if (src == dst) return 0;
  for (std::uint64_t label : {kAnyLabel, std::uint64_t{0}}) {
    const Slot* s = find_slot(src.value, dst.value, label, key_hash(src.value, dst.value, label));
    if (s->src != kEmpty) return static_cast<int>(s->length);
  }
  return search(src.value, dst.value);
}

}  // namespace cs::topo
