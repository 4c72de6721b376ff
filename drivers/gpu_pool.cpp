#include "drivers/gpu_pool.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/errors.h"
#include "drivers/trace_table.h"

namespace cs::drv {
namespace {

constexpr int kWhole = 1000;

}  // namespace

std::vector<PoolServer> read_node_list(const std::string& path, double fraction) {
  const TraceTable t(path, {"gpu"});
  std::vector<PoolServer> servers;
  std::int64_t gpu_nodes = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const int gpus = static_cast<int>(t.integer(i, "gpu", 0, 1024));
    if (gpus == 0) continue;
    const double k = static_cast<double>(gpu_nodes++);
    if (std::floor((k + 1) * fraction) == std::floor(k * fraction)) continue;
    servers.push_back({0, gpus, 0, std::string(t.cell(i, "model"))});
  }
  if (servers.empty()) throw InputError(path, "", "the node list has no node with GPUs");
  return servers;
}

GpuPool::GpuPool(const topo::Cluster& cluster) {
  const auto gpus = cluster.gpus();
  std::map<int, std::vector<std::uint32_t>> leaves;  // server -> leaf switches of its NICs
  for (std::size_t v = 0; v < cluster.node_count(); ++v) {
    const topo::NodeInfo& n = cluster.node(topo::NodeId{static_cast<std::uint32_t>(v)});
    if (n.kind != topo::NodeKind::kNic || n.server < 0) continue;
    for (topo::LinkId l : cluster.out_links(topo::NodeId{static_cast<std::uint32_t>(v)})) {
      if (cluster.link(l).tier == 1) leaves[n.server].push_back(cluster.link(l).dst.value);
    }
  }
  std::map<std::vector<std::uint32_t>, int> group_of;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const topo::NodeInfo& g = cluster.node(gpus[i]);
    if (servers_.empty() || g.server != cluster.node(gpus[i - 1]).server) {
      std::vector<std::uint32_t> key = leaves[g.server];
      std::sort(key.begin(), key.end());
      key.erase(std::unique(key.begin(), key.end()), key.end());
      const int group = group_of.emplace(key, static_cast<int>(group_of.size())).first->second;
      servers_.push_back({static_cast<int>(i), 0, group, cluster.gpu_spec(gpus[i]).name});
    }
    ++servers_.back().gpus;
  }
  groups_ = std::max<int>(1, static_cast<int>(group_of.size()));
  finish();
}

GpuPool::GpuPool(std::vector<PoolServer> servers) : servers_(std::move(servers)) {
  int first = 0;
  for (PoolServer& s : servers_) {
    s.first_gpu = first;
    s.group = 0;
    first += s.gpus;
  }
  finish();
}

void GpuPool::finish() {
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    server_of_.insert(server_of_.end(), static_cast<std::size_t>(servers_[s].gpus), static_cast<int>(s));
    whole_free_.push_back(servers_[s].gpus);
    max_server_gpus_ = std::max(max_server_gpus_, servers_[s].gpus);
    groups_ = std::max(groups_, servers_[s].group + 1);
  }
  free_.assign(server_of_.size(), kWhole);
  down_.assign(server_of_.size(), false);
}

bool GpuPool::allowed(int server, const GpuRequest& r) const {
  if (!r.models || r.models->empty()) return true;
  const std::string& m = servers_[static_cast<std::size_t>(server)].model;
  return std::find(r.models->begin(), r.models->end(), m) != r.models->end();
}

int GpuPool::usable(int server, const GpuRequest& r) const {
  if (!allowed(server, r)) return 0;
  const int w = whole_free_[static_cast<std::size_t>(server)];
  return w - w % r.unit;
}

std::optional<std::string> GpuPool::never_fits(const GpuRequest& r) const {
  if (r.milli < kWhole && r.gpus != 1) return "a share of a GPU applies to a one-GPU job";
  if (r.gpus % r.unit != 0) {
    return std::to_string(r.gpus) + " GPUs do not divide into tensor-parallel groups of " + std::to_string(r.unit);
  }
  std::int64_t capacity = 0;
  int largest = 0;
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    if (!allowed(static_cast<int>(s), r)) continue;
    capacity += servers_[s].gpus - servers_[s].gpus % r.unit;
    largest = std::max(largest, servers_[s].gpus);
  }
  if (largest == 0) return "no server has the GPU models the job allows";
  if (r.unit > largest) return "a tensor-parallel group of " + std::to_string(r.unit) + " GPUs is larger than any server";
  if (capacity < r.gpus) {
    return std::to_string(r.gpus) + " GPUs requested; the cluster has " + std::to_string(capacity) + " the job can use";
  }
  return std::nullopt;
}

