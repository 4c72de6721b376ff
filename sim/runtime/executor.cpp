#include "sim/runtime/executor.h"

#include "core/errors.h"
#include "core/random.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <set>
#include <unordered_map>

namespace cs::rt {
namespace {

// `cache[key]`, computed by `compute()` the first time it is asked for.
template <class Map, class Key, class Compute>
const typename Map::mapped_type& cached(Map& cache, const Key& key, Compute compute) {
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, compute()).first;
  return it->second;
}

}  // namespace

bool rotation_is_symmetry(const tg::TaskGraph& graph, const std::vector<topo::NodeId>& rank_gpus,
                          const topo::BlockRotation& rotation) {
  const tg::RankSymmetries& symmetries = graph.symmetries();
  if (rank_gpus.empty() || symmetries.empty()) return false;
  std::unordered_map<std::uint32_t, std::uint32_t> rank_of;
  rank_of.reserve(rank_gpus.size());
  for (std::uint32_t r = 0; r < rank_gpus.size(); ++r) rank_of.emplace(rank_gpus[r].value, r);
  const auto target = rank_of.find(rotation.image(rank_gpus[0]).value);
  if (target == rank_of.end()) return false;
  for (std::size_t k = 0; k < symmetries.size(); ++k) {
    if (symmetries.image(k, 0) != target->second || !symmetries.permutes_symmetries(k)) continue;
    bool all = true;
    for (std::uint32_t r = 0; all && r < rank_gpus.size(); ++r) {
      all = rank_gpus[symmetries.image(k, r)] == rotation.image(rank_gpus[r]);
    }
    if (all) return true;
  }
  return false;
}

Executor::Executor(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
                   const coll::NetworkLayout& layout, coll::AlgorithmTuner& tuner,
                   const compute::ComputeModel& compute, const tg::TaskGraph& graph,
                   std::vector<topo::NodeId> rank_gpus, coll::NetworkFold* fold)
    : sim_(sim),
      net_(net),
      router_(router),
      layout_(layout),
      tuner_(tuner),
      runner_(sim, net, router, layout, true, fold),
      compute_(compute),
      graph_(graph),
      rank_gpus_(std::move(rank_gpus)),
      fold_(fold),
      rotation_(fold ? fold->rotation() : nullptr) {
  if (rank_gpus_.size() != graph.all_ranks()) {
    throw InternalError("Executor: " + std::to_string(rank_gpus_.size()) + " GPUs for " +
                        std::to_string(graph.all_ranks()) + " ranks");
  }
  for (std::uint32_t g = 0; g < graph.groups().size(); ++g) simulated_members_.push_back(graph.simulated_members(g));
  const std::size_t n = graph.size();
  records_.assign(n, tg::OpRecord{});
  waiting_deps_.assign(n, 0);
  transfers_left_.assign(n, 0);
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
  comm_active_.assign(graph.ranks(), 0);
  running_.assign(graph.ranks(), {});
  queues_.assign(static_cast<std::size_t>(graph.ranks()) * tg::kStreamCount, {});
  heads_.assign(queues_.size(), 0);
  ready_.assign(queues_.size(), {});
  busy_.assign(queues_.size(), false);
  for (tg::OpId id = 0; id < n; ++id) queues_[queue_of(graph.op(id))].push_back(id);
}

void Executor::set_compute_slowdown(std::uint32_t rank, double factor) {
  if (rank >= graph_.ranks() || !(factor > 0)) throw InternalError("Executor: bad compute slowdown");
  slowdown_.resize(graph_.ranks(), 1.0);
  slowdown_[rank] = factor;
}

void Executor::start() {
  if (graph_.issue_order() == tg::IssueOrder::kStreamOrder) {
    for (std::uint32_t q = 0; q < queues_.size(); ++q) try_head(q);
    return;
  }
  for (tg::OpId id = 0; id < graph_.size(); ++id) {
    if (waiting_deps_[id] == 0) on_ready(id);
  }
  for (std::uint32_t q = 0; q < queues_.size(); ++q) try_head(q);
}

