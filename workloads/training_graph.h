// One training iteration of a model under a parallel plan, as a TaskGraph.
//
// Per rank (grid position dp, pp, cp, tp), for every micro-batch and every transformer block (or
// CNN layer) of its pipeline stage:
//   forward   the block's GEMMs split around its tensor-parallel collectives (Megatron: two
//             all-reduces per block, or with sequence parallelism an all-gather before and a
//             reduce-scatter after each half), on the compute and TP streams; then the attention
//             core as one op (scores QK^T, softmax, dropout, context: with flash attention one
//             fused kernel; without it HBM-bound, the score tensor going through HBM 6.5 times
//             forward and 9.5 times backward with dropout, 4 and 7 without, attention_core_cost
//             in block_cost.h); then the memory-bound kernels (norms, bias + activation, dropout
//             + residual adds) as one op. Each op carries its own HBM bytes only (layer_cost.h);
//   backward  the recomputed forward (per the recompute mode, with its TP collectives under full
//             recompute; a partial recomputation of the scores runs inside the attention
//             backward), then the backward compute (2x forward) and its TP collectives;
//   context   with cp > 1, the attention core's exchange of keys and values over the CP group
//             (plan.cp_comm_type, Megatron-Core's --cp-comm-type): p2p runs Transformer Engine's
//             ring, the core in cp steps with each K/V transfer beside a step (and, in backward,
//             dK/dV passed on with the K/V); all_gather (Llama 3) all-gathers K/V before the core
//             and reduce-scatters dK/dV after its backward; a2a (Ulysses) exchanges Q, K, V and
//             the output by all-to-all; equations in docs/compute-model.md;
//   pipeline  activations sent to the next stage and gradients to the previous one (isend/irecv
//             on the PP stream), in GPipe, 1F1B, interleaved 1F1B or ZB-H1 order (ZB-H1: each
//             backward split into B, everything the previous stage waits for, and W, the
//             weight-gradient GEMMs, which stage s runs s micro-batches late);
//   experts   MoE blocks add an all-to-all dispatch and combine over the EP group, forward and
//             backward;
//   data      gradients are reduced over the DP group in buckets as they are produced
//             (all-reduce; reduce-scatter under ZeRO): after the last micro-batch's backward
//             (gradient accumulation; ZeRO-1), or after every micro-batch's under ZeRO-2/3,
//             which keep only their gradient shard (DeepSpeed, PyTorch FSDP); ZeRO-1/2 then
//             all-gather the updated parameters after the optimizer step; ZeRO-3 all-gathers
//             each unit's weights before its forward and again before its backward (unless
//             plan.reshard_after_forward is false: kept from the forward);
//   optimizer an elementwise pass over this rank's optimizer state once the reduction is done.
// The first stage also runs the embedding, the last the output head.
#pragma once

#include <string>
#include <vector>

#include "taskgraph/task_graph.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"
#include "workloads/rank_grid.h"

namespace cs::wl {

struct TrainingGraph {
  tg::TaskGraph graph;
  RankGrid grid;
  std::vector<int> stage_layers;  // pipeline units per stage
  int micro_batches = 0;
  // Graph rank -> grid rank (and so GPU index in rank order), for simulated then mirrored ranks.
  std::vector<int> grid_rank;
};

// The plan is validated first (validate_plan, plan_check.h: ConfigError naming `file` and the
// JSON path under `plan_path`). With `symmetry`, only one rank per pipeline stage is simulated
// (data-parallel replica 0, tensor- and context-parallel rank 0); the others are mirrored
// (task_graph.h): identical replicas and groups behave identically, and their collectives still
// move every GPU's bytes over the network. With expert parallelism the symmetries are the shifts
// that map expert-parallel groups onto expert-parallel groups, so the ranks of the first expert-
// parallel group (data- and context-parallel index below ep) are simulated in each stage.
// Without it, every rank is simulated.
TrainingGraph build_training_graph(const Model& model, const ParallelPlan& plan,
                                   const std::string& file, const std::string& plan_path,
                                   bool symmetry = false);

}  // namespace cs::wl
