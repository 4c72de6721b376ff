#include "workloads/training_graph.h"

#include <algorithm>
#include <map>

#include "core/errors.h"
#include "workloads/layer_cost.h"
#include "workloads/pipeline_split.h"
#include "workloads/plan_check.h"

namespace cs::wl {
namespace {

using tg::OpId;

// Emits the ranks' ops. One instance of this class builds one rank at a time; collective
// instance ids are (group, per-group sequence number), identical on every member because every
// member emits the same sequence of collectives on a group.
class Builder {
 public:
  Builder(const Model& model, const ParallelPlan& plan, TrainingGraph& out, std::vector<std::uint32_t> graph_rank_of)
      : model_(model), plan_(plan), out_(out), g_(out.graph), params_(cost_params(model, plan)), graph_rank_of_(std::move(graph_rank_of)) {
    const int units = pipeline_layers(model);
    for (int u = 0; u < units; ++u) unit_cost_.push_back(pipeline_layer_cost(model, u, params_));
    if (model.family == ModelFamily::kTransformer) {
      embedding_ = embedding_cost(model, params_);
      head_ = head_cost(model, params_);
      head_fwd_mix_ = mix(head_.gemms);
      head_bwd_mix_ = mix(backward_gemms(head_.gemms));
      // One pair of mixes per kind of block (a mixture's dense blocks and its blocks with experts
      // differ), shared by the units of that kind.
      for (const LayerCost& c : unit_cost_) {
        if (unit_mix_.empty() || c.gemms != unit_cost_[unit_mix_.size() - 1].gemms) {
          unit_mix_.push_back({mix(c.gemms), mix(backward_gemms(c.gemms))});
        } else {
          unit_mix_.push_back(unit_mix_.back());
        }
      }
    }
    chunk_units_ = chunk_layers(model, plan);
    make_groups();
  }

  // Emits the ops of grid rank `grid_rank`.
  void build_rank(int grid_rank) {
    rank_ = graph_rank_of_[static_cast<std::size_t>(grid_rank)];
    coord_ = out_.grid.coord(grid_rank);
    const int s = coord_.pp;
    const int m = out_.micro_batches;
    const int v = chunks();
    fwd_last_.assign(static_cast<std::size_t>(m * v), 0);
    fwd_first_.assign(static_cast<std::size_t>(m), 0);
    dp_ops_.clear();
    pending_grad_ = Bytes{0};
    if (plan_.schedule == PipelineSchedule::kGpipe) {
      for (int j = 0; j < m; ++j) forward(j, 0);
      for (int j = 0; j < m; ++j) backward(j, 0);
    } else if (plan_.schedule == PipelineSchedule::kOneFOneB) {
      // 1F1B: p - 1 - s warm-up forwards, then one forward and one backward in turn.
      const int warmup = std::min(m, plan_.pp - 1 - s);
      int f = 0, b = 0;
      for (; f < warmup; ++f) forward(f, 0);
      while (b < m) {
        if (f < m) forward(f++, 0);
        backward(b++, 0);
      }
    } else {
      // Interleaved 1F1B (Narayanan et al. SC21, Sec. 2.2): v model chunks per GPU; micro-batches
      // go in groups of p through chunk 0, then chunk 1, ...; backward in reverse chunk order.
      // Warm-up: 2 (p - s - 1) + (v - 1) p forwards, then one forward and one backward in turn.
      const int p = plan_.pp, total = m * v;
      auto fwd_step = [&](int i) { return std::pair{(i / (p * v)) * p + i % p, (i % (p * v)) / p}; };
      auto bwd_step = [&](int i) { return std::pair{(i / (p * v)) * p + i % p, v - 1 - (i % (p * v)) / p}; };
      const int warmup = std::min(total, 2 * (p - s - 1) + (v - 1) * p);
      int f = 0, b = 0;
      for (; f < warmup; ++f) forward(fwd_step(f).first, fwd_step(f).second);
      while (b < total) {
        if (f < total) {
          forward(fwd_step(f).first, fwd_step(f).second);
          ++f;
        }
        backward(bwd_step(b).first, bwd_step(b).second);
        ++b;
      }
    }
    optimizer();
  }

 private:
  OpId collective(std::uint32_t group, const char* name, CollectiveOp op, Bytes size, std::vector<OpId> deps) {
    const std::uint64_t seq = seq_[{rank_, group}]++;
    const std::uint64_t instance = (static_cast<std::uint64_t>(group) << 32) | seq;
    return g_.add_collective(rank_, group, name, op, size, instance, deps);
  }

