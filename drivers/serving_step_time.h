// How long one serving iteration of a replica takes (docs/serving.md, "Iteration time"):
//
//   t = sum over blocks [ t_gemm + t_attention + t_elementwise + n_ar x t_all_reduce(T h 2 B)
//                         + n_a2a x t_all_to_all(T/ep k h 2 B) ] + t_head
//
// each compute term from compute::ComputeModel (the GEMM shape model and the roofline, or a
// calibration profile) over the per-GPU costs of workloads/inference_cost.h, and the TP
// all-reduce (and, with expert parallelism, the dispatch and combine all-to-alls) simulated by
// coll::CollectiveSimulator on the replica's own GPUs (NCCL's algorithm choice, the real links).
// Collective times are simulated on a grid of sizes (every power of two and its 1.5x) and
// interpolated linearly between them, which is exact for the latency-bandwidth form within one
// protocol.
//
// Assumed, and listed in the results: one kernel launch per op group (GEMMs, attention,
// elementwise) of a block, as with CUDA graphs; no CPU scheduling overhead between iterations;
// the compute and the all-reduces of a block do not overlap (vLLM runs them in sequence).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "calibration/profile_model.h"
#include "core/units.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/compute/compute_model.h"
#include "workloads/inference_cost.h"
#include "workloads/model.h"

namespace cs::drv {

struct StepBreakdown {
  Duration gemm{0}, attention{0}, elementwise{0}, communication{0}, head{0};
  Duration total() const { return gemm + attention + elementwise + communication + head; }
};

class ServingStepTime {
 public:
  // `replica_gpus[r]`: the GPUs of replica r in TP rank order (with pipeline stages: of one stage
  // of a replica, a TP group). The machine and model must outlive this object.
  ServingStepTime(const coll::Machine& machine, const wl::Model& model, wl::InferenceShard shard,
                  std::vector<std::vector<topo::NodeId>> replica_gpus,
                  std::shared_ptr<const cal::ProfileModel> profile);

  StepBreakdown step(int replica, const wl::InferenceBatch& batch);
  // A pipeline stage's share: blocks [first, first + count) and, when `head`, the LM head.
  StepBreakdown step(int replica, const wl::InferenceBatch& batch, int first, int count, bool head);
  // One point-to-point transfer of `size` from GPU `from` to GPU `to` (a pipeline's activations).
  Duration send_recv(topo::NodeId from, topo::NodeId to, Bytes size);
  // One collective of `size` (nccl-tests' S) on replica r's GPUs (0 on one GPU): the TP all-reduce,
  // or the expert dispatch and combine (all_to_all).
  Duration collective(CollectiveOp op, int replica, Bytes size);
  const hw::GpuSpec& gpu() const { return *gpu_; }
  const compute::ComputeModel& compute() const { return compute_; }

 private:
  Duration simulated(CollectiveOp op, int replica, Bytes size);  // cached per grid point
  Duration simulate(CollectiveOp op, std::vector<topo::NodeId> ranks, Bytes size);  // one run, alone

  const coll::Machine& machine_;
  const wl::Model& model_;
  wl::InferenceShard shard_;
  std::vector<std::vector<topo::NodeId>> replica_gpus_;
  const hw::GpuSpec* gpu_;
  compute::ComputeModel compute_;
  std::unique_ptr<coll::CollectiveSimulator> collectives_;
  std::map<std::tuple<CollectiveOp, int, std::int64_t>, Duration> cache_;  // (op, signature, bytes)
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::int64_t>, Duration> p2p_cache_;  // (from, to, bytes)
  std::map<std::string, int> signature_index_;  // placement signature -> first replica with it
  std::vector<int> signature_of_;               // replica -> the replica its collectives are timed on
};

}  // namespace cs::drv
