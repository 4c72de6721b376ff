#include "sim/runtime/executor.h"

#include "core/errors.h"

namespace cs::rt {

Executor::Executor(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                   const coll::NetworkLayout& layout, coll::CollectiveSimulator& chooser,
                   const compute::ComputeModel& compute, const tg::TaskGraph& graph,
                   std::vector<topo::NodeId> rank_gpus)
    : sim_(sim),
      net_(net),
      router_(router),
      layout_(layout),
      chooser_(chooser),
      runner_(sim, net, router, layout),
      compute_(compute),
      graph_(graph),
      rank_gpus_(std::move(rank_gpus)) {
  if (rank_gpus_.size() != graph.ranks()) {
    throw InternalError("Executor: " + std::to_string(rank_gpus_.size()) + " GPUs for " +
                        std::to_string(graph.ranks()) + " ranks");
  }
  const std::size_t n = graph.size();
  records_.assign(n, OpRecord{});
  waiting_deps_.assign(n, 0);
  arrived_.assign(n, false);
  // Dependents in CSR form.
  std::vector<std::uint32_t> count(n + 1, 0);
  for (tg::OpId id = 0; id < n; ++id) {
    waiting_deps_[id] = static_cast<std::uint32_t>(graph.deps(id).size());
    for (tg::OpId d : graph.deps(id)) ++count[d + 1];
  }
  for (std::size_t i = 0; i < n; ++i) count[i + 1] += count[i];
  dependents_begin_ = count;
  dependents_.resize(count[n]);
  for (tg::OpId id = 0; id < n; ++id) {
    for (tg::OpId d : graph.deps(id)) dependents_[count[d]++] = id;
  }
  queues_.assign(static_cast<std::size_t>(graph.ranks()) * tg::kStreamCount, {});
  heads_.assign(queues_.size(), 0);
  for (tg::OpId id = 0; id < n; ++id) queues_[queue_of(graph.op(id))].push_back(id);
}

void Executor::start() {
  for (std::uint32_t q = 0; q < queues_.size(); ++q) try_head(q);
}

void Executor::try_head(std::uint32_t q) {
  if (heads_[q] >= queues_[q].size()) return;
  const tg::OpId id = queues_[q][heads_[q]];
  if (waiting_deps_[id] == 0 && !arrived_[id]) arrive(id);
}

void Executor::arrive(tg::OpId id) {
  arrived_[id] = true;
  const tg::Op& op = graph_.op(id);
  OpRecord& rec = records_[id];
  rec.arrival = sim_.now();
  switch (op.kind) {
    case tg::OpKind::kCompute: {
      rec.start = sim_.now();
      const auto& gpu = layout_.cluster().gpu_spec(rank_gpus_[op.rank]);
      sim_.schedule_after(compute_.time(gpu, op.compute_class, op.flops, op.bytes), sim::Phase::kCompletion,
                          [this, id] { complete(id); });
      break;
    }
    case tg::OpKind::kDelay:
      rec.start = sim_.now();
      sim_.schedule_after(op.duration, sim::Phase::kCompletion, [this, id] { complete(id); });
      break;
    case tg::OpKind::kCollective: {
      auto& members = collective_arrivals_[op.instance];
      members.push_back(id);
      if (members.size() == graph_.groups()[op.group].ranks.size()) {
        const std::vector<tg::OpId> all = std::move(members);
        collective_arrivals_.erase(op.instance);
        start_collective(all);
      }
      break;
    }
    case tg::OpKind::kSend:
    case tg::OpKind::kRecv: {
      // Posted asynchronously (isend/irecv): the stream moves on at once; the op finishes with
      // its transfer, and its dependents wait for that.
      const std::uint32_t q = queue_of(op);
      ++heads_[q];
      try_head(q);
      const bool send = op.kind == tg::OpKind::kSend;
      const auto key = send ? std::make_tuple(op.rank, op.peer, op.tag) : std::make_tuple(op.peer, op.rank, op.tag);
      auto& mine = send ? sends_[key] : recvs_[key];
      auto& theirs = send ? recvs_[key] : sends_[key];
      if (theirs.empty()) {
        mine.push_back(id);
      } else {
        const tg::OpId other = theirs.front();
        theirs.erase(theirs.begin());
        start_p2p(send ? id : other, send ? other : id);
      }
      break;
    }
  }
}

void Executor::start_collective(const std::vector<tg::OpId>& members) {
  const tg::Op& first = graph_.op(members.front());
  const tg::ProcessGroup& group = graph_.groups()[first.group];
  coll::CollectiveSpec spec;
  spec.op = first.collective;
  spec.size = first.bytes;
  spec.label = first.instance;
  for (std::uint32_t r : group.ranks) spec.ranks.push_back(rank_gpus_[r]);
  coll::Algorithm algo = first.algorithm;
  coll::Protocol proto = coll::Protocol::kSimple;
  const auto key = std::make_tuple(first.group, first.collective, first.bytes.value());
  auto it = choices_.find(key);
  if (it == choices_.end()) {
    spec.algorithm = first.algorithm;
    const coll::CollectiveResult best = chooser_.run(spec, "/groups/" + std::to_string(first.group));
    it = choices_.emplace(key, std::make_pair(best.algorithm, best.protocol)).first;
  }
  algo = it->second.first;
  proto = it->second.second;
  auto schedule = coll::build_schedule(layout_.schedules(), spec, algo, nullptr);
  if (!schedule) throw InternalError("Executor: the chosen collective algorithm does not apply");
  for (tg::OpId m : members) records_[m].start = sim_.now();
  runner_.start(spec, std::move(*schedule), algo, proto, [this, members](const coll::CollectiveOutcome&) {
    for (tg::OpId m : members) complete(m);
  });
}

void Executor::start_p2p(tg::OpId send, tg::OpId recv) {
  const tg::Op& s = graph_.op(send);
  coll::CollectiveSpec spec;
  spec.op = coll::Op::kSendRecv;
  spec.size = s.bytes;
  spec.ranks = {rank_gpus_[s.rank], rank_gpus_[s.peer]};
  spec.label = s.tag;
  auto schedule = coll::build_schedule(layout_.schedules(), spec, coll::Algorithm::kDirect, nullptr);
  records_[send].start = records_[recv].start = sim_.now();
  runner_.start(spec, std::move(*schedule), coll::Algorithm::kDirect, coll::Protocol::kSimple,
                [this, send, recv](const coll::CollectiveOutcome&) {
                  complete(send);
                  complete(recv);
                });
}

void Executor::complete(tg::OpId id) {
  records_[id].end = sim_.now();
  if (sim_.now() > end_) end_ = sim_.now();
  ++completed_;
  const tg::Op& op = graph_.op(id);
  const std::uint32_t q = queue_of(op);
  const bool posted = op.kind == tg::OpKind::kSend || op.kind == tg::OpKind::kRecv;
  if (!posted) ++heads_[q];  // posted ops left the head of their stream when they arrived
  for (std::uint32_t k = dependents_begin_[id]; k < dependents_begin_[id + 1]; ++k) {
    const tg::OpId d = dependents_[k];
    if (--waiting_deps_[d] == 0) {
      const std::uint32_t dq = queue_of(graph_.op(d));
      if (heads_[dq] < queues_[dq].size() && queues_[dq][heads_[dq]] == d) arrive(d);
    }
  }
  if (!posted) try_head(q);
}

}  // namespace cs::rt
