// Executes a TaskGraph on the simulated cluster: per-rank streams, dependencies, collective
// rendezvous and point-to-point matching, compute times from the compute model, and every
// transfer on the shared flow network (so concurrent collectives contend for links).
//
// Semantics (task_graph.h): an op *arrives* when its (rank, stream) issues it (the graph's issue
// order: first in the stream, or the earliest-added ready op once the stream is free, or at once)
// and all its dependencies have finished; a compute or delay op starts on arrival; a collective starts when
// every member op has arrived; a send and its recv start when both have arrived. Per op the
// executor records arrival, start and end, from which reports derive waiting (start - arrival)
// and busy time. With symmetries (task_graph.h), each transfer also runs for its distinct
// images, except the images of a collective confined to one server that are themselves
// confined to other servers: they stay on those servers' internal links, which nothing else
// uses, so they would only repeat the original's time. `auto` collectives take the algorithm and protocol that an isolated simulation
// of the same collective finds fastest (cached per group, op and size), as NCCL's tuner decides
// from a static model rather than from the current congestion.
//
// Folded by a rotation of leaf blocks (topo::ServerSymmetry::block_rotation; network_fold.h), which
// the caller checked to be a symmetry of the job (rotation_is_symmetry): a transfer's images are
// N-element orbits of the rotation, of which the executor runs those leaving block 0
// (FoldRole::kOrbit); a collective's image runs as kOrbit when it lies in block 0, not at all in
// another single block (its image in block 0 stands for it), as kInvariant when the rotation maps
// it onto itself (a data-parallel group over every block; its schedule checked by
// coll::rotation_maps), and a collective inside one server, whose images are not replayed, as
// kOwnLinks. Anything else (an image across some blocks that the rotation moves, a storage read)
// marks the fold broken.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "sim/collectives/algorithm_tuner.h"
#include "sim/collectives/collective_runner.h"
#include "sim/compute/compute_model.h"
#include "taskgraph/task_graph.h"
#include "taskgraph/timeline.h"

namespace cs::rt {

// Whether the rotation, moved onto the ranks by `rank_gpus`, is one of the graph's symmetries:
// some symmetry k has rank_gpus[image(k, r)] = rotation.image(rank_gpus[r]) for every rank r,
// and k permutes the listed symmetries and the identity (RankSymmetries::permutes_symmetries:
// a job's data-parallel shifts do). Then the rotation maps every transfer's and collective's
// images onto images of the same op: the unfolded run onto itself. O(ranks + symmetries log
// symmetries) per candidate k.
bool rotation_is_symmetry(const tg::TaskGraph& graph, const std::vector<topo::NodeId>& rank_gpus,
                          const topo::BlockRotation& rotation);

class Executor {
 public:
  // `rank_gpus[r]` is the GPU that runs rank r, for the simulated and the mirrored ranks. The
  // graph and every reference must outlive the executor. `fold`: `net` is the quotient of the
  // switch exchanges (topo::ServerSymmetry::twin_orbits, sim/collectives/network_fold.h) or of
  // a rotation of leaf blocks (the header; fold->rotation()), on which every transfer runs; a
  // transfer it cannot fold marks it broken, and the caller runs again less folded.
  Executor(sim::Simulator& sim, net::FlowNetwork& net, topo::Router& router,
           const coll::NetworkLayout& layout, coll::AlgorithmTuner& tuner,
           const compute::ComputeModel& compute, const tg::TaskGraph& graph,
           std::vector<topo::NodeId> rank_gpus, coll::NetworkFold* fold = nullptr);

  // Storage devices that load ops read from (rank r reads from sources[r % n]); without any,
  // a graph with load ops is an error.
  void set_storage(std::vector<topo::NodeId> sources) { storage_ = std::move(sources); }

  // A what-if: rank `rank`'s compute ops take `factor` times as long (a straggler).
  void set_compute_slowdown(std::uint32_t rank, double factor);
  // Compute beside communication: while a rank has a collective or a transfer in flight, its
  // compute progresses `ComputeModel::overlap_slowdown` times slower (NCCL kernels take SMs and
  // HBM bandwidth). A compute op's remaining work is carried over each change, so an op slowed
  // for part of its run is slowed for that part only. On by default; off gives ideal overlap.
  void set_overlap_interference(bool on) { interference_ = on; }

  // Starts the graph now; run the simulator to execute it.
  void start();
  bool finished() const { return completed_ == graph_.size(); }
  const tg::Timeline& timeline() const { return records_; }
  // The end of the last op.
  SimTime end_time() const { return end_; }

