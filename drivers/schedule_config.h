// A multi-job scheduling scenario, read from JSON (docs/scheduling.md, "The scenario file"): a
// cluster (a cluster file with its network, or a node list without one), job classes, a job
// stream, the queueing policy, the placement, checkpoints and failures.
// drivers/cluster_scheduler.h simulates it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/enum_names.h"
#include "core/long_duration.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

// Who runs next (every policy is gang scheduling: a job starts with all its GPUs or not at all).
//   fifo           arrival order; the head waits for room and blocks everyone behind it
//   sjf            shortest predicted run time first (the simulator's estimate), same blocking
//   easy_backfill  FIFO with EASY backfilling (Lifka 1995): the head gets a reservation at the
//                  earliest time enough GPUs free up; a later job may start now if it fits and
//                  either ends (by its prediction) before that time or leaves the head's GPUs
//   priority       highest priority first, FIFO within a priority; with preemption, a job that
//                  does not fit stops running jobs of lower priority (most recently started
//                  first) until it does
enum class QueuePolicy { kFifo, kSjf, kEasyBackfill, kPriority };
inline constexpr EnumName<QueuePolicy> kQueuePolicyNames[] = {{QueuePolicy::kFifo, "fifo"},
                                                              {QueuePolicy::kSjf, "sjf"},
                                                              {QueuePolicy::kEasyBackfill, "easy_backfill"},
                                                              {QueuePolicy::kPriority, "priority"}};

// Which free GPUs a job gets (docs/scheduling.md, "Placement").
//   first_fit      the lowest-numbered free GPUs
//   packed         fewest servers (servers with the most free GPUs first), then fewest leaf
//                  groups as the tie-break; blind to the network beyond that greedy tie-break
//   topology       leaf- and rail-aligned: the job goes under one leaf group when any can hold it
//                  (the one that holds it on the fewest servers, then the fullest), else over the
//                  groups with the most room first; servers with the most free GPUs first, GPUs in
//                  rail order; a job that fits one server takes the fullest server that holds it,
//                  in the fullest group
//   random         uniformly random free GPUs (seeded)
//   network_aware  the candidates of packed and topology, each timed with the flow model against
//                  the running jobs' traffic; the fastest predicted wins
enum class PlacementPolicy { kFirstFit, kPacked, kTopology, kRandom, kNetworkAware };
inline constexpr EnumName<PlacementPolicy> kPlacementPolicyNames[] = {{PlacementPolicy::kFirstFit, "first_fit"},
                                                                      {PlacementPolicy::kPacked, "packed"},
                                                                      {PlacementPolicy::kTopology, "topology"},
                                                                      {PlacementPolicy::kRandom, "random"},
                                                                      {PlacementPolicy::kNetworkAware, "network_aware"}};

// A training job class: a model and a parallel plan whose data parallelism grows with the job's
// GPUs (weak scaling): the plan's global_batch is per data-parallel replica.
struct JobClass {
  std::string name;
  std::string model;  // resolved path or bundled name
  wl::ParallelPlan plan;
  std::string where;  // JSON path
};

// A positive-valued distribution of durations (seconds) or sizes.
struct ValueDistribution {
  enum class Kind { kConstant, kExponential, kLognormal, kChoice } kind = Kind::kConstant;
  double value = 0;                       // constant, or the mean of the exponential
  double median = 0, sigma = 0;           // lognormal
  std::vector<double> choices, weights;   // choice
};

struct SyntheticJobs {
  double rate = 0;  // arrivals per second (Poisson)
  std::int64_t count = 0;
  ValueDistribution gpus;                 // GPUs per job (rounded; choice of integers)
  std::optional<ValueDistribution> duration;    // seconds, for jobs without a class
  std::optional<ValueDistribution> iterations;  // for jobs of a class
  std::vector<std::string> classes;       // drawn uniformly when several
  int users = 1;
  std::uint64_t seed = 1;
};

enum class TraceFormat { kClustersim, kAlibaba };
inline constexpr EnumName<TraceFormat> kTraceFormatNames[] = {{TraceFormat::kClustersim, "clustersim"},
                                                              {TraceFormat::kAlibaba, "alibaba"}};

struct JobStreamSpec {
  std::optional<SyntheticJobs> synthetic;
  std::string trace;  // resolved path
  TraceFormat format = TraceFormat::kClustersim;
  double time_scale = 1;      // arrival times multiplied by this
  std::int64_t limit = 0;     // first N GPU jobs (0: all)
  std::string where;
};

struct CheckpointSpec {
  LongDuration interval{0};  // of progress between checkpoints (0: none; a stop loses all work)
  LongDuration restart{0};   // added to a job's run each time it starts again
};

struct ScheduleFailures {
  LongDuration mtbf_per_gpu{0};  // 0: none
  LongDuration repair{0};
  std::uint64_t seed = 1;
};

struct ScheduleScenario {
  std::string file;
  std::string name;
  std::string cluster;  // a cluster file (with its network) ...
  std::vector<std::string> cluster_overrides;
  std::string nodes;    // ... or a node list (Alibaba v2023 openb_node_list CSV): no network
  double node_fraction = 1;  // keep this fraction of the list's GPU nodes, evenly spaced
  std::string profile;
  std::map<std::string, JobClass> classes;
  JobStreamSpec jobs;
  QueuePolicy policy = QueuePolicy::kFifo;
  bool preemption = false;
  PlacementPolicy placement = PlacementPolicy::kPacked;
  bool interference = true;  // jobs' traffic shares the network (a cluster file only)
  CheckpointSpec checkpoint;
  ScheduleFailures failures;
  std::uint64_t seed = 1;      // random placement
};

ScheduleScenario parse_schedule_scenario(const ConfigNode& root, const std::string& base_dir);
ScheduleScenario load_schedule_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace cs::drv
