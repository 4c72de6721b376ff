// The size of a training checkpoint and the time to save it, read off the model, the plan and the
// cluster graph (docs/availability.md, "Checkpoint size and save time").
//
// Size: the model state the plan keeps, per parameter (workloads/memory.h): bf16 weights
// (kWeightBytesPerParameter = 2) and the optimizer's fp32 master weights, Adam momentum and
// variance (kOptimizerBytesPerParameter = 12): S = 14 P for P parameters. Gradients and
// activations are not saved.
// Writers: with a distributed optimizer (ZeRO-1 and above) every GPU of the job writes its own
// shard, and replicated weights are spread over the data-parallel ranks (Megatron-Core's fully
// parallel save): W = tp x pp x shard_ways GPUs; otherwise one data-parallel replica writes,
// W = tp x pp. Each writes S / W.
// Bandwidth: the smaller of
//   storage ingress   the sum of the line rates of the links into the cluster's storage devices
//                     (NodeKind::kStorage), and
//   writers' egress   W x each GPU's share of its server's fabric uplinks (the endpoint-leaf links,
//                     tier 1, leaving the servers the job runs on, over those servers' GPUs);
//                     not a bound when the servers have no such links (storage on the host).
// Save time T_s = S / bandwidth. Assumed: the fabric between writers and storage is not the
// bottleneck, the storage absorbs writes at its link rate (no disk or file-system limit), and
// the save blocks training.
#pragma once

#include <cstdint>
#include <optional>

#include "core/long_duration.h"
#include "core/units.h"
#include "topology/cluster.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

// S = 14 P.
Bytes checkpoint_bytes(const wl::Model& m);
// W above.
int checkpoint_writers(const wl::ParallelPlan& plan);

struct CheckpointWrite {
  Bytes size{0};
  int writers = 0;
  Bytes per_writer{0};
  int storage_devices = 0;
  Bandwidth storage_ingress{0};
  Bandwidth writers_egress{0};  // 0: not a bound
  Bandwidth bandwidth{0};       // the smaller bound
  LongDuration save_time{0};
};

// The write of a checkpoint of `m` under `plan` from the cluster's first plan.gpus() GPUs;
// nothing when the cluster has no storage device (or no link into one).
std::optional<CheckpointWrite> checkpoint_write(const topo::Cluster& cluster, const wl::Model& m, const wl::ParallelPlan& plan);

}  // namespace cs::drv