 private:
  void arrive(tg::OpId id);
  void complete(tg::OpId id);
  void try_head(std::uint32_t queue);
  // An op's dependencies have all finished: issue it as the graph's issue order says.
  void on_ready(tg::OpId id);
  // The op of a (rank, stream) left it free (finished, or posted): the next may go.
  void release_queue(std::uint32_t queue);
  void start_collective(const std::vector<tg::OpId>& members);
  void start_p2p(tg::OpId send, tg::OpId recv);
  void start_load(tg::OpId id);
  void finish_compute(tg::OpId id);
  // A collective or transfer of `rank` begins (+1) or ends (-1): re-time its running compute.
  void comm_changed(std::uint32_t rank, int delta);
  void schedule_compute(tg::OpId id);
  double overlap_stretch(std::uint32_t rank) const;
  // One point-to-point transfer (a send/recv or a storage read) on the network; `schedule` is
  // its schedule, built here when null; `done` is the runner's completion callback itself (no
  // wrapper to allocate per transfer).
  void start_transfer(topo::NodeId from, topo::NodeId to, Bytes bytes, std::uint64_t label,
                      std::shared_ptr<const coll::Schedule>& schedule,
                      std::function<void(const coll::CollectiveOutcome&)> done);
  // The rank lists the graph's symmetries map `ranks` onto, `ranks` first, without repeats:
  // compared as sets for a collective's group (a group in another order is the same
  // collective), as sequences for a sender-receiver pair.
  std::vector<std::vector<std::uint32_t>> images(const std::vector<std::uint32_t>& ranks, bool as_set) const;
  std::vector<topo::NodeId> gpus_of(const std::vector<std::uint32_t>& ranks) const;
  std::uint32_t queue_of(const tg::Op& op) const {
    return op.rank * tg::kStreamCount + static_cast<std::uint32_t>(op.stream);
  }

  sim::Simulator& sim_;
  net::FlowNetwork& net_;
  topo::Router& router_;
  const coll::NetworkLayout& layout_;
  coll::AlgorithmTuner& tuner_;
  coll::CollectiveRunner runner_;
  const compute::ComputeModel& compute_;
  const tg::TaskGraph& graph_;
  std::vector<topo::NodeId> rank_gpus_;

  tg::Timeline records_;
  std::vector<std::uint32_t> waiting_deps_;
  std::vector<std::uint32_t> transfers_left_;  // per send or load op: its and its images' transfers in flight
  std::vector<std::uint32_t> dependents_begin_;
  std::vector<tg::OpId> dependents_;
  std::vector<std::vector<tg::OpId>> queues_;  // per (rank, stream), in graph order
  std::vector<std::uint32_t> heads_;  // stream_order: the next op's index in its queue
  // ready_first: per queue, the ready ops (earliest added first) and whether one is running.
  std::vector<std::vector<tg::OpId>> ready_;
  std::vector<bool> busy_;
  std::vector<bool> arrived_;
  std::vector<std::uint32_t> simulated_members_;  // per group
  std::vector<double> slowdown_;                  // per simulated rank
  // Interference of compute and communication (set_overlap_interference).
  struct RunningCompute {
    tg::OpId id;
    double remaining_ps;  // of undisturbed compute time
    double stretch;       // 1, or the overlap slowdown while communication runs
    SimTime since;
    sim::EventHandle done;
  };
  bool interference_ = true;
  std::vector<std::uint32_t> comm_active_;                 // per simulated rank
  std::vector<std::vector<RunningCompute>> running_;       // per simulated rank
  std::vector<topo::NodeId> storage_;
  // Per group: the images of its collectives that run, and how each stands for the unfolded
  // run on a folded network (kOrbit unless a rotation folds it).
  struct GroupImages {
    std::vector<std::vector<std::uint32_t>> lists;
    std::vector<coll::FoldRole> roles;
  };
  GroupImages group_images(const tg::ProcessGroup& group) const;
  std::map<std::uint32_t, GroupImages> group_images_;  // cache
  coll::NetworkFold* fold_ = nullptr;
  const topo::BlockRotation* rotation_ = nullptr;  // fold_'s, if a rotation folds the run
  // Cache of a sender-receiver pair's images (every micro-batch's transfer between two stages
  // has the same pair): the images as (sender, receiver), in images()' order, and the schedule
  // of each image's transfer of `bytes` (the pair's last size), built at its first run.
  struct PairImages {
    std::vector<std::array<std::uint32_t, 2>> pairs;
    std::vector<std::uint32_t> run;  // the indices of the pairs that run: all, or those leaving block 0
    Bytes bytes{-1};
    std::vector<std::shared_ptr<const coll::Schedule>> schedules;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, PairImages> pair_images_;
  std::map<std::uint64_t, std::vector<tg::OpId>> collective_arrivals_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, std::vector<tg::OpId>> sends_, recvs_;
  // Per (group, op, size): the algorithm and protocol, as NCCL tunes per communicator, and the
  // schedule of each of the collective's images (group_images_' order), built at its first run
  // and shared by every later one (every micro-batch's and layer's of the same size).
  struct GroupCollective {
    coll::TunedChoice choice;
    std::vector<std::shared_ptr<const coll::Schedule>> schedules;
  };
  std::map<std::tuple<std::uint32_t, CollectiveOp, std::int64_t>, GroupCollective> collectives_;
  std::size_t completed_ = 0;
  SimTime end_ = kTimeZero;
};

}  // namespace cs::rt