void Executor::try_head(std::uint32_t q) {
  if (graph_.issue_order() == tg::IssueOrder::kReadyFirst) {
    if (busy_[q] || ready_[q].empty()) return;
    std::pop_heap(ready_[q].begin(), ready_[q].end(), std::greater<>());
    const tg::OpId id = ready_[q].back();
    ready_[q].pop_back();
    busy_[q] = true;
    arrive(id);
    return;
  }
  if (graph_.issue_order() != tg::IssueOrder::kStreamOrder || heads_[q] >= queues_[q].size()) return;
  const tg::OpId id = queues_[q][heads_[q]];
  if (waiting_deps_[id] == 0 && !arrived_[id]) arrive(id);
}

void Executor::on_ready(tg::OpId id) {
  const std::uint32_t q = queue_of(graph_.op(id));
  switch (graph_.issue_order()) {
    case tg::IssueOrder::kStreamOrder:
      if (heads_[q] < queues_[q].size() && queues_[q][heads_[q]] == id) arrive(id);
      break;
    case tg::IssueOrder::kReadyFirst:  // the caller fills the stream (try_head)
      ready_[q].push_back(id);
      std::push_heap(ready_[q].begin(), ready_[q].end(), std::greater<>());
      break;
    case tg::IssueOrder::kDependencies:
      arrive(id);
      break;
  }
}

void Executor::release_queue(std::uint32_t q) {
  ++heads_[q];
  busy_[q] = false;
  try_head(q);
}