  OpId compute(const char* name, Flops f, Bytes mem, tg::ComputeClass cls, std::vector<OpId> deps) {
    return g_.add_compute(rank_, name, f, mem, cls, deps);
  }

  // The graph's index of a list of GEMM shapes (kNoGemmMix for none).
  std::uint32_t mix(std::vector<tg::GemmShape> shapes) {
    return shapes.empty() ? tg::kNoGemmMix : g_.add_gemm_mix(std::move(shapes));
  }

  // A layer's forward (or backward) compute with its tensor-parallel collectives `c` (each of
  // `coll_bytes` on the TP group; none when tp = 1), as one chain after `deps`: the compute is cut
  // into n = max(1, c.all_reduce + c.reduce_scatter) equal GEMM-class ops (f/n FLOPs and mem/n
  // bytes each, the bytes split so that the n pieces add up to mem exactly; each stands for the
  // GEMM shapes of `gemm_mix`); op i is preceded by an all-gather when i < c.all_gather, and
  // followed by an all-reduce when i < c.all_reduce, else by a reduce-scatter when
  // i < c.all_reduce + c.reduce_scatter. Returns the chain's last op.
  //
  // With `overlap` (plan.tp_comm_overlap: Transformer Engine's userbuffer overlap behind
  // Megatron-Core's --tp-comm-overlap, for the sequence-parallel all-gathers and reduce-scatters of
  // the blocks' linear layers), a piece with an all-gather or a reduce-scatter runs in k = tp
  // chunks, as TE's ring exchange does: all-gather chunk j (S/k bytes) feeds GEMM chunk j (f/(n k)
  // FLOPs), the next all-gather chunk running beside it; reduce-scatter chunk j follows GEMM chunk
  // j, beside the next GEMM chunk. When a chunk's GEMM outlasts a chunk's collective, only the
  // first all-gather chunk and the last reduce-scatter chunk are exposed.
  OpId compute_around_tp_collectives(const char* name, Flops f, Bytes mem, const TpCollectives& c, Bytes coll_bytes,
              std::vector<OpId> deps, std::uint32_t gemm_mix = tg::kNoGemmMix, bool overlap = false) {
    const std::uint32_t tp = plan_.tp > 1 ? tp_group() : 0;
    const int n = std::max(1, c.all_reduce + c.reduce_scatter);
    if (overlap && plan_.tp > 1 && c.all_reduce == 0 && (c.all_gather > 0 || c.reduce_scatter > 0)) {
      return chunked_around_tp_collectives(name, f, mem, c, coll_bytes, std::move(deps), gemm_mix);
    }
    OpId last = 0;
    for (int i = 0; i < n; ++i) {
      if (plan_.tp > 1 && i < c.all_gather) deps = {collective(tp, "tp all-gather", CollectiveOp::kAllGather, coll_bytes, deps)};
      const Bytes piece{mem.value() * (i + 1) / n - mem.value() * i / n};
      last = compute(name, Flops{f.value() / n}, piece, tg::ComputeClass::kGemm, deps);
      if (gemm_mix != tg::kNoGemmMix) g_.set_gemm_mix(last, gemm_mix);
      deps = {last};
      if (plan_.tp > 1 && i < c.all_reduce) {
        last = collective(tp, "tp all-reduce", CollectiveOp::kAllReduce, coll_bytes, deps);
      } else if (plan_.tp > 1 && i < c.all_reduce + c.reduce_scatter) {
        last = collective(tp, "tp reduce-scatter", CollectiveOp::kReduceScatter, coll_bytes, deps);
      }
      deps = {last};
    }
    return last;
  }

