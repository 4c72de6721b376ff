// The scheduler's network model (drivers/job_network.h). How it is built:
//
// Alone. Each group of a job (2+ GPUs, S > 0) runs alone through the collective simulator with
// `auto`, which yields its time, the (algorithm, protocol) NCCL's tuner would pick, and the bytes
// of every flow-network link. Links past the cluster's (the NVSwitch reduction engines,
// sim/collectives/network_layout.h) are not cluster links and are left out of links(); a group's
// bytes do not depend on timing (routes are a function of (src, dst, label)), so a job's link
// loads are the sum of its groups'. A job whose groups share no link takes the slowest group's
// time; one whose groups share links (t groups of one job behind one leaf) runs its groups
// together, as a component of one job (below), since they contend with each other anyway.
//
// Together. Jobs are linked when their links() intersect; union-find over the jobs, with a hash
// map from link to the first job seen on it, finds the components in O(sum of |links()|). A
// component of one job takes its alone time. In a component of 2+ jobs every job communicates at
// once and the links are shared max-min fairly between jobs (job-level progressive filling):
// job j alone puts d_jl = b_jl / T_j on link l (b_jl its bytes there, T_j its alone time); at a
// common level x the unfrozen jobs put x d_jl; x rises until a link is full (sum of x_j d_jl =
// C_l, the flow network's usable capacity) or reaches 1 (a job cannot go faster than alone); the
// jobs on a full link freeze at that level; repeat. Then
//   T_j(together) = T_j / x_j.
// A ring's edges advance in lockstep, so a job's flows slow together: the level is per job, and
// a job with more flows on a link gets its share in proportion, as flow-level max-min gives it.
// Exact for bandwidth-bound phases that overlap entirely; the latency part of T_j is stretched
// too (pessimistic by at most that part: tests/scheduling/job_network_test.cpp compares it with
// the event simulation of the same jobs). Cost: O(levels x sum of |links()|) per component, no
// event simulation, so a scheduler can re-ask after every arrival and departure.
//
// Determinism. A job's key is a hash of its groups (GPU ids in rank order) and S; each group's
// ECMP label is hash(key, group index), the same alone and together, so a job keeps its paths
// when neighbours come and go, and different jobs hash differently. A component solves its jobs
// in key order, so neither the input order nor the caller's pointers change a result. A key collision (2^-64 per pair) would be caught: each cached job
// keeps its traffic and a mismatch is an InternalError.
#include "drivers/job_network.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/errors.h"
#include "core/random.h"
#include "sim/collectives/collective_runner.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/network_layout.h"
#include "sim/collectives/schedule.h"
#include "sim/engine/simulator.h"
#include "sim/network/flow_network.h"
#include "topology/router.h"

namespace cs::drv {

namespace {

// What a group runs with, chosen alone.
struct GroupChoice {
  bool runs = false;  // 2+ GPUs and S > 0; else time 0 and no links
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  coll::Protocol protocol = coll::Protocol::kSimple;
};

// A job as cached: its traffic (kept to check the key), choices, alone time and link loads.
struct Job {
  std::uint64_t key = 0;
  JobTraffic traffic;
  std::vector<GroupChoice> choices;
  Duration alone{0};
  std::vector<LinkLoad> links;  // cluster links only, by LinkId
};

std::uint64_t job_key(const JobTraffic& t) {
  std::uint64_t h = hash_combine(0x6a6f626e6574ULL, static_cast<std::uint64_t>(t.bytes.value()));
  for (const auto& group : t.groups) {
    h = hash_combine(h, group.size());
    for (topo::NodeId g : group) h = hash_combine(h, g.value);
  }
  return h;
}

bool same_traffic(const JobTraffic& a, const JobTraffic& b) {
  return a.bytes == b.bytes && a.groups == b.groups;
}

// The all-reduce of group `index` of `job`, labelled for ECMP.
coll::CollectiveSpec group_spec(const Job& job, std::size_t index) {
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = job.traffic.bytes;
  spec.ranks = job.traffic.groups[index];
  spec.algorithm = CollectiveAlgorithm::kAuto;
  spec.label = hash_combine(job.key, index);
  return spec;
}

// Union-find over job indices, by size, with path halving.
class Components {
 public:
  explicit Components(std::size_t n) : parent_(n), size_(n, 1) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
  }
  std::size_t find(std::size_t i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }
  void join(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (size_[a] < size_[b]) std::swap(a, b);
    parent_[b] = a;
    size_[a] += size_[b];
  }