void Executor::arrive(tg::OpId id) {
  arrived_[id] = true;
  const tg::Op& op = graph_.op(id);
  tg::OpRecord& rec = records_[id];
  rec.arrival = sim_.now();
  switch (op.kind) {
    case tg::OpKind::kCompute: {
      rec.start = sim_.now();
      const auto& gpu = layout_.cluster().gpu_spec(rank_gpus_[op.rank]);
      Duration d = compute_.time(gpu, op.compute_class, op.flops, op.bytes, graph_.gemm_mix_of(op));
      if (!slowdown_.empty() && slowdown_[op.rank] != 1.0) d = duration_from_seconds(to_seconds(d) * slowdown_[op.rank]);
      const double stretch = comm_active_[op.rank] > 0 ? overlap_stretch(op.rank) : 1.0;
      running_[op.rank].push_back({id, static_cast<double>(d.count()), stretch, sim_.now(), {}});
      schedule_compute(id);
      break;
    }
    case tg::OpKind::kLoad:
      rec.start = sim_.now();
      start_load(id);
      break;
    case tg::OpKind::kDelay:
      rec.start = sim_.now();
      sim_.schedule_after(op.duration, sim::Phase::kCompletion, [this, id] { complete(id); });
      break;
    case tg::OpKind::kCollective: {
      auto& members = collective_arrivals_[op.instance];
      members.push_back(id);
      if (members.size() == simulated_members_[op.group]) {  // mirrored ranks arrive with them
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
      release_queue(queue_of(op));
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

std::vector<std::vector<std::uint32_t>> Executor::images(const std::vector<std::uint32_t>& ranks, bool as_set) const {
  auto key = [&](std::vector<std::uint32_t> v) {
    if (as_set) std::sort(v.begin(), v.end());
    return v;
  };
  std::vector<std::vector<std::uint32_t>> out{ranks};
  std::set<std::vector<std::uint32_t>> seen{key(ranks)};
  const tg::RankSymmetries& symmetries = graph_.symmetries();
  // A set's images: those of the symmetries that stand for them all, in order (the others
  // repeat one of theirs); a sequence's: every symmetry's.
  std::vector<std::size_t> asked;
  if (as_set) {
    asked = symmetries.set_image_representatives(ranks);
  } else {
    asked.resize(symmetries.size());
    std::iota(asked.begin(), asked.end(), std::size_t{0});
  }
  for (const std::size_t k : asked) {
    std::vector<std::uint32_t> image;
    image.reserve(ranks.size());
    for (std::uint32_t r : ranks) image.push_back(symmetries.image(k, r));
    if (seen.insert(key(image)).second) out.push_back(std::move(image));
  }
  return out;
}

std::vector<topo::NodeId> Executor::gpus_of(const std::vector<std::uint32_t>& ranks) const {
  std::vector<topo::NodeId> g;
  g.reserve(ranks.size());
  for (std::uint32_t r : ranks) g.push_back(rank_gpus_[r]);
  return g;
}

void Executor::start_collective(const std::vector<tg::OpId>& members) {
  const tg::Op& first = graph_.op(members.front());
  const tg::ProcessGroup& group = graph_.groups()[first.group];
  coll::CollectiveSpec spec;
  spec.op = first.collective;
  spec.size = first.bytes;
  spec.label = first.instance;
  spec.ranks = gpus_of(group.ranks);
  const auto key = std::make_tuple(first.group, first.collective, first.bytes.value());
  auto it = collectives_.find(key);
  if (it == collectives_.end()) {
    spec.algorithm = first.algorithm;
    it = collectives_.emplace(key, GroupCollective{tuner_.choose(spec, "/groups/" + std::to_string(first.group)), {}}).first;
  }
  GroupCollective& collective = it->second;
  const CollectiveAlgorithm algo = collective.choice.algorithm;
  const coll::Protocol proto = collective.choice.protocol;
  for (tg::OpId m : members) {
    records_[m].start = sim_.now();
    comm_changed(graph_.op(m).rank, +1);
  }
  // The collective and its images under the graph's symmetries run together; the members
  // finish when the last of them does.
  const GroupImages& images_of = cached(group_images_, first.group, [&] { return group_images(group); });
  const auto& lists = images_of.lists;
  if (lists.empty()) {  // a rotation's fold that does not apply (group_images)
    fold_->mark_broken();
    return;
  }
  auto remaining = std::make_shared<std::size_t>(lists.size());
  collective.schedules.resize(lists.size());
  for (std::size_t k = 0; k < lists.size(); ++k) {
    coll::CollectiveSpec s = spec;
    s.ranks = gpus_of(lists[k]);
    s.label = hash_combine(spec.label, k);
    if (!collective.schedules[k]) {  // a schedule does not depend on the label
      auto schedule = coll::build_schedule(layout_.schedules(), s, algo, nullptr);
      if (!schedule) throw InternalError("Executor: the chosen collective algorithm does not apply");
      collective.schedules[k] = std::make_shared<const coll::Schedule>(std::move(*schedule));
      // Checked once per schedule: the rotation maps the flows of an image it maps onto itself.
      if (images_of.roles[k] == coll::FoldRole::kInvariant && !coll::rotation_maps(*collective.schedules[k], *rotation_)) {
        fold_->mark_broken();
      }
    }
    runner_.start(std::move(s), collective.schedules[k], algo, proto, [this, members, remaining](const coll::CollectiveOutcome&) {
      if (--*remaining > 0) return;
      for (tg::OpId m : members) comm_changed(graph_.op(m).rank, -1);
      for (tg::OpId m : members) complete(m);
    }, images_of.roles[k]);
  }
}

Executor::GroupImages Executor::group_images(const tg::ProcessGroup& group) const {
  // A collective confined to one server keeps its images on their own servers' internal links
  // (NVLink and NVSwitch), which no transfer of another server touches: those images need not
  // be replayed. Images that share a server with the original, or leave it, are.
  GroupImages out;
  out.lists = images(group.ranks, true);
  auto& kept = out.lists;
  const topo::Cluster& cluster = layout_.cluster();
  auto server_of = [&](const std::vector<std::uint32_t>& ranks) {
    const std::int32_t s = cluster.node(rank_gpus_[ranks[0]]).server;
    for (std::uint32_t r : ranks) {
      if (cluster.node(rank_gpus_[r]).server != s) return std::int32_t{-1};
    }
    return s;
  };
  const std::int32_t home = server_of(kept[0]);
  if (home >= 0) {
    std::erase_if(kept, [&](const std::vector<std::uint32_t>& l) {
      const std::int32_t s = server_of(l);
      return s >= 0 && s != home;
    });
  }
  out.roles.assign(kept.size(), coll::FoldRole::kOrbit);
  if (!rotation_) return out;
  // Folded by a rotation (the header). Nothing returned: the fold does not apply.
  if (home >= 0) {  // the original alone, on its own links
    if (kept.size() > 1) return {};
    out.roles[0] = coll::FoldRole::kOwnLinks;
    return out;
  }
  GroupImages folded;
  std::vector<std::uint32_t> gpus, moved;
  for (const std::vector<std::uint32_t>& l : kept) {
    gpus.clear();
    moved.clear();
    std::uint32_t block = rotation_->block(rank_gpus_[l[0]]);
    for (std::uint32_t r : l) {
      gpus.push_back(rank_gpus_[r].value);
      moved.push_back(rotation_->image(rank_gpus_[r]).value);
      if (rotation_->block(rank_gpus_[r]) != block) block = topo::BlockRotation::kFixed;
    }
    if (block != topo::BlockRotation::kFixed) {  // in one block: block 0's image stands for the others
      if (block != 0) continue;
      folded.lists.push_back(l);
      folded.roles.push_back(coll::FoldRole::kOrbit);
      continue;
    }
    std::sort(gpus.begin(), gpus.end());
    std::sort(moved.begin(), moved.end());
    if (gpus != moved) return {};  // across blocks, moved by the rotation
    folded.lists.push_back(l);
    folded.roles.push_back(coll::FoldRole::kInvariant);
  }
  return folded;
}

void Executor::start_transfer(topo::NodeId from, topo::NodeId to, Bytes bytes, std::uint64_t label,
                              std::shared_ptr<const coll::Schedule>& schedule,
                              std::function<void(const coll::CollectiveOutcome&)> done) {
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kSendRecv;
  spec.size = bytes;
  spec.ranks = {from, to};
  spec.label = label;
  if (!schedule) {
    schedule = std::make_shared<const coll::Schedule>(
        std::move(*coll::build_schedule(layout_.schedules(), spec, CollectiveAlgorithm::kDirect, nullptr)));
  }
  runner_.start(std::move(spec), schedule, CollectiveAlgorithm::kDirect, coll::Protocol::kSimple, std::move(done));
}

void Executor::start_p2p(tg::OpId send, tg::OpId recv) {
  const tg::Op& s = graph_.op(send);
  records_[send].start = records_[recv].start = sim_.now();
  comm_changed(s.rank, +1);
  comm_changed(s.peer, +1);
  auto it = pair_images_.find(std::make_pair(s.rank, s.peer));
  if (it == pair_images_.end()) {
    PairImages entry;
    for (const auto& image : images({s.rank, s.peer}, false)) entry.pairs.push_back({image[0], image[1]});
    // Folded by a rotation, the images leaving block 0 stand for theirs in the other blocks.
    for (std::uint32_t k = 0; k < entry.pairs.size(); ++k) {
      if (!rotation_ || rotation_->block(rank_gpus_[entry.pairs[k][0]]) == 0) entry.run.push_back(k);
    }
    it = pair_images_.emplace(std::make_pair(s.rank, s.peer), std::move(entry)).first;
  }
  PairImages& pair = it->second;
  if (pair.run.empty()) {  // no image leaves block 0: not the rotation's orbits
    fold_->mark_broken();
    return;
  }
  if (pair.bytes != s.bytes) {  // the schedules are of the transfer's size
    pair.bytes = s.bytes;
    pair.schedules.assign(pair.pairs.size(), nullptr);
  }
  transfers_left_[send] = static_cast<std::uint32_t>(pair.run.size());
  for (const std::uint32_t k : pair.run) {
    // Two op ids and `this`: the callback fits std::function's own storage, no allocation.
    start_transfer(rank_gpus_[pair.pairs[k][0]], rank_gpus_[pair.pairs[k][1]], s.bytes, hash_combine(s.tag, k),
                   pair.schedules[k], [this, send, recv](const coll::CollectiveOutcome&) {
                     if (--transfers_left_[send] > 0) return;
                     comm_changed(graph_.op(send).rank, -1);
                     comm_changed(graph_.op(send).peer, -1);
                     complete(send);
                     complete(recv);
                   });
  }
}

double Executor::overlap_stretch(std::uint32_t rank) const {
  if (!interference_) return 1.0;
  return compute_.overlap_slowdown(layout_.cluster().gpu_spec(rank_gpus_[rank]));
}

void Executor::schedule_compute(tg::OpId id) {
  auto& list = running_[graph_.op(id).rank];
  auto it = std::find_if(list.begin(), list.end(), [id](const RunningCompute& r) { return r.id == id; });
  const auto ps = static_cast<std::int64_t>(std::ceil(it->remaining_ps * it->stretch));
  it->done = sim_.schedule_after(Duration{ps}, sim::Phase::kCompletion, [this, id] { finish_compute(id); });
}

void Executor::finish_compute(tg::OpId id) {
  auto& list = running_[graph_.op(id).rank];
  std::erase_if(list, [id](const RunningCompute& r) { return r.id == id; });
  complete(id);
}

void Executor::comm_changed(std::uint32_t rank, int delta) {
  if (rank >= comm_active_.size()) return;  // a mirrored rank: no compute of its own
  const bool was = comm_active_[rank] > 0;
  comm_active_[rank] = static_cast<std::uint32_t>(static_cast<int>(comm_active_[rank]) + delta);
  const bool now = comm_active_[rank] > 0;
  if (was == now || running_[rank].empty()) return;
  const double stretch = now ? overlap_stretch(rank) : 1.0;
  for (RunningCompute& r : running_[rank]) {
    if (r.stretch == stretch) continue;
    const double elapsed = static_cast<double>((sim_.now() - r.since).count());
    r.remaining_ps = std::max(0.0, r.remaining_ps - elapsed / r.stretch);
    r.stretch = stretch;
    r.since = sim_.now();
    sim_.cancel(r.done);
    schedule_compute(r.id);
  }
}

void Executor::start_load(tg::OpId id) {
  const tg::Op& op = graph_.op(id);
  if (storage_.empty()) throw InternalError("Executor: a load op but no storage device");
  if (rotation_) {  // readers' sources (r % n) are no rotation's images
    fold_->mark_broken();
    return;
  }
  // The rank and its images under the symmetries each read their own share.
  const auto readers = images({op.rank}, false);
  transfers_left_[id] = static_cast<std::uint32_t>(readers.size());
  for (const auto& reader : readers) {
    const std::uint32_t r = reader[0];
    std::shared_ptr<const coll::Schedule> schedule;  // a load runs once: not kept
    start_transfer(storage_[r % storage_.size()], rank_gpus_[r], op.bytes, hash_combine(id, r), schedule, [this, id](const coll::CollectiveOutcome&) {
      if (--transfers_left_[id] == 0) complete(id);
    });
  }
}

void Executor::complete(tg::OpId id) {
  records_[id].end = sim_.now();
  if (sim_.now() > end_) end_ = sim_.now();
  ++completed_;
  const tg::Op& op = graph_.op(id);
  const std::uint32_t q = queue_of(op);
  const bool posted = op.kind == tg::OpKind::kSend || op.kind == tg::OpKind::kRecv;
  // Posted ops left their stream when they arrived. The stream is free before the dependents are
  // told, so that one on the same stream may go next. (Dependents come in increasing id, so a
  // ready_first stream filled as each arrives picks what it would pick among all of them.)
  if (!posted) {
    ++heads_[q];
    busy_[q] = false;
  }
  const bool ready_first = graph_.issue_order() == tg::IssueOrder::kReadyFirst;
  for (std::uint32_t k = dependents_begin_[id]; k < dependents_begin_[id + 1]; ++k) {
    const tg::OpId d = dependents_[k];
    if (--waiting_deps_[d] == 0) {
      on_ready(d);
      if (ready_first) try_head(queue_of(graph_.op(d)));
    }
  }
  if (!posted) try_head(q);
}

}  // namespace cs::rt