  // compute_around_tp_collectives with overlap: per piece i (as there), k = tp chunks.
  OpId chunked_around_tp_collectives(const char* name, Flops f, Bytes mem, const TpCollectives& c, Bytes coll_bytes,
                                     std::vector<OpId> deps, std::uint32_t gemm_mix) {
    const std::uint32_t tp = tp_group();
    const int n = std::max(1, c.reduce_scatter);
    const int k = plan_.tp;
    const std::int64_t pieces = static_cast<std::int64_t>(n) * k;
    const Bytes chunk{coll_bytes.value() / k};
    OpId last = 0;
    std::int64_t done = 0;  // GEMM chunks emitted, for the exact split of `mem`
    for (int i = 0; i < n; ++i) {
      std::vector<OpId> gathered(static_cast<std::size_t>(k), 0);
      const bool gather = i < c.all_gather;
      if (gather) {
        std::vector<OpId> after = deps;
        for (int j = 0; j < k; ++j) {
          gathered[static_cast<std::size_t>(j)] = collective(tp, "tp all-gather", CollectiveOp::kAllGather, chunk, after);
          after = {gathered[static_cast<std::size_t>(j)]};
        }
      }
      OpId prev_gemm = 0, prev_rs = 0;
      for (int j = 0; j < k; ++j) {
        std::vector<OpId> in = gather ? std::vector<OpId>{gathered[static_cast<std::size_t>(j)]} : deps;
        if (j > 0) in.push_back(prev_gemm);
        const Bytes piece{mem.value() * (done + 1) / pieces - mem.value() * done / pieces};
        ++done;
        prev_gemm = compute(name, Flops{f.value() / static_cast<double>(pieces)}, piece, tg::ComputeClass::kGemm, in);
        if (gemm_mix != tg::kNoGemmMix) g_.set_gemm_mix(prev_gemm, gemm_mix);
        last = prev_gemm;
        if (i < c.reduce_scatter) {
          std::vector<OpId> rs_in{prev_gemm};
          if (j > 0) rs_in.push_back(prev_rs);
          prev_rs = collective(tp, "tp reduce-scatter", CollectiveOp::kReduceScatter, chunk, rs_in);
          last = prev_rs;
        }
      }
      deps = {last};
    }
    return last;
  }

  // The attention core of a unit as one op: flash attention is a fused, compute-bound kernel;
  // without it, batched GEMMs and softmax/dropout passes over the scores, bound by HBM (the
  // roofline takes the larger of the FLOP and the byte time). Nothing for CNN layers.
  std::vector<OpId> attention(const char* name, const LayerCost& c, Flops f, Bytes traffic, std::vector<OpId> deps) {
    if (f.value() <= 0 && traffic.value() <= 0) return deps;
    return {compute(name, f, traffic, c.attention_fused ? tg::ComputeClass::kAttention : tg::ComputeClass::kGemm, deps)};
  }

  // Norms, activations, dropout and residual adds of a unit: one memory-bound op.
  std::vector<OpId> elementwise(const char* name, Bytes traffic, std::vector<OpId> deps) {
    if (traffic.value() <= 0) return deps;
    return {compute(name, Flops{0}, traffic, tg::ComputeClass::kElementwise, deps)};
  }

  // An expert all-to-all after `deps`; returns the new dependency list.
  std::vector<OpId> moe_all_to_all(const char* name, const LayerCost& c, std::vector<OpId> deps) {
    if (plan_.ep <= 1 || c.moe_all_to_all_bytes.value() == 0) return deps;
    return {collective(ep_group(), name, CollectiveOp::kAllToAll, c.moe_all_to_all_bytes, deps)};
  }