 private:
  std::vector<std::size_t> parent_, size_;
};

}  // namespace

struct JobNetwork::Impl {
  explicit Impl(const coll::Machine& m) : machine(m), simulator(m), router(m.cluster) {
    router.set_server_twins_source([this] { return simulator.layout().server_twins(); });
  }

  const coll::Machine& machine;
  coll::CollectiveSimulator simulator;          // alone runs; its layout serves the joint runs too
  topo::Router router;                          // joint runs' routes (cached across runs)
  std::optional<net::FlowNetwork> net;          // joint runs' network, reset for each
  std::unordered_map<std::uint64_t, Job> jobs;  // by key; looked up, never iterated
  std::uint64_t joint_runs = 0;  // components of 2+ jobs solved

  const Job& job(const JobTraffic& traffic) {
    const std::uint64_t key = job_key(traffic);
    if (auto it = jobs.find(key); it != jobs.end()) {
      if (!same_traffic(it->second.traffic, traffic))
        throw InternalError("job network: two jobs hash to one key");
      return it->second;
    }
    Job j;
    j.key = key;
    j.traffic = traffic;
    measure_alone(j);
    return jobs.emplace(key, std::move(j)).first->second;
  }

  // Each group alone (auto), its links summed into the job's; the groups together when they
  // share a link.
  void measure_alone(Job& j) {
    const topo::Cluster& cluster = machine.cluster;
    std::vector<LinkLoad> all;
    j.choices.resize(j.traffic.groups.size());
    for (std::size_t g = 0; g < j.traffic.groups.size(); ++g) {
      if (j.traffic.groups[g].size() < 2 || j.traffic.bytes.value() <= 0) continue;
      std::vector<coll::LinkActivity> activity;
      const coll::CollectiveResult r = simulator.run(group_spec(j, g), "job network", &activity);
      j.choices[g] = {true, r.algorithm, r.protocol};
      j.alone = std::max(j.alone, r.time);
      for (const auto& a : activity) {
        if (a.link.value < cluster.link_count()) all.push_back({a.link, a.bytes});
      }
    }
    std::stable_sort(all.begin(), all.end(), [](const LinkLoad& a, const LinkLoad& b) {
      return a.link.value < b.link.value;
    });
    bool shared = false;  // a group's activity lists a link once: a repeat is another group's
    for (const LinkLoad& l : all) {
      if (!j.links.empty() && j.links.back().link.value == l.link.value) {
        j.links.back().bytes += l.bytes;
        shared = true;
      } else {
        j.links.push_back(l);
      }
    }
    if (shared) {
      const Job* self = &j;
      j.alone = run_together({&self, 1}).front();
    }
  }

  // Every running group of `component` (in that order) starts at t = 0 on one idle network with
  // its alone (algorithm, protocol); each job's time is its last group's end.
  std::vector<Duration> run_together(std::span<const Job* const> component) {
    sim::Simulator sim;
    if (net) {
      net->reset(sim);
    } else {
      net.emplace(sim, simulator.layout().capacities());
    }
    coll::CollectiveRunner runner(sim, *net, router, simulator.layout());
    std::vector<Duration> times(component.size(), Duration{0});
    for (std::size_t k = 0; k < component.size(); ++k) {
      const Job& j = *component[k];
      for (std::size_t g = 0; g < j.choices.size(); ++g) {
        const GroupChoice& c = j.choices[g];
        if (!c.runs) continue;
        coll::CollectiveSpec spec = group_spec(j, g);
        std::string why;
        auto schedule =
            coll::build_schedule(simulator.layout().schedules(), spec, c.algorithm, &why);
        if (!schedule)
          throw InternalError("job network: the alone run's algorithm does not apply together: " +
                              why);
        runner.start(spec, std::make_shared<const coll::Schedule>(std::move(*schedule)), c.algorithm, c.protocol,
                     [&times, k](const coll::CollectiveOutcome& o) {
                       times[k] = std::max(times[k], o.end - o.start);
                     });
      }
    }
    sim.run();
    return times;
  }

