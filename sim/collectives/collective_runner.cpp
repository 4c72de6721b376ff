#include "sim/collectives/collective_runner.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"
#include "core/random.h"

namespace cs::coll {

using topo::LinkId;
using topo::NodeId;

NetworkLayout::NetworkLayout(const topo::Cluster& cluster) : cluster_(cluster), schedules_(cluster) {
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const auto& n = cluster.node(NodeId{i});
    if (n.kind == topo::NodeKind::kNvSwitch && n.reduction_bandwidth.value() > 0) {
      engines_.emplace_back(NodeId{i}, n.reduction_bandwidth);
    }
  }
}

std::vector<net::LinkCapacity> NetworkLayout::capacities() const {
  std::vector<net::LinkCapacity> caps;
  caps.reserve(cluster_.link_count() + engines_.size());
  for (std::uint32_t i = 0; i < cluster_.link_count(); ++i) {
    caps.push_back({cluster_.effective_bandwidth(LinkId{i}), cluster_.link(LinkId{i}).latency});
  }
  for (const auto& e : engines_) caps.push_back({e.second, Duration{0}});
  return caps;
}

std::optional<LinkId> NetworkLayout::reduction_engine(NodeId nvswitch) const {
  for (std::size_t k = 0; k < engines_.size(); ++k) {
    if (engines_[k].first == nvswitch) {
      return LinkId{static_cast<std::uint32_t>(cluster_.link_count() + k)};
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

struct CollectiveRunner::Run {
  CollectiveSpec spec;
  Schedule schedule;
  Protocol protocol;
  std::function<void(const CollectiveOutcome&)> on_done;
  CollectiveOutcome outcome;
  std::size_t phase = 0;
  std::size_t outstanding = 0;
  std::deque<std::vector<LinkId>> owned_paths;  // paths that are not in the router's cache
};

CollectiveRunner::CollectiveRunner(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                                   const NetworkLayout& layout)
    : sim_(sim), net_(net), router_(router), layout_(layout) {}

void CollectiveRunner::start(const CollectiveSpec& spec, Schedule schedule, Algorithm algorithm,
                             Protocol protocol, std::function<void(const CollectiveOutcome&)> on_done) {
  auto run = std::make_shared<Run>();
  run->spec = spec;
  run->schedule = std::move(schedule);
  run->protocol = protocol;
  run->on_done = std::move(on_done);
  run->outcome.start = sim_.now();
  run->outcome.algorithm = algorithm;
  run->outcome.protocol = protocol;
  run->outcome.flows = run->schedule.flow_count();
  start_phase(run);
}

void CollectiveRunner::start_phase(const std::shared_ptr<Run>& run) {
  const topo::Cluster& cluster = layout_.cluster();
  if (run->phase >= run->schedule.phases.size()) {
    // Nothing left (or nothing at all: one rank): the collective ends now.
    sim_.schedule_after(Duration{0}, sim::Phase::kCompletion, [this, run] {
      run->outcome.end = sim_.now();
      run->on_done(run->outcome);
    });
    return;
  }
  const Phase& phase = run->schedule.phases[run->phase];
  const topo::CollectiveModelParams& model = cluster.collective_model();
  const bool ll = run->protocol == Protocol::kLowLatency;

  struct Prepared {
    std::span<const LinkId> path;
    Duration latency;
    Bytes bytes;
  };
  std::vector<Prepared> prepared;
  prepared.reserve(phase.flows.size());
  Duration step{0};
  for (const PlannedFlow& pf : phase.flows) {
    std::span<const LinkId> path =
        router_.route(pf.src, pf.dst, hash_combine(run->spec.label, pf.channel));
    if (pf.through_reduction_engine) {
      const auto engine = layout_.reduction_engine(pf.dst);
      if (!engine) throw InternalError("NVLS flow to a switch without a reduction engine");
      auto& owned = run->owned_paths.emplace_back(path.begin(), path.end());
      owned.push_back(*engine);
      path = owned;
    }
    Duration latency{0};
    int worst = 0;
    for (LinkId l : path) {
      if (l.value < cluster.link_count()) {
        latency += cluster.link(l).latency;
        worst = std::max(worst, static_cast<int>(cluster.link(l).link_class));
      }
    }
    const auto& cls = cluster.link_class_params(static_cast<topo::LinkClass>(worst));
    step = std::max(step, (ll ? cls.ll_step_latency : cls.step_latency) + latency);
    const Bytes wire = ll ? Bytes{static_cast<std::int64_t>(std::ceil(
                                static_cast<double>(pf.bytes.value()) * model.ll_wire_factor))}
                          : pf.bytes;
    prepared.push_back({path, latency, wire});
  }
  const Duration launch = run->phase == 0 ? model.launch_latency : Duration{0};
  if (prepared.empty()) {
    ++run->phase;
    start_phase(run);
    return;
  }
  // Pipelines: the flows of one pipeline id start as one multi-path flow whose members all
  // deliver `steps x a` after the last byte left; the others start alone with the extra latency
  // that makes their delivery fall at the same point.
  const Duration tail = step * phase.steps + launch;
  std::map<std::uint32_t, std::vector<std::size_t>> pipelines;
  std::vector<std::size_t> singles;
  for (std::size_t i = 0; i < phase.flows.size(); ++i) {
    if (phase.flows[i].pipeline == kNoPipeline) singles.push_back(i);
    else pipelines[phase.flows[i].pipeline].push_back(i);
  }
  run->outstanding = singles.size() + pipelines.size();
  for (const auto& [id, members] : pipelines) {
    std::vector<std::span<const LinkId>> paths;
    paths.reserve(members.size());
    const Bytes bytes = prepared[members.front()].bytes;
    for (std::size_t i : members) {
      if (prepared[i].bytes != bytes) throw InternalError("pipeline members carry different sizes");
      paths.push_back(prepared[i].path);
      run->outcome.wire_bytes += bytes;
    }
    net_.start_pipeline(paths, bytes, tail, [this, run] { on_delivered(run); });
  }
  for (std::size_t i : singles) {
    const Prepared& p = prepared[i];
    run->outcome.wire_bytes += p.bytes;
    net_.start_flow(p.path, p.bytes, tail - p.latency, [this, run] { on_delivered(run); });
  }
}

void CollectiveRunner::on_delivered(const std::shared_ptr<Run>& run) {
  if (--run->outstanding > 0) return;
  ++run->phase;
  start_phase(run);
}

// ---------------------------------------------------------------------------------------------

CollectiveSimulator::CollectiveSimulator(const topo::Cluster& cluster)
    : cluster_(cluster), layout_(cluster), router_(cluster) {}

std::optional<CollectiveResult> CollectiveSimulator::run_fixed(const CollectiveSpec& spec,
                                                               Algorithm algorithm, Protocol protocol,
                                                               std::string* why_not,
                                                               std::vector<LinkActivity>* activity) {
  auto schedule = build_schedule(layout_.schedules(), spec, algorithm, why_not);
  if (!schedule) return std::nullopt;
  sim::Simulator sim;
  net::FlowNetwork net(sim, layout_.capacities());
  if (activity) net.enable_busy_intervals();
  CollectiveRunner runner(sim, net, router_, layout_);
  CollectiveOutcome outcome;
  bool done = false;
  runner.start(spec, std::move(*schedule), algorithm, protocol, [&](const CollectiveOutcome& o) {
    outcome = o;
    done = true;
  });
  sim.run();
  if (!done) throw InternalError("collective did not complete");
  CollectiveResult r;
  r.time = outcome.end - outcome.start;
  r.algorithm = algorithm;
  r.protocol = protocol;
  r.flows = outcome.flows;
  r.wire_bytes = outcome.wire_bytes;
  r.events = sim.events_executed();
  if (activity) {
    activity->clear();
    for (std::uint32_t i = 0; i < net.link_count(); ++i) {
      const auto st = net.link_stats(LinkId{i});
      if (st.bytes.value() == 0) continue;
      activity->push_back({LinkId{i}, st.bytes, st.busy, net.busy_intervals(LinkId{i})});
    }
  }
  return r;
}

CollectiveResult CollectiveSimulator::run(const CollectiveSpec& spec, const std::string& spec_origin,
                                          std::vector<LinkActivity>* activity) {
  std::vector<Algorithm> algorithms;
  if (spec.algorithm == Algorithm::kAuto) {
    algorithms = auto_candidates(layout_.schedules(), spec);
  } else {
    algorithms = {spec.algorithm};
  }
  std::optional<CollectiveResult> best;
  std::string why;
  for (Algorithm a : algorithms) {
    for (Protocol p : {Protocol::kSimple, Protocol::kLowLatency}) {
      // NCCL runs NVLS with the Simple protocol only.
      if (a == Algorithm::kNvls && p == Protocol::kLowLatency) continue;
      std::string reason;
      auto r = run_fixed(spec, a, p, &reason);
      if (!r) {
        if (why.empty()) why = reason;
        break;  // the other protocol does not apply either
      }
      if (!best || r->time < best->time) best = r;
    }
  }
  if (!best) throw ConfigError("", spec_origin, why.empty() ? "no algorithm applies" : why);
  if (activity) run_fixed(spec, best->algorithm, best->protocol, nullptr, activity);
  return *best;
}

}  // namespace cs::coll
