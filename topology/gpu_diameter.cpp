#include "topology/gpu_diameter.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace cs::topo {
namespace {

constexpr std::uint32_t kNoServer = UINT32_MAX;

// The devices of each server in NodeId order, and each device's (server, position in it).
struct Servers {
  std::vector<std::vector<std::uint32_t>> devices;
  std::vector<std::uint32_t> server_of, position_of;  // per device; kNoServer outside servers
};

Servers servers_of(const Cluster& c) {
  Servers s;
  const auto n = static_cast<std::uint32_t>(c.node_count());
  s.server_of.assign(n, kNoServer);
  s.position_of.assign(n, 0);
  for (std::uint32_t v = 0; v < n; ++v) {
    const std::int32_t server = c.node(NodeId{v}).server;
    if (server < 0) continue;
    const auto i = static_cast<std::size_t>(server);
    if (s.devices.size() <= i) s.devices.resize(i + 1);
    s.server_of[v] = static_cast<std::uint32_t>(server);
    s.position_of[v] = static_cast<std::uint32_t>(s.devices[i].size());
    s.devices[i].push_back(v);
  }
  return s;
}

// The links of server `i`'s devices to devices outside it, as (position, direction, far end),
// sorted: what twin servers have in common.
std::vector<std::tuple<std::uint32_t, int, std::uint32_t>> outside_links(const Cluster& c, const Servers& s, std::uint32_t i) {
  std::vector<std::tuple<std::uint32_t, int, std::uint32_t>> out;
  for (const std::uint32_t v : s.devices[i]) {
    for (int dir = 0; dir < 2; ++dir) {
      const Adjacency& a = dir == 0 ? c.out_adjacency() : c.in_adjacency();
      for (std::uint32_t k = a.begin[v]; k < a.begin[v + 1]; ++k) {
        if (s.server_of[a.node[k]] != i) out.emplace_back(s.position_of[v], dir, a.node[k]);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether exchanging servers a and b device by device (and fixing the rest) maps the links onto
// themselves and GPUs onto GPUs (the argument in the header).
bool exchange_is_automorphism(const Cluster& c, const Servers& s, std::uint32_t a, std::uint32_t b) {
  const auto& da = s.devices[a];
  const auto& db = s.devices[b];
  if (da.size() != db.size()) return false;
  const auto pi = [&](std::uint32_t v) {
    if (s.server_of[v] == a) return db[s.position_of[v]];
    if (s.server_of[v] == b) return da[s.position_of[v]];
    return v;
  };
  std::vector<std::uint32_t> mapped, theirs;
  for (const std::uint32_t x : da) {
    const std::uint32_t y = pi(x);
    if (c.node(NodeId{x}).kind != c.node(NodeId{y}).kind) return false;
    for (int dir = 0; dir < 2; ++dir) {
      const Adjacency& adj = dir == 0 ? c.out_adjacency() : c.in_adjacency();
      // x's far ends mapped must be y's, and y's mapped must be x's (pi is an involution).
      for (const auto& [from, to] : {std::pair{x, y}, std::pair{y, x}}) {
        mapped.clear();
        theirs.clear();
        for (std::uint32_t k = adj.begin[from]; k < adj.begin[from + 1]; ++k) mapped.push_back(pi(adj.node[k]));
        for (std::uint32_t k = adj.begin[to]; k < adj.begin[to + 1]; ++k) theirs.push_back(adj.node[k]);
        std::sort(mapped.begin(), mapped.end());
        std::sort(theirs.begin(), theirs.end());
        if (mapped != theirs) return false;
      }
    }
  }
  return true;
}

// Each server's representative: a server it is a twin of (itself when it is the first).
std::vector<std::uint32_t> twin_representatives(const Cluster& c, const Servers& s) {
  const auto count = static_cast<std::uint32_t>(s.devices.size());
  std::vector<std::uint32_t> rep(count);
  std::map<std::vector<std::tuple<std::uint32_t, int, std::uint32_t>>, std::vector<std::uint32_t>> buckets;
  for (std::uint32_t i = 0; i < count; ++i) {
    rep[i] = i;
    auto& candidates = buckets[outside_links(c, s, i)];
    for (const std::uint32_t r : candidates) {
      if (exchange_is_automorphism(c, s, r, i)) {
        rep[i] = r;
        break;
      }
    }
    if (rep[i] == i) candidates.push_back(i);
  }
  return rep;
}

// The eccentricities (largest hop count to a GPU) of up to 64 source GPUs, by one bit-parallel
// BFS; -1 for a source that does not reach every GPU. `reached`, `frontier` and `next` are
// scratch of one word per device, all zero on entry and on return.
std::vector<int> eccentricities(const Cluster& c, const std::vector<bool>& is_gpu, std::span<const NodeId> sources,
                                std::vector<std::uint64_t>& reached, std::vector<std::uint64_t>& frontier,
                                std::vector<std::uint64_t>& next) {
  const Adjacency& out = c.out_adjacency();
  std::vector<int> ecc(sources.size(), 0);
  std::vector<std::uint32_t> current, upcoming, touched;
  for (std::size_t b = 0; b < sources.size(); ++b) {
    const std::uint32_t s = sources[b].value;
    if (frontier[s] == 0) current.push_back(s);
    frontier[s] |= std::uint64_t{1} << b;
    reached[s] |= std::uint64_t{1} << b;
    touched.push_back(s);
  }
  for (int level = 1; !current.empty(); ++level) {
    for (const std::uint32_t u : current) {
      const std::uint64_t bits = frontier[u];
      for (std::uint32_t k = out.begin[u]; k < out.begin[u + 1]; ++k) {
        const std::uint32_t v = out.node[k];
        const std::uint64_t fresh = bits & ~reached[v];
        if (fresh == 0) continue;
        if (reached[v] == 0) touched.push_back(v);
        if (next[v] == 0) upcoming.push_back(v);
        reached[v] |= fresh;
        next[v] |= fresh;
      }
    }
    std::uint64_t at_gpus = 0;  // sources whose bit reached a new GPU at this level
    for (const std::uint32_t u : current) frontier[u] = 0;
    for (const std::uint32_t v : upcoming) {
      if (is_gpu[v]) at_gpus |= next[v];
      frontier[v] = next[v];
      next[v] = 0;
    }
    for (; at_gpus != 0; at_gpus &= at_gpus - 1) ecc[static_cast<std::size_t>(std::countr_zero(at_gpus))] = level;
    current.swap(upcoming);
    upcoming.clear();
  }
  const std::uint64_t all = sources.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << sources.size()) - 1;
  for (const NodeId g : c.gpus()) {
    for (std::uint64_t missing = all & ~reached[g.value]; missing != 0; missing &= missing - 1) {
      ecc[static_cast<std::size_t>(std::countr_zero(missing))] = -1;
    }
  }
  for (const std::uint32_t v : touched) reached[v] = 0;
  return ecc;
}

}  // namespace

int gpu_diameter(const Cluster& c) {
  const auto gpus = c.gpus();
  if (gpus.size() < 2) return 0;
  const Servers s = servers_of(c);
  const std::vector<std::uint32_t> rep = twin_representatives(c, s);
  // Sources: every GPU of a representative server, and every GPU outside servers.
  std::vector<NodeId> sources;
  for (const NodeId g : gpus) {
    const std::uint32_t server = s.server_of[g.value];
    if (server == kNoServer || rep[server] == server) sources.push_back(g);
  }
  std::vector<bool> is_gpu(c.node_count(), false);
  for (const NodeId g : gpus) is_gpu[g.value] = true;
  std::vector<std::uint64_t> reached(c.node_count(), 0), frontier(c.node_count(), 0), next(c.node_count(), 0);
  int diameter = 0;
  for (std::size_t first = 0; first < sources.size(); first += 64) {
    const std::size_t count = std::min<std::size_t>(64, sources.size() - first);
    for (const int e : eccentricities(c, is_gpu, std::span<const NodeId>(sources).subspan(first, count), reached, frontier, next)) {
      if (e < 0) return -1;
      diameter = std::max(diameter, e);
    }
  }
  return diameter;
}

}  // namespace cs::topo