  // The times of one component of 2+ jobs (indices into `all`): job-level max-min (above).
  void component_times(std::span<const Job* const> all, std::vector<std::size_t> members,
                       std::vector<Duration>& out) {
    std::stable_sort(members.begin(), members.end(),
                     [&](std::size_t a, std::size_t b) { return all[a]->key < all[b]->key; });
    ++joint_runs;
    const std::vector<net::LinkCapacity>& caps = capacities();
    // (link, job, demand d_jl) of the links two or more jobs load: a link one job loads alone
    // never limits it (its demand is what it ran at alone, within the capacity).
    struct Entry {
      std::uint32_t link;
      std::uint32_t job;  // position in `members`
      double demand;      // bytes per second alone
    };
    // The shared links (marked by together()) in order of first appearance, each with its jobs
    // in key order: counted, then filled (compressed rows).
    std::vector<std::uint32_t> shared_links;
    std::vector<std::size_t> begin;
    for (std::size_t k = 0; k < members.size(); ++k) {
      for (const LinkLoad& l : all[members[k]]->links) {
        const std::uint32_t id = l.link.value;
        if (link_count[id] < 2) continue;
        if (link_slot_epoch[id] != epoch) {
          link_slot_epoch[id] = epoch;
          link_slot[id] = static_cast<std::uint32_t>(shared_links.size());
          shared_links.push_back(id);
          begin.push_back(0);
        }
        ++begin[link_slot[id]];
      }
    }
    std::size_t total = 0;
    for (std::size_t& b : begin) {
      const std::size_t n = b;
      b = total;
      total += n;
    }
    begin.push_back(total);
    std::vector<Entry> entries(total);
    std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
    for (std::size_t k = 0; k < members.size(); ++k) {
      const Job& j = *all[members[k]];
      const double t = to_seconds(j.alone);
      for (const LinkLoad& l : j.links) {
        const std::uint32_t id = l.link.value;
        if (link_count[id] < 2) continue;
        entries[fill[link_slot[id]]++] = {id, static_cast<std::uint32_t>(k), t > 0 ? static_cast<double>(l.bytes.value()) / t : 0.0};
      }
    }
    const std::size_t shared = begin.size() - 1;

    std::vector<double> level(members.size(), 1.0);
    std::vector<char> frozen(members.size(), 0);
    std::vector<char> constrained(members.size(), 0);  // on a shared link
    for (const Entry& e : entries) constrained[e.job] = 1;
    std::size_t left = 0;
    for (std::size_t k = 0; k < members.size(); ++k) {
      if (constrained[k]) {
        ++left;
        level[k] = 0;
      } else {
        frozen[k] = 1;  // runs as fast as alone
      }
    }
    while (left > 0) {
      // The highest common level every unfrozen job can reach.
      double x = 1;
      for (std::size_t l = 0; l < shared; ++l) {
        double used = 0, rising = 0;
        for (std::size_t i = begin[l]; i < begin[l + 1]; ++i) {
          const Entry& e = entries[i];
          if (frozen[e.job]) {
            used += level[e.job] * e.demand;
          } else {
            rising += e.demand;
          }
        }
        if (rising > 0) x = std::min(x, std::max(0.0, caps[entries[begin[l]].link].bandwidth.value() - used) / rising);
      }
      for (std::size_t k = 0; k < members.size(); ++k) {
        if (!frozen[k]) level[k] = x;
      }
      // Freeze the jobs of the links now full; at level 1 every job left.
      std::size_t froze = 0;
      for (std::size_t l = 0; l < shared; ++l) {
        double used = 0;
        bool any = false;
        for (std::size_t i = begin[l]; i < begin[l + 1]; ++i) {
          used += level[entries[i].job] * entries[i].demand;
          any |= !frozen[entries[i].job];
        }
        if (!any || (x < 1 && used < caps[entries[begin[l]].link].bandwidth.value() * (1 - 1e-12))) continue;
        for (std::size_t i = begin[l]; i < begin[l + 1]; ++i) {
          if (!frozen[entries[i].job]) {
            frozen[entries[i].job] = 1;
            ++froze;
          }
        }
      }
      if (x >= 1 || froze == 0) {
        for (std::size_t k = 0; k < members.size(); ++k) {
          if (!frozen[k]) {
            frozen[k] = 1;
            ++froze;
          }
        }
      }
      left -= froze;
    }
    for (std::size_t k = 0; k < members.size(); ++k) {
      const Job& j = *all[members[k]];
      out[members[k]] = level[k] >= 1 || j.alone.count() == 0
                            ? j.alone
                            : Duration{static_cast<Duration::rep>(std::ceil(static_cast<double>(j.alone.count()) / level[k]))};
    }
  }