Placement GpuPool::take(const std::vector<std::pair<int, int>>& per_server) const {
  Placement p;
  std::vector<int> groups;
  std::vector<std::pair<int, int>> sorted = per_server;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [server, count] : sorted) {
    const PoolServer& s = servers_[static_cast<std::size_t>(server)];
    int taken = 0;
    for (int g = s.first_gpu; g < s.first_gpu + s.gpus && taken < count; ++g) {
      if (!down_[static_cast<std::size_t>(g)] && free_[static_cast<std::size_t>(g)] == kWhole) {
        p.gpus.push_back(g);
        ++taken;
      }
    }
    groups.push_back(s.group);
  }
  std::sort(groups.begin(), groups.end());
  p.servers = static_cast<int>(sorted.size());
  p.groups = static_cast<int>(std::unique(groups.begin(), groups.end()) - groups.begin());
  return p;
}

std::optional<Placement> GpuPool::place_share(const GpuRequest& r, PlacementPolicy policy, Rng& rng) const {
  int best = -1;
  std::vector<int> fitting;
  for (std::size_t g = 0; g < free_.size(); ++g) {
    if (down_[g] || free_[g] < r.milli || !allowed(server_of_[g], r)) continue;
    if (policy == PlacementPolicy::kRandom) {
      fitting.push_back(static_cast<int>(g));
    } else if (best < 0 || (policy != PlacementPolicy::kFirstFit && free_[g] < free_[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(g);
      if (policy == PlacementPolicy::kFirstFit) break;
    }
  }
  if (policy == PlacementPolicy::kRandom && !fitting.empty()) best = fitting[rng.below(fitting.size())];
  if (best < 0) return std::nullopt;
  Placement p;
  p.gpus = {best};
  p.milli = r.milli;
  p.servers = p.groups = 1;
  return p;
}

std::optional<Placement> GpuPool::place_whole(const GpuRequest& r, PlacementPolicy policy, Rng& rng) const {
  const int n = static_cast<int>(servers_.size());
  std::vector<int> use(static_cast<std::size_t>(n));
  int total = 0;
  for (int s = 0; s < n; ++s) total += use[static_cast<std::size_t>(s)] = usable(s, r);
  if (total < r.gpus) return std::nullopt;
  auto u = [&](int s) { return use[static_cast<std::size_t>(s)]; };
  std::vector<std::pair<int, int>> chosen;
  // Takes from `order` until the job is covered.
  auto fill = [&](const std::vector<int>& order) {
    int left = r.gpus;
    for (int s : order) {
      if (left == 0) break;
      const int k = std::min(left, u(s));
      if (k > 0) chosen.push_back({s, k});
      left -= k;
    }
  };
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // The server with the fewest usable GPUs that still holds the whole job (ties: `better`).
  auto best_single = [&](auto better) {
    int best = -1;
    for (int s = 0; s < n; ++s) {
      if (u(s) < r.gpus) continue;
      if (best < 0 || u(s) < u(best) || (u(s) == u(best) && better(s, best))) best = s;
    }
    return best;
  };
  switch (policy) {
    case PlacementPolicy::kFirstFit:
      fill(order);
      break;
    case PlacementPolicy::kRandom: {
      std::vector<int> units;  // one entry per unit of r.unit GPUs
      for (int s = 0; s < n; ++s) units.insert(units.end(), static_cast<std::size_t>(u(s) / r.unit), s);
      std::vector<int> per(static_cast<std::size_t>(n), 0);
      for (int i = 0; i < r.gpus / r.unit; ++i) {
        const std::size_t j = static_cast<std::size_t>(i) + rng.below(units.size() - static_cast<std::size_t>(i));
        std::swap(units[static_cast<std::size_t>(i)], units[j]);
        per[static_cast<std::size_t>(units[static_cast<std::size_t>(i)])] += r.unit;
      }
      for (int s = 0; s < n; ++s) {
        if (per[static_cast<std::size_t>(s)] > 0) chosen.push_back({s, per[static_cast<std::size_t>(s)]});
      }
      break;
    }
    case PlacementPolicy::kPacked:
    case PlacementPolicy::kNetworkAware: {
      if (const int s = best_single([](int, int) { return false; }); s >= 0) {
        chosen.push_back({s, r.gpus});
        break;
      }
      // Most usable GPUs first; among equals, group by group so whole servers of one group come
      // together.
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        if (u(a) != u(b)) return u(a) > u(b);
        return servers_[static_cast<std::size_t>(a)].group < servers_[static_cast<std::size_t>(b)].group;
      });
      fill(order);
      break;
    }
    case PlacementPolicy::kTopology: {
      std::vector<int> group_total(static_cast<std::size_t>(groups_), 0);
      for (int s = 0; s < n; ++s) group_total[static_cast<std::size_t>(servers_[static_cast<std::size_t>(s)].group)] += u(s);
      auto fuller = [&](int a, int b) {
        return group_total[static_cast<std::size_t>(servers_[static_cast<std::size_t>(a)].group)] <
               group_total[static_cast<std::size_t>(servers_[static_cast<std::size_t>(b)].group)];
      };
      if (const int s = best_single(fuller); s >= 0) {
        chosen.push_back({s, r.gpus});
        break;
      }
      // The group that holds the job on the fewest servers (ties: the fullest, then the lowest);
      // when none can, the groups with the most room first.
      std::vector<std::vector<int>> by_group(static_cast<std::size_t>(groups_));
      for (int s : order) by_group[static_cast<std::size_t>(servers_[static_cast<std::size_t>(s)].group)].push_back(s);
      int best = -1, best_servers = 0;
      for (int g = 0; g < groups_; ++g) {
        auto& members = by_group[static_cast<std::size_t>(g)];
        if (group_total[static_cast<std::size_t>(g)] < r.gpus) continue;
        std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return u(a) > u(b); });
        int covered = 0, servers = 0;
        for (int s : members) {
          if (covered >= r.gpus) break;
          covered += u(s);
          ++servers;
        }
        if (best < 0 || servers < best_servers ||
            (servers == best_servers && group_total[static_cast<std::size_t>(g)] < group_total[static_cast<std::size_t>(best)])) {
          best = g;
          best_servers = servers;
        }
      }
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const int ga = servers_[static_cast<std::size_t>(a)].group, gb = servers_[static_cast<std::size_t>(b)].group;
        if (best >= 0 && (ga == best) != (gb == best)) return ga == best;
        const int ta = group_total[static_cast<std::size_t>(ga)], tb = group_total[static_cast<std::size_t>(gb)];
        if (ga != gb) return ta != tb ? ta > tb : ga < gb;
        return u(a) > u(b);
      });
      fill(order);
      break;
    }
  }
  return take(chosen);
}