  void forward(int j, int k) {
    const int s = coord_.pp;
    const auto [first, last] = units_of(s, k);
    std::vector<OpId> deps;
    if (!first_chunk(s, k)) deps.push_back(pp_recv(prev_rank(), first - 1, tag(j, 0, k), "recv activations"));
    if (first_chunk(s, k) && plan_.data_bytes_per_sample > 0) {
      // The loader keeps two micro-batches ahead: load j waits for forward j - 2 to start.
      std::vector<OpId> after;
      if (j >= 2) after.push_back(fwd_first_[static_cast<std::size_t>(j - 2)]);
      deps.push_back(g_.add_load(rank_, "load batch", Bytes{plan_.data_bytes_per_sample * plan_.micro_batch}, after));
    }
    const OpId next_op = static_cast<OpId>(g_.size());
    if (first_chunk(s, k) && model_.family == ModelFamily::kTransformer) {
      deps = gather_weights(embedding_, deps, j);
      deps = {compute_around_tp_collectives("embedding fwd", embedding_.forward, embedding_.gemm_forward_traffic, embedding_.tp_forward, embedding_.tp_collective_bytes, deps)};
    }
    for (int u = first; u < last; ++u) {
      const LayerCost& c = unit_cost_[static_cast<std::size_t>(u)];
      deps = gather_weights(c, deps, j);
      if (plan_.cp > 1 && c.cp_kv_bytes.value() > 0) {
        deps = {collective(cp_group(), "cp kv all-gather", CollectiveOp::kAllGather, c.cp_kv_bytes, deps)};
      }
      deps = moe_all_to_all("ep dispatch", c, deps);
      deps = {compute_around_tp_collectives("block fwd", c.forward - c.attention_forward, c.gemm_forward_traffic, c.tp_forward, c.tp_collective_bytes, deps, fwd_mix(u), plan_.tp_comm_overlap)};
      deps = attention("attention fwd", c, c.attention_forward, c.attention_forward_traffic, deps);
      deps = elementwise("elementwise fwd", c.elementwise_forward, deps);
      deps = moe_all_to_all("ep combine", c, deps);
    }
    if (last_chunk(s, k) && model_.family == ModelFamily::kTransformer) {
      deps = gather_weights(head_, deps, j);
      deps = {compute_around_tp_collectives("head fwd", head_.forward, head_.gemm_forward_traffic, head_.tp_forward, head_.tp_collective_bytes, deps, head_fwd_mix_)};
      deps = elementwise("head elementwise fwd", head_.elementwise_forward, deps);
    }
    if (!last_chunk(s, k)) g_.add_send(rank_, tg::Stream::kPp, next_rank(), pp_bytes(last - 1), tag(j, 0, k + (s + 1 == plan_.pp ? 1 : 0)), "send activations", deps);
    fwd_last_[static_cast<std::size_t>(j * chunks() + k)] = deps.back();
    if (first_chunk(s, k)) fwd_first_[static_cast<std::size_t>(j)] = next_op;
  }

  void backward(int j, int k) {
    const int s = coord_.pp;
    const auto [first, last] = units_of(s, k);
    const bool last_micro = j == out_.micro_batches - 1;
    // The gradients go to the DP reduction after the last micro-batch's backward (gradient
    // accumulation: DDP, Megatron, ZeRO-1), or after every micro-batch's under ZeRO-2/3, which
    // keep only their shard of the gradients: DeepSpeed reduces in every micro-step
    // (deepspeed/runtime/zero/stage_1_and_2.py, reduce_ready_partitions_and_remove_grads:
    // "partition_gradients or is_gradient_accumulation_boundary"; stage3.py unconditionally),
    // as PyTorch FSDP does outside no_sync().
    const bool reduce = last_micro || plan_.zero >= ZeroStage::kGradients;
    std::vector<OpId> deps{fwd_last_[static_cast<std::size_t>(j * chunks() + k)]};
    if (!last_chunk(s, k)) {
      deps.push_back(pp_recv(next_rank(), last - 1, tag(j, 1, k), "recv gradients"));
    }
    if (last_chunk(s, k) && model_.family == ModelFamily::kTransformer) {
      deps = elementwise("head elementwise bwd", head_.elementwise_backward, deps);
      if (plan_.reshard_after_forward) deps = gather_weights(head_, deps);
      deps = {compute_around_tp_collectives("head bwd", head_.backward, head_.gemm_backward_traffic, head_.tp_backward, head_.tp_collective_bytes, deps, head_bwd_mix_)};
      if (reduce) gradients_ready(head_.gradients, deps.back());
    }
    for (int u = last - 1; u >= first; --u) {
      const LayerCost& c = unit_cost_[static_cast<std::size_t>(u)];
      // ZeRO-3 gathers the unit's weights again for its backward, unless they were kept after
      // the forward (FSDP2 reshard_after_forward=False, FSDP1 SHARD_GRAD_OP; Llama 3).
      if (plan_.reshard_after_forward) deps = gather_weights(c, deps);
      // A full recomputation repeats the forward (with its TP collectives); a partial one (the
      // attention scores only) runs inside the attention backward.
      const bool full = plan_.recompute == Recompute::kFull;
      if (full) {
        deps = {compute_around_tp_collectives("block recompute", c.recompute - c.attention_recompute, c.gemm_recompute_traffic, c.tp_forward, c.tp_collective_bytes, deps, fwd_mix(u), plan_.tp_comm_overlap)};
        deps = attention("attention recompute", c, c.attention_recompute, c.attention_recompute_traffic, deps);
        deps = elementwise("elementwise recompute", c.elementwise_forward, deps);
      }
      deps = moe_all_to_all("ep combine bwd", c, deps);
      deps = elementwise("elementwise bwd", c.elementwise_backward, deps);
      deps = {compute_around_tp_collectives("block bwd", c.backward - c.attention_backward, c.gemm_backward_traffic, c.tp_backward, c.tp_collective_bytes, deps, bwd_mix(u), plan_.tp_comm_overlap)};
      deps = full ? attention("attention bwd", c, c.attention_backward, c.attention_backward_traffic, deps)
                  : attention("attention bwd", c, c.attention_backward + c.attention_recompute,
                              c.attention_backward_traffic + c.attention_recompute_traffic, deps);
      deps = moe_all_to_all("ep dispatch bwd", c, deps);
      if (plan_.cp > 1 && c.cp_kv_bytes.value() > 0) {
        deps = {collective(cp_group(), "cp kv reduce-scatter", CollectiveOp::kReduceScatter, c.cp_kv_bytes, deps)};
      }
      if (reduce) gradients_ready(c.gradients, deps.back());
    }
    if (first_chunk(s, k) && model_.family == ModelFamily::kTransformer) {
      if (plan_.reshard_after_forward) deps = gather_weights(embedding_, deps);
      deps = {compute_around_tp_collectives("embedding bwd", embedding_.backward, embedding_.gemm_backward_traffic, embedding_.tp_backward, embedding_.tp_collective_bytes, deps)};
      if (reduce) gradients_ready(embedding_.gradients, deps.back());
    }
    if (!first_chunk(s, k)) g_.add_send(rank_, tg::Stream::kPp, prev_rank(), pp_bytes(first - 1), tag(j, 1, k - (s == 0 ? 1 : 0)), "send gradients", deps);
    // What is left in the bucket: now with overlap, or (without it) once per micro-batch under
    // ZeRO-2/3; the last one's then waits for the optimizer step.
    if (reduce && (plan_.dp_overlap || !last_micro)) flush_bucket(deps.back());
    bwd_last_ = deps.back();
  }