  const std::vector<net::LinkCapacity>& capacities() {
    if (caps_.empty()) caps_ = simulator.layout().capacities();
    return caps_;
  }
  std::vector<net::LinkCapacity> caps_;
  // Per cluster link, for together(): the call (epoch) that last saw it, its first job there and
  // how many jobs load it; the slot of a shared link within a component.
  std::uint32_t epoch = 0;
  std::vector<std::uint32_t> link_epoch, link_first, link_count, link_slot_epoch, link_slot;

  std::vector<Duration> together(std::span<const JobTraffic* const> traffic) {
    std::vector<const Job*> all;
    all.reserve(traffic.size());
    for (const JobTraffic* t : traffic) all.push_back(&job(*t));
    // Components: each link joins every job on it to the first job seen there; per-link marks
    // (stamped with this call's epoch) count the jobs on each link.
    const std::size_t links = machine.cluster.link_count();
    if (link_epoch.size() < links) {
      link_epoch.assign(links, 0);
      link_first.assign(links, 0);
      link_count.assign(links, 0);
      link_slot_epoch.assign(links, 0);
      link_slot.assign(links, 0);
    }
    if (++epoch == 0) {  // wrapped: every mark is stale
      std::fill(link_epoch.begin(), link_epoch.end(), 0);
      std::fill(link_slot_epoch.begin(), link_slot_epoch.end(), 0);
      epoch = 1;
    }
    Components uf(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      for (const LinkLoad& l : all[i]->links) {
        const std::uint32_t id = l.link.value;
        if (link_epoch[id] != epoch) {
          link_epoch[id] = epoch;
          link_first[id] = static_cast<std::uint32_t>(i);
          link_count[id] = 1;
        } else {
          uf.join(i, link_first[id]);
          ++link_count[id];
        }
      }
    }
    std::vector<std::vector<std::size_t>> members(all.size());  // by root, in input order
    for (std::size_t i = 0; i < all.size(); ++i) members[uf.find(i)].push_back(i);
    std::vector<Duration> out(all.size(), Duration{0});
    for (std::size_t root = 0; root < all.size(); ++root) {
      if (members[root].size() == 1) out[root] = all[root]->alone;
      if (members[root].size() > 1) component_times(all, std::move(members[root]), out);
    }
    return out;
  }
};

JobNetwork::JobNetwork(const coll::Machine& machine) : impl_(std::make_unique<Impl>(machine)) {}
JobNetwork::~JobNetwork() = default;

Duration JobNetwork::alone(const JobTraffic& job) { return impl_->job(job).alone; }

const std::vector<LinkLoad>& JobNetwork::links(const JobTraffic& job) {
  return impl_->job(job).links;
}

std::vector<Duration> JobNetwork::together(std::span<const JobTraffic* const> jobs) {
  return impl_->together(jobs);
}

std::uint64_t JobNetwork::joint_runs() const { return impl_->joint_runs; }

}  // namespace cs::drv
