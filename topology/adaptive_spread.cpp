#include "topology/adaptive_spread.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "core/errors.h"
#include "core/random.h"

namespace cs::topo {

namespace {

constexpr int kFwd = 0;  // the search from src, over out-links
constexpr int kBwd = 1;  // the search from dst, over in-links

}  // namespace

// Per vertex: the marks of the two searches and, on the DAG, its share of the flow.
struct AdaptiveSpreader::Mark {
  std::uint32_t gen[2] = {0, 0};   // stamps of the forward and backward search
  std::uint32_t dist[2] = {0, 0};  // hops from src / to dst, valid when stamped
  std::uint32_t dag = 0;           // stamp: the vertex lies on a shortest path
  std::uint32_t layer = 0;         // its hops from src, on the DAG
  std::uint64_t num = 0, den = 1;  // x_v = num / den, reduced, while the shares are exact
  double share = 0;                // x_v in floating point, for the fallback
};

AdaptiveSpreader::AdaptiveSpreader(const Cluster& cluster)
    : cluster_(cluster), out_(&cluster.out_adjacency()), in_(&cluster.in_adjacency()) {}

// The quotient (header): each vertex that is no twin, or the first of its class, keeps its out-row
// grouped by (far end's class, orbit of the link), the group's first link standing for it with
// the group's size; the other twins get empty rows (a search never reaches them: every link
// into a class leads to its first). The in-rows are the out-rows transposed, so both directions
// list the same entries with the same representative links and multiplicities.
std::shared_ptr<const TwinQuotient> twin_quotient(const Cluster& cluster, std::shared_ptr<const SwitchTwins> twins) {
  auto built = std::make_shared<TwinQuotient>();
  TwinQuotient& tq = *built;
  tq.twins = std::move(twins);
  const auto n = static_cast<std::uint32_t>(cluster.node_count());
  const std::vector<std::uint32_t>& rep = tq.twins->vertex_rep;
  if (rep.size() != n) throw InternalError("AdaptiveSpreader: twin classes of another cluster");
  tq.class_size.assign(n, 0);
  for (std::uint32_t v = 0; v < n; ++v) ++tq.class_size[rep[v]];
  for (std::uint32_t v = 0; v < n; ++v) tq.class_size[v] = tq.class_size[rep[v]];
  tq.multiplicity.assign(cluster.link_count(), 0);
  const Adjacency& out = cluster.out_adjacency();
  Adjacency& q = tq.out;
  q.begin.assign(1, 0);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> groups;  // (far class, orbit) -> entry
  for (std::uint32_t v = 0; v < n; ++v) {
    if (rep[v] == v) {
      groups.clear();
      for (std::uint32_t k = out.begin[v]; k < out.begin[v + 1]; ++k) {
        const std::uint32_t far = rep[out.node[k]], orbit = tq.twins->rep[out.link[k].value];
        const std::uint64_t key = std::uint64_t{far} << 32 | orbit;
        const auto it = std::find_if(groups.begin(), groups.end(), [key](const auto& g) { return g.first == key; });
        if (it != groups.end()) {
          ++tq.multiplicity[q.link[it->second].value];
          continue;
        }
        groups.emplace_back(key, static_cast<std::uint32_t>(q.node.size()));
        q.node.push_back(far);
        q.link.push_back(out.link[k]);
        tq.multiplicity[out.link[k].value] = 1;
      }
    }
    q.begin.push_back(static_cast<std::uint32_t>(q.node.size()));
  }
  // Transposed: in-row of u lists (v, link) for every entry v -> u, v ascending.
  Adjacency& t = tq.in;
  t.begin.assign(n + 1, 0);
  for (const std::uint32_t u : q.node) ++t.begin[u + 1];
  for (std::uint32_t u = 0; u < n; ++u) t.begin[u + 1] += t.begin[u];
  t.node.resize(q.node.size());
  t.link.resize(q.link.size());
  std::vector<std::uint32_t> at(t.begin.begin(), t.begin.end() - 1);
  for (std::uint32_t v = 0; v < n; ++v) {
    for (std::uint32_t k = q.begin[v]; k < q.begin[v + 1]; ++k) {
      const std::uint32_t slot = at[q.node[k]]++;
      t.node[slot] = v;
      t.link[slot] = q.link[k];
    }
  }
  return built;
}

AdaptiveSpreader::AdaptiveSpreader(const Cluster& cluster, std::shared_ptr<const TwinQuotient> quotient)
    : AdaptiveSpreader(cluster) {
  if (quotient->class_size.size() != cluster.node_count()) {
    throw InternalError("AdaptiveSpreader: a twin quotient of another cluster");
  }
  quotient_ = std::move(quotient);
}

AdaptiveSpreader::AdaptiveSpreader(const Cluster& cluster, std::shared_ptr<const SwitchTwins> twins)
    : AdaptiveSpreader(cluster, twin_quotient(cluster, std::move(twins))) {}

AdaptiveSpreader::~AdaptiveSpreader() = default;

// Bidirectional breadth-first search, one full level of the smaller frontier per round. As in
// the router's search (router.cpp): before a round the two marked sets are exact up to their
// depths and disjoint, so the first round that reaches a vertex marked by the other side finds
// the distance D = depth_fwd + depth_bwd, and the vertices it so reaches are the shortest paths'
// vertices at hop depth_fwd from src (left in meet_). Returns D, or -1 when dst is unreachable.
int AdaptiveSpreader::search(std::uint32_t src, std::uint32_t dst) {
  if (marks_.empty()) marks_.resize(cluster_.node_count());  // a spreader that never searches allocates none
  if (++generation_ == 0) {  // wrapped: forget every stale mark
    std::fill(marks_.begin(), marks_.end(), Mark{});
    generation_ = 1;
  }
  const std::uint32_t g = generation_;
  const Adjacency* adjacency[2] = {out_, in_};
  const std::uint32_t ends[2] = {src, dst};
  std::uint32_t depth[2] = {0, 0};
  for (int s : {kFwd, kBwd}) {
    marks_[ends[s]].gen[s] = g;
    marks_[ends[s]].dist[s] = 0;
    front_[s].assign(1, ends[s]);
    levels_[s].resize(1);
    levels_[s][0].assign(1, ends[s]);
  }
  meet_.clear();
  while (!front_[kFwd].empty() && !front_[kBwd].empty()) {
    const int s = front_[kFwd].size() <= front_[kBwd].size() ? kFwd : kBwd;
    const Adjacency& a = *adjacency[s];
    next_.clear();
    for (std::uint32_t u : front_[s]) {
      for (std::uint32_t k = a.begin[u]; k < a.begin[u + 1]; ++k) {
        Mark& m = marks_[a.node[k]];
        if (m.gen[s] == g) continue;
        m.gen[s] = g;
        m.dist[s] = depth[s] + 1;
        next_.push_back(a.node[k]);
        if (m.gen[1 - s] == g) meet_.push_back(a.node[k]);
      }
    }
    ++depth[s];
    if (levels_[s].size() <= depth[s]) levels_[s].resize(depth[s] + 1);
    levels_[s][depth[s]].assign(next_.begin(), next_.end());
    front_[s].swap(next_);
    if (!meet_.empty()) return static_cast<int>(depth[kFwd] + depth[kBwd]);
  }
  return -1;
}

WeightedRoute AdaptiveSpreader::compute(std::uint32_t src, int distance) {
  const std::uint32_t g = generation_;
  const auto d = static_cast<std::uint32_t>(distance);
  const Adjacency& out = *out_;
  const Adjacency& in = *in_;
  // On the quotient, a link's weight counts its group's links and its share goes to its far end's
  // class (the header); on the cluster, 1 and the far end.
  const auto multiplicity = [&](LinkId l) -> std::uint64_t { return rep_ ? quotient_->multiplicity[l.value] : 1; };
  const auto far_of = [&](LinkId l) {
    const std::uint32_t v = cluster_.link(l).dst.value;
    return rep_ ? rep_[v] : v;
  };
  if (layers_.size() < d + 1) layers_.resize(d + 1);
  for (std::uint32_t i = 0; i <= d; ++i) layers_[i].clear();

  // 1. The DAG's vertices by layer (hops from src): the middle layer, then back toward src
  //    (vertices one hop closer to src with a link into the layer) and on toward dst (one hop
  //    closer to dst with a link from it). Each step scans whichever side has fewer links: the
  //    layer's in-links (out-links), or the out-links (in-links) of the search's level the new
  //    layer lies in (a spine's hundreds of leaves against one leaf's uplinks). Each layer is
  //    then sorted by vertex id, so the result depends on the graph alone, not on the scan.
  const auto enter = [&](std::uint32_t v, std::uint32_t layer) {
    Mark& m = marks_[v];
    m.dag = g;
    m.layer = layer;
    m.num = 0;
    m.den = 1;
    m.share = 0;
    layers_[layer].push_back(v);
  };
  const auto degree = [](const Adjacency& a, const std::vector<std::uint32_t>& vs) {
    std::size_t n = 0;
    for (std::uint32_t v : vs) n += a.begin[v + 1] - a.begin[v];
    return n;
  };
  const auto on_layer = [&](std::uint32_t v, std::uint32_t layer) {
    const Mark& m = marks_[v];
    return m.dag == g && m.layer == layer;
  };
  // Layer `next` (one hop from layer i toward an end) from its candidates, the vertices `dist`
  // hops from that end in the search of `side`: scanning layer i's links `along` (in-links
  // toward src, out-links toward dst) or the candidates' links `against`, whichever are fewer.
  const auto grow = [&](std::uint32_t i, std::uint32_t next, const Adjacency& along, const Adjacency& against, int side,
                        std::uint32_t dist) {
    const std::vector<std::uint32_t>& candidates = levels_[side][dist];
    if (degree(along, layers_[i]) <= degree(against, candidates)) {
      for (std::uint32_t v : layers_[i]) {
        for (std::uint32_t k = along.begin[v]; k < along.begin[v + 1]; ++k) {
          const Mark& m = marks_[along.node[k]];
          if (m.gen[side] == g && m.dist[side] == dist && m.dag != g) enter(along.node[k], next);
        }
      }
    } else {
      for (std::uint32_t u : candidates) {
        for (std::uint32_t k = against.begin[u]; k < against.begin[u + 1]; ++k) {
          if (on_layer(against.node[k], i) && marks_[u].dag != g) {
            enter(u, next);
            break;
          }
        }
      }
    }
    std::sort(layers_[next].begin(), layers_[next].end());
  };
  const std::uint32_t middle = marks_[meet_.front()].dist[kFwd];
  for (std::uint32_t v : meet_) enter(v, middle);
  std::sort(layers_[middle].begin(), layers_[middle].end());
  for (std::uint32_t i = middle; i > 0; --i) grow(i, i - 1, in, out, kFwd, i - 1);
  for (std::uint32_t i = middle; i < d; ++i) grow(i, i + 1, out, in, kBwd, d - i - 1);

  // 2. Shares, layer by layer: x_v split evenly over v's widest DAG out-links, v in id order and
  //    its links in id order. Exact rationals while every denominator (and their lcm K) stays
  //    within kMaxSpreadScale; doubles beside them for the fallback. Bounds: den <= 2^20 and
  //    n < 2^32 keep den x n, and num, den <= 2^20 keep every lcm and sum below 2^42, so nothing
  //    overflows 64 bits. A layer's DAG links come from its out-links or the next layer's
  //    in-links, whichever are fewer (as in 1).
  // A DAG link's share of the flow (num / den exactly, share in floating point); on the
  // quotient, `count` links of its orbit with that share each, which it stands for.
  struct Edge {
    LinkId link;
    std::uint64_t num, den;
    double share;
    std::uint64_t count = 1;
  };
  std::vector<Edge> edges;
  bool exact = true;
  std::uint64_t scale = 1;
  marks_[src].num = 1;
  marks_[src].share = 1;
  for (std::uint32_t i = 0; i < d; ++i) {
    dag_links_.clear();  // (v, link) of the DAG from layer i to layer i + 1
    if (degree(out, layers_[i]) <= degree(in, layers_[i + 1])) {
      for (std::uint32_t v : layers_[i]) {
        for (std::uint32_t k = out.begin[v]; k < out.begin[v + 1]; ++k) {
          if (on_layer(out.node[k], i + 1)) dag_links_.emplace_back(v, out.link[k].value);
        }
      }
    } else {
      for (std::uint32_t u : layers_[i + 1]) {
        for (std::uint32_t k = in.begin[u]; k < in.begin[u + 1]; ++k) {
          if (on_layer(in.node[k], i)) dag_links_.emplace_back(in.node[k], in.link[k].value);
        }
      }
    }
    std::sort(dag_links_.begin(), dag_links_.end());
    for (std::size_t first = 0, last = 0; first < dag_links_.size(); first = last) {
      const std::uint32_t v = dag_links_[first].first;
      for (last = first; last < dag_links_.size() && dag_links_[last].first == v; ++last) {}
      const Mark& mv = marks_[v];
      if (mv.share == 0) continue;  // reached only through links narrower than their siblings
      Bandwidth widest{0};
      std::uint64_t n = 0;  // v's widest DAG out-links (on the quotient, its class member's)
      for (std::size_t j = first; j < last; ++j) {
        const LinkId l{dag_links_[j].second};
        const Bandwidth bw = cluster_.link(l).bandwidth;
        const std::uint64_t m = multiplicity(l);
        n = bw > widest ? m : n + (bw == widest ? m : 0);
        widest = std::max(widest, bw);
      }
      // Each of v's widest DAG links carries x_v / n; on the quotient x_v is its class's total,
      // shared by its `size` twins, and a group's link stands for the size x m links of its
      // orbit (each twin's copies of v's m links: the exchanges map the orbit onto itself and
      // keep the class of each end), each with that share: what the full spread gives each of
      // them, over the same common denominator K.
      const std::uint64_t size = rep_ ? quotient_->class_size[v] : 1;
      for (std::size_t j = first; j < last; ++j) {
        const LinkId link{dag_links_[j].second};
        if (cluster_.link(link).bandwidth != widest) continue;
        Edge e{link, 0, 1, mv.share / static_cast<double>(size * n), size * multiplicity(link)};
        if (exact) {
          const std::uint64_t r = std::gcd(mv.num, mv.den * size * n);
          e.num = mv.num / r;
          e.den = mv.den * size * n / r;
          scale = std::lcm(scale, e.den);
          exact = scale <= kMaxSpreadScale;
        }
        edges.push_back(e);
        Mark& mu = marks_[far_of(link)];
        mu.share += e.share * static_cast<double>(e.count);
        if (!exact) continue;
        const std::uint64_t den = std::lcm(mu.den, e.den);
        exact = den <= kMaxSpreadScale;
        mu.num = mu.num * (den / mu.den) + e.num * e.count * (den / e.den);
        mu.den = den;
        const std::uint64_t r = std::gcd(mu.num, mu.den);
        mu.num /= r;
        mu.den /= r;
      }
    }
  }

  // 3. Weights over K.
  WeightedRoute route;
  route.exact = exact;
  route.scale = exact ? static_cast<std::uint32_t>(scale) : kMaxSpreadScale;
  route.links.reserve(edges.size());
  for (const Edge& e : edges) {
    const auto up = static_cast<std::uint64_t>(std::ceil(e.share * kMaxSpreadScale));
    const std::uint64_t w = e.count * (exact ? e.num * (scale / e.den) : std::max<std::uint64_t>(1, up));
    route.links.emplace_back(e.link, static_cast<std::uint32_t>(w));
  }
  std::sort(route.links.begin(), route.links.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return route;
}

void AdaptiveSpreader::check_nodes(NodeId src, NodeId dst) const {
  for (NodeId id : {src, dst}) {
    if (id.value >= cluster_.node_count()) {
      throw InternalError("AdaptiveSpreader: unknown node " + std::to_string(id.value));
    }
  }
}

const WeightedRoute& AdaptiveSpreader::spread(NodeId src, NodeId dst) {
  check_nodes(src, dst);
  const std::uint64_t key = std::uint64_t{src.value} << 32 | dst.value;
  if (auto it = derived_cache_.routes.find(key); it != derived_cache_.routes.end()) return it->second;
  if (auto it = searched_.routes.find(key); it != searched_.routes.end()) return it->second;
  WeightedRoute route;
  if (src != dst && derive_ && cluster_.node(src).server >= 0 && cluster_.node(dst).server >= 0) {
    if (const std::optional<LeafPair> leaves = leaf_pair(src, dst)) {
      leaf_route(*leaves, route);
      ++derived_;
      return derived_cache_.put(key, std::move(route));
    }
    if (!servers_) servers_ = server_twins_source_ ? server_twins_source_() : ServerSymmetry(cluster_).server_twins();
    // The canonical pair (the header, ServerTwins::canonical).
    const ServerTwins& t = *servers_;
    const auto [a1, b1, a2, b2, s1, t2] = t.canonical(src.value, dst.value);
    if (s1 != src.value || t2 != dst.value) {
      const WeightedRoute& base = spread(NodeId{s1}, NodeId{t2});
      if (base.exact) {
        route.scale = base.scale;
        route.links.reserve(base.links.size());
        // base lists its links in id order; the exchanges move only those touching the four
        // servers: the others keep their order, and the moved ones, sorted, merge into them.
        moved_.clear();
        for (const auto& [l, w] : base.links) {
          const LinkId back = a2 == b2 ? l : t.image(cluster_, l, a2, b2);
          const LinkId image = a1 == b1 ? back : t.image(cluster_, back, a1, b1);
          if (image == l) route.links.emplace_back(l, w);
          else moved_.emplace_back(image, w);
        }
        merge_moved(route);
        ++derived_;
        return derived_cache_.put(key, std::move(route));
      }
    }
  }
  if (src != dst && derive_ && cluster_.node(src).server < 0 && cluster_.node(dst).server < 0 &&
      derive_from_like_switches(src.value, dst.value, route)) {
    ++derived_;
    return derived_cache_.put(key, std::move(route));
  }
  if (src != dst) {
    // The twin quotient when both ends are classes of one (the header), else the cluster.
    const bool quotient =
        quotient_ && quotient_->class_size[src.value] == 1 && quotient_->class_size[dst.value] == 1;
    out_ = quotient ? &quotient_->out : &cluster_.out_adjacency();
    in_ = quotient ? &quotient_->in : &cluster_.in_adjacency();
    rep_ = quotient ? quotient_->twins->vertex_rep.data() : nullptr;
    const int distance = search(src.value, dst.value);
    if (distance < 0) {
      throw TopologyError(
          "", cluster_.node(src).origin,
          "no path from " + cluster_.node(src).name + " to " + cluster_.node(dst).name);
    }
    route = compute(src.value, distance);
  }
  return searched_.put(key, std::move(route));
}

void AdaptiveSpreader::merge_moved(WeightedRoute& route) {
  const auto by_id = [](const auto& x, const auto& y) { return x.first < y.first; };
  std::sort(moved_.begin(), moved_.end(), by_id);
  std::size_t kept = route.links.size(), k = kept + moved_.size(), m = moved_.size();
  route.links.resize(k);
  while (m > 0) {  // merged from the back, in place
    if (kept > 0 && by_id(moved_[m - 1], route.links[kept - 1])) route.links[--k] = route.links[--kept];
    else route.links[--k] = moved_[--m];
  }
}

// Switches of like neighbours (the header): per switch, its row of neighbours outside its own
// servers (those it is the only way into and out of), each with exactly one link each way, keyed
// by (neighbour, the two links' bandwidths); switches with equal keys form a class.
std::shared_ptr<const LikeSwitches> like_switches(const Cluster& cluster) {
  auto built = std::make_shared<LikeSwitches>();
  built->leaves = server_leaves(cluster);
  const ServerLeaves& leaves = built->leaves;
  constexpr std::uint32_t kNone = LikeSwitches::kNone;
  const auto n = static_cast<std::uint32_t>(cluster.node_count());
  const Adjacency& out = cluster.out_adjacency();
  const Adjacency& in = cluster.in_adjacency();
  using Neighbour = LikeSwitches::Neighbour;
  std::vector<std::vector<Neighbour>> rows(n);
  std::vector<std::uint32_t> first(n, kNone), members(n, 0);
  std::map<std::vector<std::uint64_t>, std::uint32_t> classes;
  std::vector<std::uint64_t> key;
  for (std::uint32_t v = 0; v < n; ++v) {
    if (cluster.node(NodeId{v}).server >= 0) continue;
    const auto in_server = [&](std::uint32_t u) { return cluster.node(NodeId{u}).server >= 0; };
    // A neighbour in a server: fine when v is that server's only way in and out.
    const auto own_server = [&](std::uint32_t u) {
      const auto su = static_cast<std::size_t>(cluster.node(NodeId{u}).server);
      return leaves.out[su] == v && leaves.in[su] == v;
    };
    std::vector<Neighbour>& row = rows[v];
    bool ok = true;
    for (std::uint32_t k = out.begin[v]; k < out.begin[v + 1] && ok; ++k) {
      if (in_server(out.node[k])) ok = own_server(out.node[k]);
      else row.push_back({out.node[k], out.link[k], LinkId{}});
    }
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.node < y.node; });
    for (std::size_t i = 1; i < row.size() && ok; ++i) ok = row[i].node != row[i - 1].node;  // parallel cables
    for (std::uint32_t k = in.begin[v]; k < in.begin[v + 1] && ok; ++k) {
      if (in_server(in.node[k])) {
        ok = own_server(in.node[k]);
        continue;
      }
      const auto it = std::lower_bound(row.begin(), row.end(), in.node[k], [](const auto& e, std::uint32_t u) { return e.node < u; });
      ok = it != row.end() && it->node == in.node[k] && !it->in.valid();
      if (ok) it->in = in.link[k];
    }
    for (const Neighbour& e : row) ok = ok && e.in.valid();
    if (!ok || row.empty()) {
      row.clear();
      continue;
    }
    key.clear();
    for (const Neighbour& e : row) {
      key.push_back(e.node);
      key.push_back(std::bit_cast<std::uint64_t>(cluster.link(e.out).bandwidth.value()));
      key.push_back(std::bit_cast<std::uint64_t>(cluster.link(e.in).bandwidth.value()));
    }
    first[v] = classes.try_emplace(key, v).first->second;
    ++members[first[v]];
  }
  LikeSwitches& like = *built;
  like.first.assign(n, kNone);
  like.second.assign(n, kNone);
  like.begin.assign(std::size_t{n} + 1, 0);
  for (std::uint32_t v = 0; v < n; ++v) {
    if (first[v] != kNone && members[first[v]] > 1) {
      like.first[v] = first[v];
      if (v != first[v] && like.second[first[v]] == kNone) like.second[first[v]] = v;
      like.rows.insert(like.rows.end(), rows[v].begin(), rows[v].end());
    }
    like.begin[v + 1] = static_cast<std::uint32_t>(like.rows.size());
  }
  return built;
}

