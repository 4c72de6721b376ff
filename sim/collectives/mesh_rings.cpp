#include "sim/collectives/mesh_rings.h"

#include <algorithm>
#include <cmath>

namespace cs::coll {
namespace {

using topo::LinkId;
using topo::NodeId;

constexpr std::size_t kMaxCycles = 200'000;  // Hamiltonian cycles enumerated at most

struct Search {
  std::size_t g = 0;
  std::vector<int> units;                      // g x g, residual units of each directed pair
  std::vector<std::vector<std::size_t>> cycles;  // positions, starting at 0
  std::vector<std::vector<std::size_t>> by_arc;  // g x g -> cycles that cross the arc
  std::vector<std::size_t> chosen, best;
  std::size_t steps = 0;

  int& u(std::size_t i, std::size_t j) { return units[i * g + j]; }

  void enumerate(std::vector<std::size_t>& path, std::vector<bool>& seen) {
    if (cycles.size() >= kMaxCycles || ++steps > kMeshSearchSteps) return;
    const std::size_t last = path.back();
    if (path.size() == g) {
      if (u(last, 0) > 0) cycles.push_back(path);
      return;
    }
    for (std::size_t j = 1; j < g; ++j) {
      if (seen[j] || u(last, j) <= 0) continue;
      seen[j] = true;
      path.push_back(j);
      enumerate(path, seen);
      path.pop_back();
      seen[j] = false;
    }
  }

  bool fits(const std::vector<std::size_t>& c) {
    for (std::size_t k = 0; k < g; ++k) {
      if (u(c[k], c[(k + 1) % g]) <= 0) return false;
    }
    return true;
  }
  void take(const std::vector<std::size_t>& c, int d) {
    for (std::size_t k = 0; k < g; ++k) u(c[k], c[(k + 1) % g]) -= d;
  }

  // Looks for `target` rings in all; true when found (then `chosen` holds them).
  bool pack(std::size_t target, std::size_t from) {
    if (chosen.size() > best.size()) best = chosen;
    if (chosen.size() == target) return true;
    if (++steps > kMeshSearchSteps) return false;
    const int need = static_cast<int>(target - chosen.size());
    // Every remaining ring takes one unit out of and into every rank: prune when a rank has too
    // few, and branch on an arc of a rank that must use all its units (a tight rank): some
    // remaining ring has to cross it, so only the cycles through it are tried.
    std::size_t tight_i = g, tight_j = g;
    for (std::size_t i = 0; i < g; ++i) {
      int out = 0, in = 0;
      for (std::size_t j = 0; j < g; ++j) {
        out += u(i, j);
        in += u(j, i);
      }
      if (out < need || in < need) return false;
      if (out == need && tight_i == g) {
        tight_i = i;
        for (std::size_t j = 0; j < g; ++j) {
          if (u(i, j) > 0) {
            tight_j = j;
            break;
          }
        }
      }
    }
    if (tight_i < g) {
      for (std::size_t c : by_arc[tight_i * g + tight_j]) {
        if (!fits(cycles[c])) continue;
        take(cycles[c], 1);
        chosen.push_back(c);
        if (pack(target, 0)) return true;
        chosen.pop_back();
        take(cycles[c], -1);
        if (steps > kMeshSearchSteps) return false;
      }
      return false;
    }
    for (std::size_t c = from; c < cycles.size(); ++c) {
      if (!fits(cycles[c])) continue;
      take(cycles[c], 1);
      chosen.push_back(c);
      if (pack(target, c)) return true;  // a cycle may be taken again while its pairs have units
      chosen.pop_back();
      take(cycles[c], -1);
      if (steps > kMeshSearchSteps) return false;
    }
    return false;
  }
};

}  // namespace

std::vector<std::vector<std::size_t>> mesh_rings(const topo::Cluster& cluster,
                                                 const std::vector<NodeId>& gpus) {
  const std::size_t g = gpus.size();
  if (g < 2) return {};
  // c(i, j): the direct links from GPU i to GPU j (a cable whose two ends are these GPUs).
  std::vector<double> cap(g * g, 0.0);
  double unit = 0;
  for (std::size_t i = 0; i < g; ++i) {
    for (LinkId l : cluster.out_links(gpus[i])) {
      const auto& link = cluster.link(l);
      const auto it = std::find(gpus.begin(), gpus.end(), link.dst);
      if (it == gpus.end()) continue;
      const auto j = static_cast<std::size_t>(it - gpus.begin());
      if (j == i) continue;
      cap[i * g + j] += link.bandwidth.value();
    }
  }
  for (double c : cap) {
    if (c > 0 && (unit == 0 || c < unit)) unit = c;
  }
  if (!(unit > 0)) return {};

  Search s;
  s.g = g;
  s.units.assign(g * g, 0);
  for (std::size_t k = 0; k < g * g; ++k) s.units[k] = static_cast<int>(std::floor(cap[k] / unit + 1e-9));
  int r_max = INT32_MAX;
  for (std::size_t i = 0; i < g; ++i) {
    int out = 0, in = 0;
    for (std::size_t j = 0; j < g; ++j) {
      out += s.u(i, j);
      in += s.u(j, i);
    }
    r_max = std::min({r_max, out, in});
  }
  std::vector<std::size_t> path{0};
  std::vector<bool> seen(g, false);
  seen[0] = true;
  s.enumerate(path, seen);
  if (s.cycles.empty() || r_max <= 0) return {};
  s.by_arc.assign(g * g, {});
  for (std::size_t c = 0; c < s.cycles.size(); ++c) {
    for (std::size_t k = 0; k < g; ++k) s.by_arc[s.cycles[c][k] * g + s.cycles[c][(k + 1) % g]].push_back(c);
  }
  s.steps = 0;
  for (int target = r_max; target >= 1; --target) {
    s.chosen.clear();
    if (s.pack(static_cast<std::size_t>(target), 0)) break;
    if (s.best.size() >= static_cast<std::size_t>(target - 1) || s.steps > kMeshSearchSteps) break;
  }
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t c : s.best) out.push_back(s.cycles[c]);
  return out;
}

}  // namespace cs::coll