  // ZeRO-3: the unit's (block's, embedding's, head's) weights all-gathered over the DP group
  // before it runs, each unit on its own as PyTorch FSDP wraps them (the root unit holding the
  // embedding and the head); nothing otherwise.
  // ZeRO-1/2 with overlap_param_gather (Megatron-Core's distributed optimizer,
  // --overlap-param-gather): the weights updated by the last step are all-gathered unit by unit
  // as the first micro-batch's forward reaches them, instead of after the step. The gathers are
  // issued at the start of the iteration in forward order on the DP stream (Megatron-Core
  // dispatches each bucket's all-gather ahead of its forward: the gathers never wait for
  // compute), and the unit's first forward waits for its own.
  std::vector<OpId> gather_weights(const LayerCost& c, std::vector<OpId> deps, int micro_batch = -1) {
    if (c.weights.value() == 0 || plan_.dp * plan_.cp <= 1) return deps;
    if (plan_.zero == ZeroStage::kParameters) {
      if (plan_.dp <= 1) return deps;
      return {collective(dp_group(), "fsdp all-gather", CollectiveOp::kAllGather, c.weights, deps)};
    }
    if (plan_.overlap_param_gather && micro_batch == 0) {
      deps.push_back(collective(dp_group(), "dp param all-gather", CollectiveOp::kAllGather, c.weights, {}));
    }
    return deps;
  }

  // Gradients of the last micro-batch go to the DP reduction in buckets as they are produced.
  // Without overlap (Megatron-LM 2021), everything is reduced once the backward pass is over.
  void gradients_ready(Bytes grads, OpId producer) {
    pending_grad_ += Bytes{grads.value() / 2 * plan_.grad_reduce_bytes};  // layer costs count 2 bytes per value
    if (plan_.dp_overlap && pending_grad_ >= bucket_bytes()) flush_bucket(producer);
  }

  void flush_bucket(OpId producer) {
    if (plan_.dp * plan_.cp <= 1 || pending_grad_.value() == 0) {
      pending_grad_ = Bytes{0};
      return;
    }
    const bool sharded = plan_.zero != ZeroStage::kNone;
    dp_ops_.push_back(collective(dp_group(), sharded ? "dp reduce-scatter" : "dp all-reduce",
                                 sharded ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, pending_grad_, {producer}));
    pending_grad_ = Bytes{0};
  }

  Bytes bucket_bytes() const {
    return Bytes{static_cast<std::int64_t>(plan_.dp_bucket_mib * 1024 * 1024)};
  }