const LikeSwitches& AdaptiveSpreader::like() {
  if (!like_) like_ = like_switches_source_ ? like_switches_source_() : like_switches(cluster_);
  return *like_;
}

bool AdaptiveSpreader::derive_from_like_switches(std::uint32_t src, std::uint32_t dst, WeightedRoute& route) {
  const LikeSwitches& like = this->like();
  std::uint32_t s1 = like.first[src] == LikeSwitches::kNone ? src : like.first[src];
  std::uint32_t t1 = like.first[dst] == LikeSwitches::kNone ? dst : like.first[dst];
  if (s1 == t1 && like.first[src] != LikeSwitches::kNone) {  // one class: its first two, in the order that fits
    const std::uint32_t second = like.second[s1];
    if (dst == s1) s1 = second;
    else t1 = second;
  }
  // Replacing s1 by src needs dst outside {s1, src}; t1 by dst, s1 outside {t1, dst} (the header).
  const bool quotient = on_quotient(src, dst);
  if ((s1 == src && t1 == dst) || s1 == dst || s1 == t1 || quotient != on_quotient(s1, t1)) return false;
  const WeightedRoute& base = spread(NodeId{s1}, NodeId{t1});
  if (!base.exact) return false;
  // v's link to (from) neighbour u: v's row, by neighbour id.
  const auto row_link = [&](std::uint32_t v, std::uint32_t u, bool to) {
    const LikeSwitches::Neighbour* b = like.rows.data() + like.begin[v];
    const LikeSwitches::Neighbour* e = like.rows.data() + like.begin[v + 1];
    const auto* it = std::lower_bound(b, e, u, [](const LikeSwitches::Neighbour& x, std::uint32_t y) { return x.node < y; });
    if (it == e || it->node != u) throw InternalError("AdaptiveSpreader: a like switch without its class's neighbour");
    return to ? it->out : it->in;
  };
  route.scale = base.scale;
  route.exact = true;
  route.links.clear();
  route.links.reserve(base.links.size());
  moved_.clear();
  for (const auto& [l, w] : base.links) {
    const LinkInfo& link = cluster_.link(l);
    LinkId image = l;
    std::uint32_t from = link.src.value, to = link.dst.value;
    if (to == t1 && t1 != dst) {  // into t1: into dst from the same neighbour
      if (from == s1) from = src;  // s1 -> t1 directly: src -> dst
      image = row_link(dst, from, false);
    } else if (from == s1 && s1 != src) {  // out of s1: out of src to the same neighbour
      image = row_link(src, to, true);
      // On the quotient a link to a class of twins stands for its group, by the first of them
      // in the row's order; src's first may lead to another twin than s1's: then its own search.
      if (quotient && quotient_->class_size[to] > 1) {
        const Adjacency& q = quotient_->out;
        if (std::find(q.link.begin() + q.begin[src], q.link.begin() + q.begin[src + 1], image) == q.link.begin() + q.begin[src + 1]) {
          return false;
        }
      }
    }
    if (image == l) route.links.emplace_back(l, w);
    else moved_.emplace_back(image, w);
  }
  merge_moved(route);
  return true;
}

