#include "topology/server_orbits.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/errors.h"

namespace cs::topo {
namespace {

constexpr std::uint32_t kNone = UINT32_MAX;

// What an automorphism must preserve of a device.
bool same_device(const NodeInfo& a, const NodeInfo& b) {
  return a.kind == b.kind && a.model == b.model && a.reduction_bandwidth == b.reduction_bandwidth &&
         a.packet_efficiency == b.packet_efficiency;
}

// What an automorphism must preserve of a link, with the (mapped) far end first.
using LinkKey = std::tuple<std::uint32_t, double, std::int64_t, int, int>;
LinkKey link_key(std::uint32_t far, const LinkInfo& l) {
  return {far, l.bandwidth.value(), l.latency.count(), static_cast<int>(l.link_class), static_cast<int>(l.tier)};
}

// Mixes x into the hash h (order-sensitive).
void mix(std::uint64_t& h, std::uint64_t x) { h = (h ^ x) * 0x100000001b3ULL + (h >> 29); }

// Union-find over 0..n-1 with path halving; a union keeps the smaller root, so every class's
// root is its smallest member.
class DenseUnionFind {
 public:
  explicit DenseUnionFind(std::size_t n) : parent_(n) {
    for (std::size_t i = 0; i < n; ++i) parent_[i] = static_cast<std::uint32_t>(i);
  }
  std::uint32_t find(std::uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(std::uint32_t a, std::uint32_t b) {
    a = find(a);
    b = find(b);
    parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<std::uint32_t> parent_;
};

std::uint32_t find(std::unordered_map<std::uint32_t, std::uint32_t>& parent, std::uint32_t x) {
  std::uint32_t root = x;
  for (auto it = parent.find(root); it != parent.end() && it->second != root; it = parent.find(root)) root = it->second;
  while (x != root) {  // path compression
    auto it = parent.find(x);
    if (it == parent.end()) break;
    x = std::exchange(it->second, root);
  }
  return root;
}

void unite(std::unordered_map<std::uint32_t, std::uint32_t>& parent, std::uint32_t a, std::uint32_t b) {
  parent.try_emplace(a, a);
  parent.try_emplace(b, b);
  a = find(parent, a);
  b = find(parent, b);
  if (a != b) parent[std::max(a, b)] = std::min(a, b);
}

}  // namespace

std::vector<LinkId> ServerOrbits::members(LinkId root) const {
  if (const auto it = members_.find(root.value); it != members_.end()) return it->second;
  if (const auto it = twins_->members.find(root.value); it != twins_->members.end()) return it->second;
  return {root};
}

std::size_t ServerOrbits::orbit_size(LinkId root) const {
  if (const auto it = members_.find(root.value); it != members_.end()) return it->second.size();
  if (const auto it = twins_->members.find(root.value); it != twins_->members.end()) return it->second.size();
  return 1;
}

ServerSymmetry::ServerSymmetry(const Cluster& cluster) : cluster_(cluster) {
  const auto n = static_cast<std::uint32_t>(cluster.node_count());
  server_of_.assign(n, kNone);
  position_of_.assign(n, 0);
  for (std::uint32_t v = 0; v < n; ++v) {
    const std::int32_t server = cluster.node(NodeId{v}).server;
    if (server < 0) continue;
    const auto i = static_cast<std::size_t>(server);
    if (devices_.size() <= i) devices_.resize(i + 1);
    server_of_[v] = static_cast<std::uint32_t>(server);
    position_of_[v] = static_cast<std::uint32_t>(devices_[i].size());
    devices_[i].push_back(v);
  }
}

std::vector<ServerSymmetry::Outside> ServerSymmetry::outside(std::uint32_t s) const {
  std::vector<Outside> out;
  for (const std::uint32_t v : devices_[s]) {
    for (int dir = 0; dir < 2; ++dir) {
      const Adjacency& a = dir == 0 ? cluster_.out_adjacency() : cluster_.in_adjacency();
      for (std::uint32_t k = a.begin[v]; k < a.begin[v + 1]; ++k) {
        if (server_of_[a.node[k]] != s) out.push_back({position_of_[v], dir, a.node[k], a.link[k]});
      }
    }
  }
  return out;
}

bool ServerSymmetry::link_images(const Map& pi, std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs) const {
  const auto image = [&pi](std::uint32_t v) {
    const auto it = pi.find(v);
    return it == pi.end() ? v : it->second;
  };
  pairs.clear();
  std::vector<std::pair<LinkKey, std::uint32_t>> mine, theirs;
  for (const auto& [x, y] : pi) {
    if (!same_device(cluster_.node(NodeId{x}), cluster_.node(NodeId{y}))) return false;
    for (int dir = 0; dir < 2; ++dir) {
      const Adjacency& a = dir == 0 ? cluster_.out_adjacency() : cluster_.in_adjacency();
      mine.clear();
      theirs.clear();
      for (std::uint32_t k = a.begin[x]; k < a.begin[x + 1]; ++k) {
        mine.emplace_back(link_key(image(a.node[k]), cluster_.link(a.link[k])), a.link[k].value);
      }
      for (std::uint32_t k = a.begin[y]; k < a.begin[y + 1]; ++k) {
        theirs.emplace_back(link_key(a.node[k], cluster_.link(a.link[k])), a.link[k].value);
      }
      if (mine.size() != theirs.size()) return false;
      std::sort(mine.begin(), mine.end());
      std::sort(theirs.begin(), theirs.end());
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (mine[i].first != theirs[i].first) return false;
        pairs.emplace_back(mine[i].second, theirs[i].second);
      }
    }
  }
  return true;
}

const std::shared_ptr<const SwitchTwins>& ServerSymmetry::switch_twins() const {
  if (twins_) return twins_;
  auto t = std::make_shared<SwitchTwins>();
  const auto links = static_cast<std::uint32_t>(cluster_.link_count());
  DenseUnionFind classes(links);
  // Candidates: switches outside servers with equal hashes of their links (far end and
  // attributes, both directions, sorted); each checked against its group's first.
  std::map<std::uint64_t, std::vector<std::uint32_t>> groups;
  std::vector<std::pair<int, LinkKey>> row;
  for (std::uint32_t v = 0; v < server_of_.size(); ++v) {
    if (server_of_[v] != kNone || !is_switch(cluster_.node(NodeId{v}).kind)) continue;
    row.clear();
    for (int dir = 0; dir < 2; ++dir) {
      const Adjacency& a = dir == 0 ? cluster_.out_adjacency() : cluster_.in_adjacency();
      for (std::uint32_t k = a.begin[v]; k < a.begin[v + 1]; ++k) row.emplace_back(dir, link_key(a.node[k], cluster_.link(a.link[k])));
    }
    std::sort(row.begin(), row.end());
    std::uint64_t h = static_cast<std::uint64_t>(cluster_.node(NodeId{v}).kind) + 0x9e3779b97f4a7c15ULL;
    for (const auto& [dir, key] : row) {
      const std::uint64_t parts[] = {static_cast<std::uint64_t>(dir), std::get<0>(key), std::bit_cast<std::uint64_t>(std::get<1>(key)),
                                     static_cast<std::uint64_t>(std::get<2>(key)), static_cast<std::uint64_t>(std::get<3>(key)),
                                     static_cast<std::uint64_t>(std::get<4>(key))};
      for (const std::uint64_t x : parts) mix(h, x);
    }
    groups[h].push_back(v);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  DenseUnionFind vertices(server_of_.size());
  for (const auto& [h, members] : groups) {
    for (std::size_t i = 1; i < members.size(); ++i) {
      const Map pi{{members[0], members[i]}, {members[i], members[0]}};
      if (!link_images(pi, pairs)) continue;  // equal hashes, not twins
      for (const auto& [a, b] : pairs) classes.unite(a, b);
      vertices.unite(members[0], members[i]);
    }
  }
  t->vertex_rep.resize(server_of_.size());
  for (std::uint32_t v = 0; v < server_of_.size(); ++v) t->vertex_rep[v] = vertices.find(v);
  t->rep.resize(links);
  for (std::uint32_t l = 0; l < links; ++l) {
    t->rep[l] = classes.find(l);  // the smallest link of the class
    if (t->rep[l] != l) {
      auto& m = t->members[t->rep[l]];
      if (m.empty()) m.push_back(LinkId{t->rep[l]});
      m.push_back(LinkId{l});
    }
  }
  twins_ = std::move(t);
  return twins_;
}

ServerTwins::Canonical ServerTwins::canonical(std::uint32_t src, std::uint32_t dst) const {
  Canonical c{};
  c.a1 = server_of[src];
  c.b1 = first[c.a1];
  const std::uint32_t s1 = c.a1 == c.b1 ? src : image(src, c.a1, c.b1);
  const std::uint32_t t1 = c.a1 == c.b1 ? dst : image(dst, c.a1, c.b1);
  c.a2 = server_of[t1];
  c.b2 = c.a2;  // dst in src's new server: no second exchange
  if (c.a2 != c.b1) c.b2 = first[c.a2] == c.b1 ? second[c.a2] : first[c.a2];
  if (c.b2 == kNone) throw InternalError("ServerTwins: a twin class without its second server");
  c.src = s1;
  c.dst = c.a2 == c.b2 ? t1 : image(t1, c.a2, c.b2);
  return c;
}

LinkId ServerTwins::image(const Cluster& cluster, LinkId l, std::uint32_t a, std::uint32_t b) const {
  if (!touches_server[l.value]) return l;
  const LinkInfo& info = cluster.link(l);
  const auto moved = [&](NodeId v) {
    const std::uint32_t s = server_of[v.value];
    return s == a || s == b;  // a and b are servers, never kNone
  };
  const bool from = moved(info.src);
  if (!from && !moved(info.dst)) return l;
  const Adjacency& row = from ? cluster.out_adjacency() : cluster.in_adjacency();
  const std::uint32_t v = from ? info.src.value : info.dst.value;
  const std::uint32_t w = image(v, a, b);
  for (std::uint32_t k = row.begin[v]; k < row.begin[v + 1]; ++k) {
    if (row.link[k] == l) return row.link[row.begin[w] + (k - row.begin[v])];
  }
  throw InternalError("ServerTwins::image: a link missing from its end's row");
}

const std::shared_ptr<const ServerTwins>& ServerSymmetry::server_twins() const {
  if (server_twins_) return server_twins_;
  auto t = std::make_shared<ServerTwins>();
  t->server_of = server_of_;
  t->position_of = position_of_;
  t->devices = devices_;
  const auto servers = static_cast<std::uint32_t>(devices_.size());
  t->first.assign(servers, kNone);
  t->second.assign(servers, kNone);
  const Adjacency* rows[2] = {&cluster_.out_adjacency(), &cluster_.in_adjacency()};
  // Whether the exchange of servers a and b maps every link slot by slot (the header).
  const auto exchange_by_slots = [&](std::uint32_t a, std::uint32_t b) {
    if (devices_[a].size() != devices_[b].size()) return false;
    for (std::size_t p = 0; p < devices_[a].size(); ++p) {
      const std::uint32_t x = devices_[a][p], y = devices_[b][p];
      if (!same_device(cluster_.node(NodeId{x}), cluster_.node(NodeId{y}))) return false;
      for (const Adjacency* r : rows) {
        const std::uint32_t n = r->begin[x + 1] - r->begin[x];
        if (r->begin[y + 1] - r->begin[y] != n) return false;
        for (std::uint32_t k = 0; k < n; ++k) {
          const std::uint32_t i = r->begin[x] + k, j = r->begin[y] + k;
          if (t->image(r->node[i], a, b) != r->node[j]) return false;
          if (link_key(0, cluster_.link(r->link[i])) != link_key(0, cluster_.link(r->link[j]))) return false;
        }
      }
    }
    return true;
  };
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> firsts;  // hash of the outside links -> classes
  for (std::uint32_t s = 0; s < servers; ++s) {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (const Outside& o : outside(s)) {
      const LinkKey key = link_key(o.far, cluster_.link(o.link));
      const std::uint64_t parts[] = {o.position, static_cast<std::uint64_t>(o.direction), std::get<0>(key),
                                     std::bit_cast<std::uint64_t>(std::get<1>(key)), static_cast<std::uint64_t>(std::get<2>(key))};
      for (const std::uint64_t x : parts) mix(h, x);
    }
    std::vector<std::uint32_t>& bucket = firsts[h];
    for (const std::uint32_t f : bucket) {
      if (!exchange_by_slots(f, s)) continue;
      t->first[s] = f;
      if (t->second[f] == kNone) t->second[f] = s;
      break;
    }
    if (t->first[s] == kNone) {
      t->first[s] = s;
      bucket.push_back(s);
    }
  }
  for (std::uint32_t s = 0; s < servers; ++s) t->second[s] = t->second[t->first[s]];
  t->touches_server.assign(cluster_.link_count(), 0);
  for (std::uint32_t l = 0; l < cluster_.link_count(); ++l) {
    const LinkInfo& info = cluster_.link(LinkId{l});
    t->touches_server[l] = server_of_[info.src.value] != kNone || server_of_[info.dst.value] != kNone;
  }
  server_twins_ = std::move(t);
  return server_twins_;
}

std::optional<ServerSymmetry::Map> ServerSymmetry::exchange(std::span<const std::uint32_t> a,
                                                            std::span<const std::uint32_t> b,
                                                            std::vector<std::pair<std::uint32_t, std::uint32_t>>* sides) const {
  Map pi;
  std::unordered_set<std::uint32_t> fixed;
  std::vector<std::uint32_t> queue;
  // x's image is y (x == y: x is fixed); false when x or y already has another.
  const auto pair = [&](std::uint32_t x, std::uint32_t y) {
    if (x == y) {
      fixed.insert(x);
      return !pi.count(x);
    }
    if (fixed.count(x) || fixed.count(y)) return false;
    const auto [it, fresh] = pi.try_emplace(x, y);
    if (!fresh) return it->second == y;
    const auto [jt, fresh_y] = pi.try_emplace(y, x);
    if (!fresh_y) return jt->second == x;
    queue.push_back(x);
    if (sides) sides->emplace_back(x, y);
    return true;
  };
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (devices_[a[k]].size() != devices_[b[k]].size()) return std::nullopt;
    for (std::size_t p = 0; p < devices_[a[k]].size(); ++p) {
      if (!pair(devices_[a[k]][p], devices_[b[k]][p])) return std::nullopt;
    }
  }
  // Close over the links: the k-th link of x and the k-th link of its image join the far ends.
  while (!queue.empty()) {
    const std::uint32_t x = queue.back();
    queue.pop_back();
    const std::uint32_t y = pi.at(x);
    for (const Adjacency* adj : {&cluster_.out_adjacency(), &cluster_.in_adjacency()}) {
      const Adjacency& r = *adj;
      if (r.begin[x + 1] - r.begin[x] != r.begin[y + 1] - r.begin[y]) return std::nullopt;
      for (std::uint32_t i = 0; i < r.begin[x + 1] - r.begin[x]; ++i) {
        if (!pair(r.node[r.begin[x] + i], r.node[r.begin[y] + i])) return std::nullopt;
      }
    }
  }
  return pi;
}

std::optional<ServerOrbits> ServerSymmetry::twin_orbits() const {
  const std::shared_ptr<const SwitchTwins>& twins = switch_twins();
  if (twins->members.empty()) return std::nullopt;
  ServerOrbits out;
  out.servers_ = 1;
  out.twins_ = twins;
  return out;
}

std::optional<ServerSymmetry::Blocks> ServerSymmetry::find_blocks(std::span<const NodeId> gpus) const {
  // R: the servers, each with the positions of its GPUs.
  Blocks out;
  std::map<std::uint32_t, std::vector<std::uint32_t>>& positions = out.positions;
  out.ranks.reserve(gpus.size());
  for (const NodeId g : gpus) {
    if (g.value >= server_of_.size() || server_of_[g.value] == kNone) return std::nullopt;
    positions[server_of_[g.value]].push_back(position_of_[g.value]);
    out.ranks.push_back(g.value);
  }
  if (positions.size() < 2) return std::nullopt;
  std::sort(out.ranks.begin(), out.ranks.end());
  const std::uint32_t s0 = out.s0 = positions.begin()->first;
  for (auto& [s, p] : positions) std::sort(p.begin(), p.end());
  for (const auto& [s, p] : positions) {
    if (p != positions.at(s0) || devices_[s].size() != devices_[s0].size()) return std::nullopt;
    if (std::adjacent_find(p.begin(), p.end()) != p.end()) return std::nullopt;  // a GPU twice
  }
  // Blocks: a server's twins, found through the outside devices it is cabled to.
  std::map<std::uint32_t, std::vector<std::tuple<std::uint32_t, int, LinkKey>>> signatures;
  const auto signature = [&](std::uint32_t s) -> const auto& {
    auto [it, fresh] = signatures.try_emplace(s);
    if (fresh) {
      for (const Outside& o : outside(s)) it->second.emplace_back(o.position, o.direction, link_key(o.far, cluster_.link(o.link)));
      std::sort(it->second.begin(), it->second.end());
    }
    return it->second;
  };
  std::vector<std::vector<std::uint32_t>>& blocks = out.blocks;
  std::map<std::uint32_t, std::size_t>& block_of = out.block_of;
  for (const auto& [s, p] : positions) {
    if (block_of.count(s)) continue;
    std::vector<std::uint32_t> block{s};
    for (const Outside& o : outside(s)) {
      for (int dir = 0; dir < 2; ++dir) {
        const Adjacency& a = dir == 0 ? cluster_.out_adjacency() : cluster_.in_adjacency();
        for (std::uint32_t k = a.begin[o.far]; k < a.begin[o.far + 1]; ++k) {
          const std::uint32_t x = server_of_[a.node[k]];
          if (x == kNone || x == s || std::find(block.begin(), block.end(), x) != block.end()) continue;
          if (signature(x) == signature(s)) block.push_back(x);
        }
      }
    }
    std::sort(block.begin(), block.end());
    for (const std::uint32_t x : block) block_of[x] = blocks.size();
    blocks.push_back(std::move(block));
  }
  if (blocks.size() > 1) {
    // Several blocks: each wholly in R, all of one size.
    for (const auto& b : blocks) {
      if (b.size() != blocks.front().size()) return std::nullopt;
      for (const std::uint32_t x : b) {
        if (!positions.count(x)) return std::nullopt;
      }
    }
  }
  return out;
}

void ServerSymmetry::fill_orbits(Map& parent, ServerOrbits& out) const {
  const SwitchTwins& twins = *switch_twins();
  out.twins_ = switch_twins();
  // Each orbit's representative is its smallest twin class's link (independent of the order of
  // the unions); its members, every link of its twin classes, in link order.
  std::vector<std::uint32_t> moved;
  moved.reserve(parent.size());
  for (const auto& [rep, p] : parent) moved.push_back(rep);
  std::sort(moved.begin(), moved.end());
  std::unordered_map<std::uint32_t, std::uint32_t> smallest;  // union-find root -> smallest member
  for (const std::uint32_t rep : moved) {
    const std::uint32_t r = find(parent, rep);
    const std::uint32_t root = smallest.try_emplace(r, rep).first->second;
    out.root_[rep] = root;
    auto& m = out.members_[root];
    if (const auto it = twins.members.find(rep); it != twins.members.end()) {
      m.insert(m.end(), it->second.begin(), it->second.end());
    } else {
      m.push_back(LinkId{rep});
    }
  }
  for (auto& [root, m] : out.members_) std::sort(m.begin(), m.end(), [](LinkId a, LinkId b) { return a.value < b.value; });
}

std::optional<ServerOrbits> ServerSymmetry::orbits(std::span<const NodeId> gpus) const {
  std::optional<Blocks> found = find_blocks(gpus);
  if (!found) return std::nullopt;
  const auto& [positions, blocks, block_of, s0, ranks] = *found;
  // The generators, each checked (unite_images) and applied to the link union-find; a block is
  // exchanged with s0's only while no earlier generator joined it to s0 (a spanning set: the
  // exchange of two pods' first blocks joins every block of the pods).
  const SwitchTwins& twins = *switch_twins();
  Map parent;  // over twin classes (their smallest links)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  DenseUnionFind joined(devices_.size());  // servers
  std::size_t moved_devices = 0;
  const auto apply = [&](std::span<const std::uint32_t> a, std::span<const std::uint32_t> b) {
    const std::optional<Map> pi = exchange(a, b);
    if (!pi) return false;
    moved_devices += pi->size();
    if (moved_devices > 8 * server_of_.size()) return false;  // no symmetry worth the search
    for (const auto& [x, y] : *pi) {
      if (found->is_rank(x) != found->is_rank(y)) return false;  // must map the ranks onto themselves
    }
    if (!link_images(*pi, pairs)) return false;
    for (const auto& [u, v] : pairs) unite(parent, twins.rep[u], twins.rep[v]);
    for (const auto& [x, y] : *pi) {
      if (server_of_[x] == kNone) continue;
      joined.unite(server_of_[x], server_of_[y]);
    }
    return true;
  };
  // Twin exchanges within the block of s0 (R's servers of it), then block exchanges.
  for (const std::uint32_t s : blocks[block_of.at(s0)]) {
    if (s == s0 || !positions.count(s)) continue;
    const std::uint32_t one[1] = {s0}, other[1] = {s};
    if (!apply(one, other)) return std::nullopt;
  }
  const auto& first = blocks[block_of.at(s0)];
  for (const auto& other : blocks) {
    if (joined.find(other.front()) == joined.find(s0)) continue;
    if (!apply(first, other)) return std::nullopt;
  }
  for (const auto& [s, p] : positions) {
    if (joined.find(s) != joined.find(s0)) return std::nullopt;  // not transitive on R
  }
  ServerOrbits out;
  out.representative_ = static_cast<std::int32_t>(s0);
  out.servers_ = static_cast<std::uint32_t>(positions.size());
  fill_orbits(parent, out);
  return out;
}

std::optional<BlockRotation> ServerSymmetry::block_rotation(std::span<const NodeId> gpus) const {
  std::optional<Blocks> found = find_blocks(gpus);
  if (!found || found->blocks.size() < 2) return std::nullopt;
  const std::vector<std::vector<std::uint32_t>>& blocks = found->blocks;
  const SwitchTwins& twins = *switch_twins();
  BlockRotation out;
  out.blocks_ = static_cast<std::uint32_t>(blocks.size());
  out.block_.assign(server_of_.size(), BlockRotation::kFixed);
  out.slot_.assign(server_of_.size(), 0);
  Map parent;  // over twin classes, as orbits()
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs, sides;
  for (std::size_t b = 1; b < blocks.size(); ++b) {
    sides.clear();
    const std::optional<Map> pi = exchange(blocks[0], blocks[b], &sides);
    if (!pi || !link_images(*pi, pairs)) return std::nullopt;
    if (b == 1) {  // D0, block 0's moved devices, in slot order (device order)
      out.per_block_ = static_cast<std::uint32_t>(sides.size());
      std::sort(sides.begin(), sides.end());
      out.devices_.assign(static_cast<std::size_t>(out.blocks_) * out.per_block_, kNone);
      for (std::uint32_t k = 0; k < out.per_block_; ++k) {
        const std::uint32_t x = sides[k].first;
        out.block_[x] = 0;
        out.slot_[x] = k;
        out.devices_[k] = x;
      }
    }
    // Every exchange moves D0 and devices of no other block: then rho is the blocks' shift.
    if (sides.size() != out.per_block_) return std::nullopt;
    for (const auto& [x, y] : sides) {
      if (out.block_[x] != 0 || out.block_[y] != BlockRotation::kFixed) return std::nullopt;
      if (found->is_rank(x) != found->is_rank(y)) return std::nullopt;  // must map the ranks onto themselves
      std::uint32_t& slot = out.devices_[b * out.per_block_ + out.slot_[x]];
      if (slot != kNone) return std::nullopt;
      slot = y;
      out.block_[y] = static_cast<std::uint32_t>(b);
      out.slot_[y] = out.slot_[x];
    }
    for (const auto& [u, v] : pairs) unite(parent, twins.rep[u], twins.rep[v]);
  }
  // No link between two blocks: the exchanges' orbits are then rho's.
  for (std::uint32_t l = 0; l < cluster_.link_count(); ++l) {
    const LinkInfo& info = cluster_.link(LinkId{l});
    const std::uint32_t a = out.block_[info.src.value], c = out.block_[info.dst.value];
    if (a != BlockRotation::kFixed && c != BlockRotation::kFixed && a != c) return std::nullopt;
  }
  out.orbits_.representative_ = static_cast<std::int32_t>(found->s0);
  out.orbits_.servers_ = out.blocks_;
  fill_orbits(parent, out.orbits_);
  return out;
}

}  // namespace cs::topo