  static constexpr std::int64_t kOptimizerStepBytesPerParameter = 46;

  void optimizer() {
    // Mixed-precision Adam over this rank's (ZeRO-sharded) parameters, in HBM bytes per
    // parameter: 16-bit gradients to fp32 (2 + 4), the gradient norm for clipping (4), Adam
    // reading gradient, master weight and both moments and writing back three (16 + 12), the
    // master weights cast to 16 bits (4 + 2), the gradients zeroed (2): 46.
    std::int64_t params = 0;
    const int s = coord_.pp;
    for (int k = 0; k < chunks(); ++k) {
      const auto [first, last] = units_of(s, k);
      for (int u = first; u < last; ++u) params += unit_cost_[static_cast<std::size_t>(u)].parameters;
    }
    if (s == 0) params += embedding_.parameters;
    if (s == plan_.pp - 1) params += head_.parameters;
    const int shards = plan_.zero == ZeroStage::kNone ? 1 : plan_.dp * plan_.cp;
    if (!plan_.dp_overlap) flush_bucket(bwd_last_);
    std::vector<OpId> deps = dp_ops_;
    deps.push_back(bwd_last_);
    const OpId step = compute("optimizer step", Flops{0}, Bytes{params * kOptimizerStepBytesPerParameter / shards}, tg::ComputeClass::kOptimizer, deps);
    if ((plan_.zero == ZeroStage::kOptimizer || plan_.zero == ZeroStage::kGradients) && !plan_.overlap_param_gather) {
      if (plan_.dp * plan_.cp > 1) collective(dp_group(), "dp param all-gather", CollectiveOp::kAllGather, Bytes{params * 2}, {step});
    }
  }

  // Model chunks per GPU: v for the interleaved schedule, else 1. Chunk k of stage s holds the
  // units of chunk_layers (pipeline_split.h): Megatron-Core's order, even or uneven.
  int chunks() const { return plan_.schedule == PipelineSchedule::kInterleaved ? plan_.virtual_stages : 1; }
  std::pair<int, int> units_of(int s, int k) const {
    const LayerRange& r = chunk_units_[static_cast<std::size_t>(k * plan_.pp + s)];
    return {r.first, r.last};
  }
  bool first_chunk(int s, int k) const { return s == 0 && k == 0; }
  bool last_chunk(int s, int k) const { return s == plan_.pp - 1 && k == chunks() - 1; }
  Bytes output_bytes(int unit) const { return unit_cost_[static_cast<std::size_t>(unit)].output_bytes; }

  // Megatron's scatter/gather across pipeline cuts: with TP and no sequence parallelism every TP
  // rank holds the whole activation, so each sends only its 1/t slice and the receiving stage
  // all-gathers the slices over its TP group (NVLink) instead of t copies crossing the network.
  bool pp_scatter_gather() const { return plan_.pp_scatter_gather && plan_.tp > 1 && !plan_.sequence_parallel; }
  Bytes pp_bytes(int unit) const {
    return pp_scatter_gather() ? Bytes{output_bytes(unit).value() / plan_.tp} : output_bytes(unit);
  }
  OpId pp_recv(std::uint32_t from, int unit, std::uint64_t t, const char* name) {
    const OpId recv = g_.add_recv(rank_, tg::Stream::kPp, from, pp_bytes(unit), t, name);
    if (!pp_scatter_gather()) return recv;
    return collective(tp_group(), "pp all-gather", CollectiveOp::kAllGather, output_bytes(unit), {recv});
  }

  // A transfer's tag: micro-batch, direction (0 activations, 1 gradients) and the chunk index of
  // the receiver's side for activations (the sender's for gradients), so both ends agree.
  std::uint64_t tag(int micro, int dir, int chunk) const {
    return (static_cast<std::uint64_t>(micro) * 2 + static_cast<std::uint64_t>(dir)) * 4096 + static_cast<std::uint64_t>(chunk);
  }
  std::uint32_t graph_rank(GridCoord c) const { return graph_rank_of_[static_cast<std::size_t>(out_.grid.rank(c))]; }
  // The previous and the next stage, wrapping around: with interleaving, chunk k of the first
  // stage follows chunk k - 1 of the last.
  std::uint32_t prev_rank() const {
    const int p = coord_.pp == 0 ? plan_.pp - 1 : coord_.pp - 1;
    return graph_rank({coord_.dp, p, coord_.cp, coord_.tp});
  }
  std::uint32_t next_rank() const {
    const int p = coord_.pp == plan_.pp - 1 ? 0 : coord_.pp + 1;
    return graph_rank({coord_.dp, p, coord_.cp, coord_.tp});
  }