std::optional<Placement> GpuPool::place(const GpuRequest& r, PlacementPolicy policy, Rng& rng) const {
  return r.milli < kWhole ? place_share(r, policy, rng) : place_whole(r, policy, rng);
}

void GpuPool::allocate(const Placement& p) {
  for (int g : p.gpus) {
    const auto i = static_cast<std::size_t>(g);
    if (free_[i] == kWhole && !down_[i]) --whole_free_[static_cast<std::size_t>(server_of_[i])];
    free_[i] = static_cast<std::int16_t>(free_[i] - p.milli);
  }
  allocated_milli_ += static_cast<std::int64_t>(p.milli) * static_cast<std::int64_t>(p.gpus.size());
}

void GpuPool::release(const Placement& p) {
  for (int g : p.gpus) {
    const auto i = static_cast<std::size_t>(g);
    free_[i] = static_cast<std::int16_t>(free_[i] + p.milli);
    if (free_[i] == kWhole && !down_[i]) ++whole_free_[static_cast<std::size_t>(server_of_[i])];
  }
  allocated_milli_ -= static_cast<std::int64_t>(p.milli) * static_cast<std::int64_t>(p.gpus.size());
}

void GpuPool::set_down(int gpu, bool down) {
  const auto i = static_cast<std::size_t>(gpu);
  if (down_[i] == down) return;
  if (free_[i] == kWhole) whole_free_[static_cast<std::size_t>(server_of_[i])] += down ? -1 : 1;
  down_[i] = down;
  down_count_ += down ? 1 : -1;
}

int GpuPool::fragmented(int threshold) const {
  int out = 0;
  for (int w : whole_free_) {
    if (w < threshold) out += w;
  }
  return out;
}

}  // namespace cs::drv