ServerLeaves server_leaves(const Cluster& cluster) {
  std::int32_t servers = 0;
  for (std::uint32_t v = 0; v < cluster.node_count(); ++v) servers = std::max(servers, cluster.node(NodeId{v}).server + 1);
  constexpr std::uint32_t kNoLeaf = ServerLeaves::kNone;
  constexpr std::uint32_t kUnset = kNoLeaf - 1;
  ServerLeaves leaves;
  leaves.out.assign(static_cast<std::size_t>(servers), kUnset);
  leaves.in.assign(static_cast<std::size_t>(servers), kUnset);
  const auto note = [](std::uint32_t& leaf, std::uint32_t v) { leaf = leaf == kUnset || leaf == v ? v : kNoLeaf; };
  for (std::uint32_t l = 0; l < cluster.link_count(); ++l) {
    const LinkInfo& link = cluster.link(LinkId{l});
    const std::int32_t from = cluster.node(link.src).server, to = cluster.node(link.dst).server;
    if (from == to) continue;
    // A link between two servers is no leaf's: neither server qualifies.
    if (from >= 0) note(leaves.out[static_cast<std::size_t>(from)], to >= 0 ? kNoLeaf : link.dst.value);
    if (to >= 0) note(leaves.in[static_cast<std::size_t>(to)], from >= 0 ? kNoLeaf : link.src.value);
  }
  for (auto* v : {&leaves.out, &leaves.in}) std::replace(v->begin(), v->end(), kUnset, kNoLeaf);
  return leaves;
}

