#include "sim/collectives/collective_runner.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"
#include "core/random.h"
#include "sim/collectives/nvls_pipeline.h"

namespace cs::coll {

using topo::LinkId;
using topo::NodeId;

struct CollectiveRunner::Run {
  CollectiveSpec spec;
  Schedule schedule;
  Protocol protocol;
  std::function<void(const CollectiveOutcome&)> on_done;
  CollectiveOutcome outcome;
  std::size_t round = 0;
  std::size_t outstanding = 0;
  std::deque<std::vector<LinkId>> owned_paths;  // paths that are not in the router's cache
};

CollectiveRunner::CollectiveRunner(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                                   const NetworkLayout& layout)
    : sim_(sim), net_(net), router_(router), layout_(layout) {}

void CollectiveRunner::start(const CollectiveSpec& spec, Schedule schedule, CollectiveAlgorithm algorithm,
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
  start_round(run);
}

void CollectiveRunner::start_round(const std::shared_ptr<Run>& run) {
  const topo::Cluster& cluster = layout_.cluster();
  if (run->round >= run->schedule.rounds.size()) {
    // Nothing left (or nothing at all: one rank): the collective ends now.
    sim_.schedule_after(Duration{0}, sim::Phase::kCompletion, [this, run] {
      run->outcome.end = sim_.now();
      run->on_done(run->outcome);
    });
    return;
  }
  const Round& round = run->schedule.rounds[run->round];
  const ProtocolParams& protocol = layout_.protocol();
  const bool ll = run->protocol == Protocol::kLowLatency;

  struct Prepared {
    std::span<const LinkId> path;
    Duration latency;
    Bytes bytes;
  };
  std::vector<Prepared> prepared;
  prepared.reserve(round.flows.size());
  Duration step{0};
  for (const PlannedFlow& pf : round.flows) {
    const std::uint64_t label = hash_combine(run->spec.label, pf.channel);
    std::span<const LinkId> path;
    if (const auto nic = layout_.schedules().nic_route(pf.src, pf.dst, pf.rail)) {
      // Between servers: through the rail's NICs (schedule.h, NicRoute); only the fabric
      // between the two NICs is chosen by the ECMP hash, salted with the GPU pair as well
      // (each NCCL connection has its own queue pair, so the flows of several GPU pairs
      // between two NICs hash apart).
      auto& owned = run->owned_paths.emplace_back();
      const auto append = [&](NodeId a, NodeId b, std::uint64_t l) {
        const auto seg = router_.route(a, b, l);
        owned.insert(owned.end(), seg.begin(), seg.end());
      };
      NodeId from = pf.src;
      if (nic->send_proxy.valid()) {
        append(from, nic->send_proxy, 0);
        from = nic->send_proxy;
      }
      append(from, nic->send_nic, 0);
      append(nic->send_nic, nic->recv_nic, hash_combine(hash_combine(label, pf.src.value), pf.dst.value));
      append(nic->recv_nic, pf.dst, 0);
      path = owned;
    } else {
      path = router_.route(pf.src, pf.dst, label);
    }
    if (pf.reduction_port.valid()) {
      const auto engine = layout_.reduction_engine(pf.dst, pf.reduction_port);
      if (!engine) throw InternalError("NVLS flow to a switch port without a reduction engine");
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
    const LinkClassProtocol& cls = protocol.of(static_cast<hw::LinkClass>(worst));
    const Duration own = round.latency == StepLatency::kNvls ? protocol.nvls_step_latency
                         : ll                                ? cls.ll_step_latency
                                                             : cls.step_latency;
    step = std::max(step, own + latency);
    const Bytes wire = ll ? Bytes{static_cast<std::int64_t>(std::ceil(
                                static_cast<double>(pf.bytes.value()) * protocol.ll_wire_factor))}
                          : pf.bytes;
    prepared.push_back({path, latency, wire});
  }
  const Duration base = round.latency == StepLatency::kNvls ? protocol.nvls_base_latency : protocol.launch_latency;
  const Duration launch = run->round == 0 ? base : Duration{0};
  if (prepared.empty()) {
    ++run->round;
    start_round(run);
    return;
  }
  // Pipelines: the flows of one pipeline id start as one multi-path flow whose members all
  // deliver `steps x a` after the last byte left; the others start alone with the extra latency
  // that makes their delivery fall at the same point.
  const Duration tail = step * round.steps + launch;
  std::map<std::uint32_t, std::vector<std::size_t>> pipelines;
  std::vector<std::size_t> singles;
  for (std::size_t i = 0; i < round.flows.size(); ++i) {
    if (round.flows[i].pipeline == kNoPipeline) singles.push_back(i);
    else pipelines[round.flows[i].pipeline].push_back(i);
  }
  run->outstanding = singles.size() + pipelines.size();
  for (const auto& [id, members] : pipelines) {
    std::vector<std::span<const LinkId>> paths;
    const Bytes bytes = prepared[members.front()].bytes;
    for (std::size_t i : members) {
      if (prepared[i].bytes != bytes) throw InternalError("pipeline members carry different sizes");
      for (std::uint32_t c = 0; c < round.flows[i].copies; ++c) {
        paths.push_back(prepared[i].path);
        run->outcome.wire_bytes += bytes;
      }
    }
    const Duration fill = round.latency == StepLatency::kNvls ? nvls_fill_time(run->spec, paths, bytes) : Duration{0};
    net_.start_pipeline(paths, bytes, tail + fill, [this, run] { on_delivered(run); });
  }
  for (std::size_t i : singles) {
    const Prepared& p = prepared[i];
    run->outcome.wire_bytes += p.bytes;
    net_.start_flow(p.path, p.bytes, tail - p.latency, [this, run] { on_delivered(run); });
  }
}

Duration CollectiveRunner::nvls_fill_time(const CollectiveSpec& spec, std::span<const std::span<const LinkId>> members,
                                          Bytes member_bytes) const {
  // The pipeline's rate per member on the idle network; in bytes of S per second, that rate x S /
  // member_bytes.
  const double member_rate = net_.idle_rate(members).value();
  if (!(member_rate > 0) || member_bytes.value() <= 0) return Duration{0};
  const ProtocolParams& protocol = layout_.protocol();
  const Bytes fill = nvls_fill_bytes(spec.size, protocol.nvls_channels, static_cast<int>(spec.ranks.size()),
                                     protocol.nvls_max_chunk);
  const double fill_per_member = static_cast<double>(fill.value()) * static_cast<double>(member_bytes.value()) /
                                 static_cast<double>(spec.size.value());
  return duration_from_seconds(fill_per_member / member_rate);
}

void CollectiveRunner::on_delivered(const std::shared_ptr<Run>& run) {
  if (--run->outstanding > 0) return;
  ++run->round;
  start_round(run);
}

}  // namespace cs::coll
