// The network as the multi-job scheduler sees it (docs/scheduling.md, "Interference"): each
// running job's data-parallel gradient all-reduces, timed on the cluster's flow network where the
// job landed, alone or together with the jobs whose traffic shares links with it.
//
// A job's traffic per iteration is a set of all-reduce groups of S bytes each (nccl-tests' S): a
// pure data-parallel job one group of all its GPUs; tensor parallelism of t inside servers times
// data parallelism across them t groups, one per local rank (each on its own rail on a
// rail-optimized fabric). All groups of a job start together.
//
// Alone: the collective simulator's `auto` choice (NCCL's tuner) on the idle cluster (a job whose
// own groups share links: its groups simulated together).
// Together: the jobs of one component (jobs linked by sharing at least one link, transitively)
// communicate at once and share links max-min fairly at the level of jobs: job j runs at a level
// x_j <= 1 of its alone link rates, and takes T_alone / x_j (job_network.cpp states the
// progressive filling). Communicating at once is the pessimistic case: jobs whose communication
// phases interleave (Cassini, NSDI 2024) contend less. A job alone in its component gets its
// alone time.
//
// Cache: alone times and link loads by (GPUs, bytes); a component's solve is O(levels x its jobs'
// links), cheap enough to redo after every arrival and departure.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/units.h"
#include "sim/collectives/machine.h"
#include "topology/cluster.h"

namespace cs::drv {

struct JobTraffic {
  std::vector<std::vector<topo::NodeId>> groups;  // each in ring (rank) order
  Bytes bytes{0};                                 // per group, per iteration
};

// Bytes a link carries in one iteration of a job alone.
struct LinkLoad {
  topo::LinkId link;
  Bytes bytes{0};
};

class JobNetwork {
 public:
  // The machine must outlive this.
  explicit JobNetwork(const coll::Machine& machine);
  ~JobNetwork();
  JobNetwork(const JobNetwork&) = delete;
  JobNetwork& operator=(const JobNetwork&) = delete;

  // The job's communication time per iteration alone on the idle cluster.
  Duration alone(const JobTraffic& job);
  // Cluster links (topology LinkIds, not the flow network's virtual links) the job's traffic
  // loads, with the bytes of one iteration, in link order.
  const std::vector<LinkLoad>& links(const JobTraffic& job);
  // The communication time per iteration of each job while all of `jobs` run (same order).
  std::vector<Duration> together(std::span<const JobTraffic* const> jobs);

  std::uint64_t joint_runs() const;  // components of 2+ jobs solved, for benches and tests

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs::drv