std::optional<AdaptiveSpreader::LeafPair> AdaptiveSpreader::leaf_pair(NodeId src, NodeId dst) {
  check_nodes(src, dst);
  if (!derive_ || src == dst) return std::nullopt;
  const auto a = cluster_.node(src).server, b = cluster_.node(dst).server;
  if (a < 0 || b < 0 || a == b) return std::nullopt;
  const ServerLeaves& leaves = like().leaves;
  const std::uint32_t l1 = leaves.out[static_cast<std::size_t>(a)], l2 = leaves.in[static_cast<std::size_t>(b)];
  if (l1 == kNoLeaf || l2 == kNoLeaf || on_quotient(src.value, dst.value) != on_quotient(l1, l2)) return std::nullopt;
  // The one link of each end (a second, parallel one: its own search, whose split over the
  // parallel links, and on the quotient their grouping, this does not repeat).
  const auto only_link = [](const Adjacency& adjacency, std::uint32_t v, std::uint32_t far) {
    LinkId found{};
    for (std::uint32_t k = adjacency.begin[v]; k < adjacency.begin[v + 1]; ++k) {
      if (adjacency.node[k] != far) continue;
      if (found.valid()) return LinkId{};
      found = adjacency.link[k];
    }
    return found;
  };
  const LinkId first = only_link(cluster_.out_adjacency(), src.value, l1);
  const LinkId last = only_link(cluster_.in_adjacency(), dst.value, l2);
  if (!first.valid() || !last.valid()) return std::nullopt;
  if (!spread(NodeId{l1}, NodeId{l2}).exact) return std::nullopt;
  return LeafPair{NodeId{l1}, NodeId{l2}, first, last};
}

