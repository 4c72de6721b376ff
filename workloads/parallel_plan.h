// How a model is split over GPUs: the parallel plan and the training options.
//
//   DP x TP x PP x CP = number of GPUs; EP divides DP x CP (experts are sharded across the
//   data-parallel ranks, as Megatron does). Micro-batches per iteration per pipeline:
//   global_batch / (micro_batch x DP).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace cs::wl {

enum class ZeroStage { kNone = 0, kOptimizer = 1, kGradients = 2, kParameters = 3 };  // 3 = FSDP
// kZbH1: Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024 (arXiv:2401.10241), Sec. 3.1:
// 1F1B with every backward split into B (input gradient) and W (weight gradient), the W passes
// deferred into the cool-down (workloads/training_graph.h).
enum class PipelineSchedule { kGpipe, kOneFOneB, kInterleaved, kZbH1 };
// How context parallelism exchanges keys and values, Megatron-Core's --cp-comm-type
// (workloads/training_graph.h): kP2p the ring of Transformer Engine's AttnFuncWithCPAndKVP2P
// (Megatron-Core's default), kAllGather K and V all-gathered before attention (Llama 3, Dubey et
// al. 2024, arXiv:2407.21783, Sec. 3.3.2), kA2a heads exchanged by all-to-all (DeepSpeed-Ulysses,
// Jacobs et al. 2023, arXiv:2309.14509).
enum class CpCommType { kP2p, kAllGather, kA2a };
enum class Recompute { kNone, kSelective, kFull };
enum class Precision { kBf16, kFp16, kFp8 };
// What ZeRO-2/3 reduce-scatter and ZeRO-3 all-gathers at a time (workloads/memory.h): a layer
// (PyTorch FSDP, one unit per transformer block) or a module (DeepSpeed: one weight matrix).
enum class ZeroUnit { kLayer, kModule };
// Which tokens an expert over its capacity drops (Megatron-Core --moe-token-drop-policy): the
// lowest routing probabilities, or the latest in the sequence.
enum class MoeDropPolicy { kProbs, kPosition };

inline constexpr EnumName<PipelineSchedule> kPipelineScheduleNames[] = {
    {PipelineSchedule::kGpipe, "gpipe"}, {PipelineSchedule::kOneFOneB, "1f1b"}, {PipelineSchedule::kInterleaved, "interleaved"},
    {PipelineSchedule::kZbH1, "zb-h1"}};
inline constexpr EnumName<CpCommType> kCpCommTypeNames[] = {
    {CpCommType::kP2p, "p2p"}, {CpCommType::kAllGather, "all_gather"}, {CpCommType::kA2a, "a2a"}};
inline constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}};
// The precision of matrix work, named as the GPU catalog names its peaks.
inline constexpr EnumName<ZeroUnit> kZeroUnitNames[] = {{ZeroUnit::kLayer, "layer"}, {ZeroUnit::kModule, "module"}};
inline constexpr EnumName<MoeDropPolicy> kMoeDropPolicyNames[] = {{MoeDropPolicy::kProbs, "probs"}, {MoeDropPolicy::kPosition, "position"}};
inline constexpr EnumName<Precision> kPrecisionNames[] = {{Precision::kBf16, "bf16"}, {Precision::kFp16, "fp16"}, {Precision::kFp8, "fp8"}};