  std::uint32_t tp_group() const { return tp_groups_.at({coord_.dp, coord_.pp, coord_.cp}); }
  std::uint32_t dp_group() const { return dp_groups_.at({coord_.pp, coord_.tp, 0}); }
  std::uint32_t cp_group() const { return cp_groups_.at({coord_.dp, coord_.pp, coord_.tp}); }
  std::uint32_t ep_group() const { return ep_groups_.at({coord_.pp, coord_.tp, (coord_.dp * plan_.cp + coord_.cp) / plan_.ep}); }

  // Groups that contain a simulated rank (only those issue collectives).
  void make_groups() {
    auto add = [&](const std::string& name, tg::Stream stream, std::vector<std::uint32_t> ranks) {
      const bool simulated = std::any_of(ranks.begin(), ranks.end(), [&](std::uint32_t r) { return r < g_.ranks(); });
      return simulated ? g_.add_group({name, stream, std::move(ranks)}) : UINT32_MAX;
    };
    auto tag = [](const char* kind, int a, int b, int c) {
      return std::string(kind) + "." + std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
    };
    for (int d = 0; d < plan_.dp; ++d) {
      for (int p = 0; p < plan_.pp; ++p) {
        for (int c = 0; c < plan_.cp; ++c) {
          if (plan_.tp > 1) {
            std::vector<std::uint32_t> r;
            for (int t = 0; t < plan_.tp; ++t) r.push_back(graph_rank({d, p, c, t}));
            tp_groups_[{d, p, c}] = add(tag("tp", d, p, c).c_str(), tg::Stream::kTp, r);
          }
        }
      }
    }
    for (int p = 0; p < plan_.pp; ++p) {
      for (int t = 0; t < plan_.tp; ++t) {
        if (plan_.dp * plan_.cp > 1) {
          std::vector<std::uint32_t> r;  // gradients are reduced over data and context parallelism
          for (int d = 0; d < plan_.dp; ++d) {
            for (int c = 0; c < plan_.cp; ++c) r.push_back(graph_rank({d, p, c, t}));
          }
          dp_groups_[{p, t, 0}] = add(tag("dp", p, t, 0).c_str(), tg::Stream::kDp, r);
        }
        if (plan_.cp > 1) {
          for (int d = 0; d < plan_.dp; ++d) {
            std::vector<std::uint32_t> r;
            for (int c = 0; c < plan_.cp; ++c) r.push_back(graph_rank({d, p, c, t}));
            cp_groups_[{d, p, t}] = add(tag("cp", d, p, t).c_str(), tg::Stream::kCp, r);
          }
        }
        if (plan_.ep > 1) {
          // Experts are sharded over blocks of ep consecutive data-parallel (x context) ranks.
          const int n = plan_.dp * plan_.cp;
          for (int b = 0; b < n / plan_.ep; ++b) {
            std::vector<std::uint32_t> r;
            for (int k = b * plan_.ep; k < (b + 1) * plan_.ep; ++k) {
              r.push_back(graph_rank({k / plan_.cp, p, k % plan_.cp, t}));
            }
            ep_groups_[{p, t, b}] = add(tag("ep", p, t, b).c_str(), tg::Stream::kEp, r);
          }
        }
      }
    }
  }