void AdaptiveSpreader::leaf_route(const LeafPair& pair, WeightedRoute& route) {
  const WeightedRoute& middle = spread(pair.from, pair.to);
  // The middle lists its links in id order (compute()); the two end links go in at theirs.
  route.scale = middle.scale;
  route.exact = true;
  route.links.reserve(middle.links.size() + 2);
  route.links = middle.links;
  for (const LinkId end : {pair.first, pair.last}) {
    const auto at = std::lower_bound(route.links.begin(), route.links.end(), end,
                                     [](const auto& entry, LinkId l) { return entry.first < l; });
    route.links.emplace(at, end, middle.scale);
  }
}

void AdaptiveSpreader::trim(std::size_t max_links) {
  if (cached_links() <= max_links) return;
  derived_cache_.clear();
  if (searched_.links > max_links) searched_.clear();
}

void AdaptiveSpreader::clear() {
  searched_.clear();
  derived_cache_.clear();
}

double weighted_latency_ps(const Cluster& cluster, const WeightedRoute& route) {
  double sum = 0;
  for (const auto& [l, w] : route.links) sum += static_cast<double>(w) * static_cast<double>(cluster.link(l).latency.count());
  return sum;
}

Duration mean_latency(const Cluster& cluster, const WeightedRoute& route) {
  return Duration{std::llround(weighted_latency_ps(cluster, route) / route.scale)};
}

WeightedRoute adaptive_spread(const Cluster& cluster, NodeId src, NodeId dst) {
  AdaptiveSpreader spreader(cluster);
  return spreader.spread(src, dst);
}

}  // namespace cs::topo