struct ParallelPlan {
  int dp = 1;   // data parallel
  int tp = 1;   // tensor parallel (Megatron style)
  int pp = 1;   // pipeline parallel
  int cp = 1;   // context parallel
  CpCommType cp_comm_type = CpCommType::kP2p;        // how CP exchanges K and V (Megatron-Core's default)
  int ep = 1;   // expert parallel (MoE only)
  bool sequence_parallel = false;                    // with TP: LayerNorm/dropout sharded over TP
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int virtual_stages = 1;                            // interleaved 1F1B: model chunks per GPU
  std::vector<int> layers_per_stage;                 // uneven split; empty = even
  ZeroStage zero = ZeroStage::kNone;
  ZeroUnit zero_unit = ZeroUnit::kLayer;             // the memory of ZeRO-2/3's buffers (memory.h)
  int micro_batch = 1;                               // samples per micro-batch
  int global_batch = 1;                              // samples per iteration (all DP ranks)
  int sequence_length = 2048;                        // tokens per sample (transformers)
  Recompute recompute = Recompute::kNone;
  // Fused (Flash) attention: the a x s x s score tensors are never stored; backward recomputes
  // the scores block by block (see workloads/layer_cost.h).
  bool flash_attention = false;
  Precision precision = Precision::kBf16;
  double dp_bucket_mib = 25;                         // gradient all-reduce bucket (DDP default 25 MiB)
  bool dp_overlap = true;                            // reduce buckets during the backward pass (else after it)
  bool tp_comm_overlap = false;                      // sequence-parallel AG/RS chunked beside the GEMMs (TE userbuffers)
  bool overlap_param_gather = false;                 // ZeRO-1/2: all-gather updated weights during the next forward
  bool reshard_after_forward = true;                 // ZeRO-3: free gathered weights after the forward (else keep them for the backward)
  int zero_prefetch = 1;                             // ZeRO-3: units whose all-gather is issued ahead of the one running
  // Hybrid sharding (PyTorch FSDP HYBRID_SHARD / HSDP, DeepSpeed MiCS): ZeRO shards over groups of
  // zero_shard consecutive data-parallel (x context) ranks and replicates across the groups; 0 =
  // shard over all of them.
  int zero_shard = 0;
  int grad_reduce_bytes = 2;                         // bytes per gradient value reduced: 2 (bf16) or 4 (fp32)
  // The fraction of reserved memory the caching allocator cannot use (fragmentation), 0 <= f < 1;
  // 0 assumes none (workloads/memory.h).
  double memory_fragmentation = 0;
  // With TP and no SP: each TP rank sends 1/t of an activation across a pipeline cut and the
  // receiver all-gathers it over TP (Megatron-LM's default scatter/gather optimization).
  bool pp_scatter_gather = true;
  // Rank order, innermost first: which parallel dimension varies fastest across GPU ranks.
  std::vector<std::string> order = {"tp", "cp", "pp", "dp"};

  // Mixture of experts as Megatron-Core routes it (workloads/block_shape.h):
  //   moe_capacity_factor   > 0: each GPU sends at most ceil(f k T_r / E) tokens to an expert
  //                         and drops the rest (--moe-expert-capacity-factor); 0: dropless (the
  //                         default, as Megatron-Core's)
  //   moe_pad_to_capacity   with a capacity factor: every expert gets exactly its capacity
  //                         (--moe-pad-expert-input-to-capacity)
  //   moe_token_drop_policy which tokens a full expert drops (--moe-token-drop-policy): probs or
  //                         position; as many either way, so no cost differs
  //   moe_load_imbalance    max/mean tokens per expert, >= 1; 1 assumes balanced routing
  double moe_capacity_factor = 0;
  bool moe_pad_to_capacity = false;
  MoeDropPolicy moe_token_drop_policy = MoeDropPolicy::kProbs;
  double moe_load_imbalance = 1;

  // Input data read from the cluster's storage per sample, before the first stage's forward
  // (two micro-batches prefetched); 0 when the data is already local.
  std::int64_t data_bytes_per_sample = 0;

  int gpus() const { return dp * tp * pp * cp; }
  // The ranks ZeRO shards over: zero_shard, or every data-parallel (x context) rank.
  int shard_ways() const { return zero_shard > 0 ? zero_shard : dp * cp; }
  bool hybrid_sharding() const { return shard_ways() < dp * cp; }
  int micro_batches() const { return global_batch / (micro_batch * dp); }
};

}  // namespace cs::wl