  const Model& model_;
  const ParallelPlan& plan_;
  TrainingGraph& out_;
  tg::TaskGraph& g_;
  CostParams params_;
  std::vector<LayerCost> unit_cost_;
  // The forward and backward GEMM mixes of each transformer block (empty for CNNs).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_mix_;
  std::uint32_t fwd_mix(int u) const { return unit_mix_.empty() ? tg::kNoGemmMix : unit_mix_[static_cast<std::size_t>(u)].first; }
  std::uint32_t bwd_mix(int u) const { return unit_mix_.empty() ? tg::kNoGemmMix : unit_mix_[static_cast<std::size_t>(u)].second; }
  std::uint32_t head_fwd_mix_ = tg::kNoGemmMix, head_bwd_mix_ = tg::kNoGemmMix;
  LayerCost embedding_, head_;
  std::vector<LayerRange> chunk_units_;  // chunk k of stage s at k p + s
  std::map<std::array<int, 3>, std::uint32_t> tp_groups_, dp_groups_, cp_groups_, ep_groups_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> seq_;
  std::vector<std::uint32_t> graph_rank_of_;  // grid rank -> graph rank
  std::uint32_t rank_ = 0;
  GridCoord coord_;
  std::vector<OpId> fwd_last_;
  std::vector<OpId> fwd_first_;  // per micro-batch: the first op of its forward on the first stage
  std::vector<OpId> dp_ops_;
  OpId bwd_last_ = 0;
  Bytes pending_grad_{0};
};

}  // namespace

TrainingGraph build_training_graph(const Model& model, const ParallelPlan& plan, const std::string& file,
                                   const std::string& plan_path, bool symmetry) {
  validate_plan(model, plan, plan.gpus(), file, plan_path);
  RankGrid grid(plan, file, plan_path + "/order");
  // The job is invariant under shifting the data-, context- and tensor-parallel coordinates, but
  // with expert parallelism only under the shifts that map every expert-parallel group (ep
  // consecutive indices dp x cp + cp, Builder::ep_group) onto one: a shift by one data-parallel
  // rank would move the all-to-alls of the group at 0 .. ep - 1 onto GPUs 1 .. ep, which form no
  // group (and may straddle servers). The shifts kept form a group acting freely on the ranks; one
  // rank of each orbit is simulated, the others are mirrored.
  const int n = plan.dp * plan.cp;
  const auto shifted = [&](int j, int dd, int cc) { return ((j / plan.cp + dd) % plan.dp) * plan.cp + (j % plan.cp + cc) % plan.cp; };
  const auto keeps_expert_groups = [&](int dd, int cc) {
    if (plan.ep <= 1) return true;
    for (int j = 0; j < n; ++j) {
      if (shifted(j, dd, cc) / plan.ep != shifted(j - j % plan.ep, dd, cc) / plan.ep) return false;
    }
    return true;
  };
  struct Shift {
    int dd, cc, tt;
  };
  std::vector<Shift> shifts;  // the identity first
  for (int dd = 0; dd < (symmetry ? plan.dp : 1); ++dd) {
    for (int cc = 0; cc < (symmetry ? plan.cp : 1); ++cc) {
      if (!keeps_expert_groups(dd, cc)) continue;
      for (int tt = 0; tt < (symmetry ? plan.tp : 1); ++tt) shifts.push_back({dd, cc, tt});
    }
  }
  const auto image = [&](int r, const Shift& s) {
    const GridCoord c = grid.coord(r);
    return grid.rank({(c.dp + s.dd) % plan.dp, c.pp, (c.cp + s.cc) % plan.cp, (c.tp + s.tt) % plan.tp});
  };
  // Simulated ranks first (in grid order), then the mirrored ones.
  std::vector<int> simulated, mirrored;
  std::vector<bool> covered(static_cast<std::size_t>(grid.size()), false);
  for (int r = 0; r < grid.size(); ++r) {
    if (covered[static_cast<std::size_t>(r)]) {
      mirrored.push_back(r);
      continue;
    }
    simulated.push_back(r);
    for (const Shift& s : shifts) covered[static_cast<std::size_t>(image(r, s))] = true;
  }
  std::vector<int> order = simulated;
  order.insert(order.end(), mirrored.begin(), mirrored.end());
  std::vector<std::uint32_t> graph_rank_of(static_cast<std::size_t>(grid.size()));
  for (std::size_t i = 0; i < order.size(); ++i) graph_rank_of[static_cast<std::size_t>(order[i])] = static_cast<std::uint32_t>(i);
  TrainingGraph out{tg::TaskGraph(static_cast<std::uint32_t>(simulated.size()), static_cast<std::uint32_t>(mirrored.size())),
                    grid, stage_layers(model, plan), plan.micro_batches(), order};
  Builder b(model, plan, out, graph_rank_of);
  for (int r : simulated) b.build_rank(r);
  for (std::size_t k = 1; k < shifts.size(); ++k) {
    std::vector<std::uint32_t> sigma(static_cast<std::size_t>(grid.size()));
    for (int r = 0; r < grid.size(); ++r) {
      sigma[graph_rank_of[static_cast<std::size_t>(r)]] = graph_rank_of[static_cast<std::size_t>(image(r, shifts[k]))];
    }
    out.graph.add_symmetry(std::move(sigma));
  }
  return out;
}

}  // namespace cs::wl
