#include "workloads/training_graph.h"

#include <array>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"
#include "workloads/block_cost.h"
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
      if (plan.schedule == PipelineSchedule::kZbH1) head_split_ = split_backward(head_.gemms);
      // One pair of mixes (and, for ZB-H1, one dX / dW split) per kind of block (a mixture's dense
      // blocks and its blocks with experts differ), shared by the units of that kind.
      for (const LayerCost& c : unit_cost_) {
        if (unit_mix_.empty() || c.gemms != unit_cost_[unit_mix_.size() - 1].gemms) {
          unit_mix_.push_back({mix(c.gemms), mix(backward_gemms(c.gemms))});
          unit_split_.push_back(plan.schedule == PipelineSchedule::kZbH1 ? split_backward(c.gemms) : Split{});
        } else {
          unit_mix_.push_back(unit_mix_.back());
          unit_split_.push_back(unit_split_.back());
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
    weight_work_.assign(static_cast<std::size_t>(m), {});
    dp_ops_.clear();
    pending_grad_ = pending_expert_grad_ = Bytes{0};
    if (plan_.schedule == PipelineSchedule::kZbH1) {
      // ZB-H1 (Qi et al. 2024, Sec. 3.1): the F and B passes in 1F1B's order, and stage s runs
      // the weight-gradient pass W_j right after B_{j+s}; the last s W passes fill the
      // cool-down. Stage s then holds at most p micro-batches (p - 1 - s warm-up forwards, one
      // more, and s whose W waits), 1F1B's peak on stage 0.
      const int warmup = std::min(m, plan_.pp - 1 - s);
      int f = 0, b = 0, w = 0;
      for (; f < warmup; ++f) forward(f, 0);
      while (b < m) {
        if (f < m) forward(f++, 0);
        backward(b++, 0);
        while (w < m && w + s <= b - 1) weight(w++);
      }
      while (w < m) weight(w++);
    } else if (plan_.schedule == PipelineSchedule::kGpipe) {
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
  OpId collective(std::uint32_t group, const char* name, CollectiveOp op, Bytes size, std::vector<OpId> deps,
                  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto) {
    const std::uint64_t seq = seq_[{rank_, group}]++;
    const std::uint64_t instance = (static_cast<std::uint64_t>(group) << 32) | seq;
    return g_.add_collective(rank_, group, name, op, size, instance, deps, algorithm);
  }

  // Every member of `group` (n ranks) sends `bytes` to the next and receives as much from the
  // previous: a send_recv over the group (a ring shift). With two ranks the shift is the exchange
  // of an all-to-all of 2 x bytes (S/2 to the other rank), since a send_recv of two ranks runs one
  // way only.
  OpId ring_shift(std::uint32_t group, int n, const char* name, Bytes bytes, std::vector<OpId> deps) {
    if (n == 2) return collective(group, name, CollectiveOp::kAllToAll, bytes * 2, std::move(deps));
    return collective(group, name, CollectiveOp::kSendRecv, bytes, std::move(deps));
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
  // GEMM chunks (f/(n k) FLOPs each), as TE does (transformer_engine/common/comm_gemm_overlap/
  // comm_gemm_overlap.cpp):
  //  - all-gather, TE's ring exchange (CommOverlapP2PBase::split_overlap_ag): GEMM chunk 0 runs on
  //    this rank's own shard, with no communication before it; k - 1 steps each pass one shard
  //    (S/k bytes) to the next rank of the group by userbuffers send/recv (ring_shift: one hop),
  //    each step after the previous one and beside the GEMMs;
  //    GEMM chunk j waits for step j and GEMM chunk j - 1;
  //  - reduce-scatter, TE's pipelined split (CommOverlapBase::split_overlap_rs): reduce-scatter
  //    chunk j (S/k) follows GEMM chunk j, beside the next GEMM chunk, by userbuffers' kernel,
  //    which reads every peer's part directly (the direct algorithm: one step, not NCCL's ring).
  // When a GEMM chunk outlasts a communication step, only the last reduce-scatter chunk is
  // exposed.
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
      std::vector<OpId> gathered(static_cast<std::size_t>(k), 0);  // the ring exchange's steps 1..k-1
      const bool gather = i < c.all_gather;
      if (gather) {
        std::vector<OpId> after = deps;
        for (int j = 1; j < k; ++j) {
          gathered[static_cast<std::size_t>(j)] = ring_shift(tp, k, "tp all-gather", chunk, after);
          after = {gathered[static_cast<std::size_t>(j)]};
        }
      }
      OpId prev_gemm = 0, prev_rs = 0;
      for (int j = 0; j < k; ++j) {
        std::vector<OpId> in = gather && j > 0 ? std::vector<OpId>{gathered[static_cast<std::size_t>(j)]} : deps;
        if (j > 0) in.push_back(prev_gemm);
        const Bytes piece{mem.value() * (done + 1) / pieces - mem.value() * done / pieces};
        ++done;
        prev_gemm = compute(name, Flops{f.value() / static_cast<double>(pieces)}, piece, tg::ComputeClass::kGemm, in);
        if (gemm_mix != tg::kNoGemmMix) g_.set_gemm_mix(prev_gemm, gemm_mix);
        last = prev_gemm;
        if (i < c.reduce_scatter) {
          std::vector<OpId> rs_in{prev_gemm};
          if (j > 0) rs_in.push_back(prev_rs);
          prev_rs = collective(tp, "tp reduce-scatter", CollectiveOp::kReduceScatter, chunk, rs_in,
                               CollectiveAlgorithm::kDirect);
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

  // ---- context parallelism (plan.cp_comm_type; see training_graph.h) ----
  // X = c.cp_kv_bytes (this GPU's K and V), Q = c.cp_q_bytes (its queries, or its attention
  // output), n = cp. The attention core's FLOPs and bytes are this GPU's whatever the variant:
  // its s/c queries against all s keys (p2p, all_gather), or a/(t n) heads over the whole
  // sequence (a2a), the same 4 b (s/c) s q_t FLOPs.

  // One ring step of the p2p variant: every CP rank sends `bytes` to the next and receives as
  // much from the previous (ring_shift over the CP group).
  OpId cp_ring_step(const char* name, Bytes bytes, std::vector<OpId> deps) {
    return ring_shift(cp_group(), plan_.cp, name, bytes, std::move(deps));
  }

  // The attention core in n steps of f/n FLOPs and traffic/n bytes (split exactly), step k
  // after `after(k)`.
  template <class After>
  OpId attention_steps(const char* name, const LayerCost& c, Flops f, Bytes traffic, int n, After after) {
    OpId last = 0;
    const tg::ComputeClass cls = c.attention_fused ? tg::ComputeClass::kAttention : tg::ComputeClass::kGemm;
    for (int k = 0; k < n; ++k) {
      const Bytes piece{traffic.value() * (k + 1) / n - traffic.value() * k / n};
      last = compute(name, Flops{f.value() / n}, piece, cls, after(k, last));
    }
    return last;
  }

  // The attention forward (or its full recomputation) with its CP exchanges:
  //   p2p         Transformer Engine's ring (AttnFuncWithCPAndKVP2P.forward): n steps; step k
  //               computes against the K/V block received by ring transfer k - 1 (step 0 the
  //               local one), and transfer k (k < n - 1, X bytes) passes that block on as soon
  //               as it has arrived, beside step k's compute: the forward takes
  //               max(n t_a, (n - 1) t_X + t_a), t_a = one step's compute, t_X = one transfer
  //   all_gather  K and V all-gathered (S = n X, (n - 1) X sent per GPU), then attention,
  //               exposed (Llama 3, Sec. 3.3.2)
  //   a2a         all-to-all of Q, K, V (S = Q + X), attention over a/(t n) heads, all-to-all
  //               of the output (S = Q), both exposed (DeepSpeed-Ulysses)
  std::vector<OpId> cp_attention_forward(const char* name, const LayerCost& c, Flops f, Bytes traffic, std::vector<OpId> deps) {
    if (plan_.cp <= 1 || c.cp_kv_bytes.value() == 0 || (f.value() <= 0 && traffic.value() <= 0)) return attention(name, c, f, traffic, deps);
    const int n = plan_.cp;
    switch (plan_.cp_comm_type) {
      case CpCommType::kAllGather:
        deps = {collective(cp_group(), "cp kv all-gather", CollectiveOp::kAllGather, c.cp_kv_bytes * n, deps)};
        return attention(name, c, f, traffic, deps);
      case CpCommType::kA2a:
        deps = {collective(cp_group(), "cp qkv all-to-all", CollectiveOp::kAllToAll, c.cp_q_bytes + c.cp_kv_bytes, deps)};
        deps = attention(name, c, f, traffic, deps);
        return {collective(cp_group(), "cp output all-to-all", CollectiveOp::kAllToAll, c.cp_q_bytes, deps)};
      case CpCommType::kP2p:
        break;
    }
    std::vector<OpId> ring(static_cast<std::size_t>(n - 1), 0);
    for (int k = 0; k + 1 < n; ++k) {
      ring[static_cast<std::size_t>(k)] = cp_ring_step("cp ring kv", c.cp_kv_bytes, k == 0 ? deps : std::vector<OpId>{ring[static_cast<std::size_t>(k - 1)]});
    }
    return {attention_steps(name, c, f, traffic, n, [&](int k, OpId) {
      return k == 0 ? deps : std::vector<OpId>{ring[static_cast<std::size_t>(k - 1)]};
    })};
  }

  // The attention backward with its CP exchanges:
  //   p2p         TE's ring backward (AttnFuncWithCPAndKVP2P.backward): K and V travel the ring
  //               again and the gradients dK, dV travel with them, one step behind: transfer k
  //               carries K/V (k = 0), K/V and the dK/dV accumulated so far (0 < k < n - 1,
  //               2X), dK/dV alone (k = n - 1); transfer k and step k both start once transfer
  //               k - 1 and step k - 1 are done (the step's dK/dV is added to what arrived
  //               before it is sent on), and the backward ends when the last transfer has
  //               arrived: max(t_b, t_X) + (n - 2) max(t_b, t_2X) + max(t_b, t_X). In all
  //               2 (n - 1) X bytes sent per GPU. (TE sends backward to the previous rank; the
  //               ring here runs the same way as forward's, on the other direction of the same
  //               links.)
  //   all_gather  attention, then dK, dV reduce-scattered (S = n X), exposed
  //   a2a         all-to-all of the output gradient (S = Q), attention, all-to-all of dQ, dK,
  //               dV (S = Q + X), exposed
  std::vector<OpId> cp_attention_backward(const char* name, const LayerCost& c, Flops f, Bytes traffic, std::vector<OpId> deps) {
    if (plan_.cp <= 1 || c.cp_kv_bytes.value() == 0 || (f.value() <= 0 && traffic.value() <= 0)) return attention(name, c, f, traffic, deps);
    const int n = plan_.cp;
    switch (plan_.cp_comm_type) {
      case CpCommType::kAllGather:
        deps = attention(name, c, f, traffic, deps);
        return {collective(cp_group(), "cp dkv reduce-scatter", CollectiveOp::kReduceScatter, c.cp_kv_bytes * n, deps)};
      case CpCommType::kA2a:
        deps = {collective(cp_group(), "cp output-grad all-to-all", CollectiveOp::kAllToAll, c.cp_q_bytes, deps)};
        deps = attention(name, c, f, traffic, deps);
        return {collective(cp_group(), "cp qkv-grad all-to-all", CollectiveOp::kAllToAll, c.cp_q_bytes + c.cp_kv_bytes, deps)};
      case CpCommType::kP2p:
        break;
    }
    OpId prev_ring = 0;
    const OpId last = attention_steps(name, c, f, traffic, n, [&](int k, OpId prev_step) {
      const std::vector<OpId> in = k == 0 ? deps : std::vector<OpId>{prev_ring, prev_step};
      const Bytes bytes = k == 0 || k == n - 1 ? c.cp_kv_bytes : c.cp_kv_bytes * 2;
      prev_ring = cp_ring_step(k == 0 ? "cp ring kv bwd" : k == n - 1 ? "cp ring dkv" : "cp ring kv+dkv", bytes, in);
      return in;
    });
    return {last, prev_ring};
  }

  // ZB-H1's split of a backward GEMM op: for Y = X W of shape (m, n, k) the input gradient dX
  // = dY W^T (B pass) and the weight gradient dW = X^T dY (W pass) do 2 m n k FLOPs each, half
  // of the op's; of its HBM bytes (gemm_traffic, layer_cost.h) dX moves in (m n + k n) + out m k
  // and dW in (m k + m n) + out k n, which split the op's bytes (the same in bf16; with fp8
  // operands, in = 1 and out = 2, the shares differ). Without shapes (CNN layers) half each.
  struct Split {
    double weight_share = 0.5;
    std::uint32_t input_mix = tg::kNoGemmMix, weight_mix = tg::kNoGemmMix;
    Bytes weight_traffic(Bytes all) const { return Bytes{static_cast<std::int64_t>(std::llround(static_cast<double>(all.value()) * weight_share))}; }
    Bytes input_traffic(Bytes all) const { return all - weight_traffic(all); }
  };
  Split split_backward(const std::vector<tg::GemmShape>& forward) {
    Split out;
    if (forward.empty()) return out;
    std::vector<tg::GemmShape> dx, dw;
    const std::vector<tg::GemmShape> all = backward_gemms(forward);
    for (std::size_t i = 0; i < all.size(); ++i) (i % 2 == 0 ? dx : dw).push_back(all[i]);
    const std::int64_t in = params_.precision == Precision::kFp8 ? 1 : 2;
    const double w = static_cast<double>(gemm_traffic(dw, in, 2).value());
    const double x = static_cast<double>(gemm_traffic(dx, in, 2).value());
    out.weight_share = w + x > 0 ? w / (w + x) : 0.5;
    out.input_mix = mix(dx);
    out.weight_mix = mix(dw);
    return out;
  }
  // A unit whose W pass is pending: what it is and the last op of its B part.
  struct WeightWork {
    enum Kind { kHead, kUnit, kEmbedding } kind;
    int unit;
    OpId after;
  };

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
      deps = gather_block(u, +1, last, deps, j);
      deps = moe_all_to_all("ep dispatch", c, deps);
      deps = {compute_around_tp_collectives("block fwd", c.forward - c.attention_forward, c.gemm_forward_traffic, c.tp_forward, c.tp_collective_bytes, deps, fwd_mix(u), plan_.tp_comm_overlap)};
      deps = cp_attention_forward("attention fwd", c, c.attention_forward, c.attention_forward_traffic, deps);
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
    // ZB-H1: this is the B pass (input gradients); each unit's weight-gradient GEMMs wait in
    // weight_work_ for its W pass (weight()).
    const bool split = plan_.schedule == PipelineSchedule::kZbH1;
    std::vector<WeightWork>& later = weight_work_[static_cast<std::size_t>(j)];
    if (last_chunk(s, k) && model_.family == ModelFamily::kTransformer) {
      deps = elementwise("head elementwise bwd", head_.elementwise_backward, deps);
      if (plan_.reshard_after_forward) deps = gather_weights(head_, deps);
      if (split) {
        deps = {compute_around_tp_collectives("head bwd", head_.backward * 0.5, head_split_.input_traffic(head_.gemm_backward_traffic), head_.tp_backward, head_.tp_collective_bytes, deps, head_split_.input_mix)};
        later.push_back({WeightWork::kHead, 0, deps.back()});
      } else {
        deps = {compute_around_tp_collectives("head bwd", head_.backward, head_.gemm_backward_traffic, head_.tp_backward, head_.tp_collective_bytes, deps, head_bwd_mix_)};
        if (reduce) gradients_ready(head_, deps.back());
      }
    }
    for (int u = last - 1; u >= first; --u) {
      const LayerCost& c = unit_cost_[static_cast<std::size_t>(u)];
      // ZeRO-3 gathers the unit's weights again for its backward, unless they were kept after
      // the forward (FSDP2 reshard_after_forward=False, FSDP1 SHARD_GRAD_OP; Llama 3).
      if (plan_.reshard_after_forward) deps = gather_block(u, -1, first - 1, deps, -1);
      // A full recomputation repeats the forward (with its TP collectives); a partial one (the
      // attention scores only) runs inside the attention backward.
      const bool full = plan_.recompute == Recompute::kFull;
      if (full) {
        deps = {compute_around_tp_collectives("block recompute", c.recompute - c.attention_recompute, c.gemm_recompute_traffic, c.tp_forward, c.tp_collective_bytes, deps, fwd_mix(u), plan_.tp_comm_overlap)};
        deps = cp_attention_forward("attention recompute", c, c.attention_recompute, c.attention_recompute_traffic, deps);
        deps = elementwise("elementwise recompute", c.elementwise_forward, deps);
      }
      deps = moe_all_to_all("ep combine bwd", c, deps);
      deps = elementwise("elementwise bwd", c.elementwise_backward, deps);
      const Flops gemm = c.backward - c.attention_backward;
      if (split) {
        const Split& x = model_.family == ModelFamily::kTransformer ? unit_split_[static_cast<std::size_t>(u)] : cnn_split_;
        deps = {compute_around_tp_collectives("block bwd", gemm * 0.5, x.input_traffic(c.gemm_backward_traffic), c.tp_backward, c.tp_collective_bytes, deps, x.input_mix, plan_.tp_comm_overlap)};
        later.push_back({WeightWork::kUnit, u, deps.back()});
      } else {
        deps = {compute_around_tp_collectives("block bwd", gemm, c.gemm_backward_traffic, c.tp_backward, c.tp_collective_bytes, deps, bwd_mix(u), plan_.tp_comm_overlap)};
      }
      deps = full ? cp_attention_backward("attention bwd", c, c.attention_backward, c.attention_backward_traffic, deps)
                  : cp_attention_backward("attention bwd", c, c.attention_backward + c.attention_recompute,
                                          c.attention_backward_traffic + c.attention_recompute_traffic, deps);
      deps = moe_all_to_all("ep dispatch bwd", c, deps);
      if (reduce && !split) gradients_ready(c, deps.back());
    }
    if (first_chunk(s, k) && model_.family == ModelFamily::kTransformer) {
      if (plan_.reshard_after_forward) deps = gather_weights(embedding_, deps);
      if (split) {
        // The embedding's backward is its weight gradient alone: all of it waits for W.
        later.push_back({WeightWork::kEmbedding, 0, deps.back()});
      } else {
        deps = {compute_around_tp_collectives("embedding bwd", embedding_.backward, embedding_.gemm_backward_traffic, embedding_.tp_backward, embedding_.tp_collective_bytes, deps)};
        if (reduce) gradients_ready(embedding_, deps.back());
      }
    }
    if (!first_chunk(s, k)) g_.add_send(rank_, tg::Stream::kPp, prev_rank(), pp_bytes(first - 1), tag(j, 1, k - (s == 0 ? 1 : 0)), "send gradients", deps);
    if (split) return;
    // What is left in the bucket: now with overlap, or (without it) once per micro-batch under
    // ZeRO-2/3; the last one's then waits for the optimizer step.
    if (reduce && (plan_.dp_overlap || !last_micro)) flush_bucket(deps.back());
    bwd_last_ = deps.back();
  }

  // ZB-H1's W pass of micro-batch j: the weight-gradient GEMMs its B pass left, in the order B
  // produced them (head, blocks from the last, embedding), each after its unit's B part; the
  // gradients then go to the data-parallel reduction as backward() sends them without the split.
  void weight(int j) {
    const bool last_micro = j == out_.micro_batches - 1;
    const bool reduce = last_micro || plan_.zero >= ZeroStage::kGradients;
    OpId last = 0;
    bool any = false;
    for (const WeightWork& w : weight_work_[static_cast<std::size_t>(j)]) {
      any = true;
      std::vector<OpId> deps{w.after};
      const LayerCost* grads = nullptr;
      if (w.kind == WeightWork::kHead) {
        last = compute("head bwd weight", head_.backward * 0.5, head_split_.weight_traffic(head_.gemm_backward_traffic), tg::ComputeClass::kGemm, deps);
        if (head_split_.weight_mix != tg::kNoGemmMix) g_.set_gemm_mix(last, head_split_.weight_mix);
        grads = &head_;
      } else if (w.kind == WeightWork::kEmbedding) {
        last = compute_around_tp_collectives("embedding bwd", embedding_.backward, embedding_.gemm_backward_traffic, embedding_.tp_backward, embedding_.tp_collective_bytes, deps);
        grads = &embedding_;
      } else {
        const LayerCost& c = unit_cost_[static_cast<std::size_t>(w.unit)];
        const Split& x = model_.family == ModelFamily::kTransformer ? unit_split_[static_cast<std::size_t>(w.unit)] : cnn_split_;
        last = compute("block bwd weight", (c.backward - c.attention_backward) * 0.5, x.weight_traffic(c.gemm_backward_traffic), tg::ComputeClass::kGemm, deps);
        if (x.weight_mix != tg::kNoGemmMix) g_.set_gemm_mix(last, x.weight_mix);
        grads = &c;
      }
      if (reduce) gradients_ready(*grads, last);
    }
    weight_work_[static_cast<std::size_t>(j)].clear();
    if (!any) return;
    if (reduce && (plan_.dp_overlap || !last_micro)) flush_bucket(last);
    bwd_last_ = last;
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
      return fsdp_gather(c, deps);
    }
    if (plan_.overlap_param_gather && micro_batch == 0) {
      for (OpId g : over_dp_groups("dp param all-gather", CollectiveOp::kAllGather, dense_bytes(c), expert_bytes(c), {})) deps.push_back(g);
    }
    return deps;
  }

  // ZeRO-3: one unit's weights all-gathered over the (shard) data-parallel groups after `deps`:
  // its dense weights over the data-parallel group, its experts' over the expert-data-parallel
  // one.
  std::vector<OpId> fsdp_gather(const LayerCost& c, const std::vector<OpId>& deps) {
    return over_dp_groups("fsdp all-gather", CollectiveOp::kAllGather, dense_bytes(c), expert_bytes(c), deps);
  }

  // A unit's weight (or 16-bit gradient) bytes: the MoE experts' under expert parallelism, and
  // the rest (without it, experts are data-parallel like every other weight).
  Bytes expert_bytes(const LayerCost& c) const { return Bytes{plan_.ep > 1 ? c.expert_parameters * kActivationBytes : 0}; }
  Bytes dense_bytes(const LayerCost& c) const { return c.weights - expert_bytes(c); }

  // One collective over the data-parallel group for `dense` bytes and one over the
  // expert-data-parallel group for `experts` bytes, each only when it has bytes and ranks.
  std::vector<OpId> over_dp_groups(const char* name, CollectiveOp op, Bytes dense, Bytes experts, const std::vector<OpId>& deps) {
    std::vector<OpId> out;
    if (dense.value() > 0) out.push_back(collective(dp_group(), name, op, dense, deps));
    if (experts.value() > 0 && expert_dp_ways() > 1) out.push_back(collective(expert_dp_group(), expert_name(name).c_str(), op, experts, deps));
    return out;
  }
  static std::string expert_name(const char* name) { return std::string("expert ") + name; }

  // ZeRO-3 with prefetch (plan.zero_prefetch = d): block unit u's gather, and the gathers of the
  // next d units of the pass (u + step, ..., up to `end`, exclusive) issued as soon as unit u may
  // start, ahead of u's own gradients on the DP stream, as PyTorch FSDP's forward and backward
  // prefetch (BACKWARD_PRE) and DeepSpeed's stage3_prefetch_bucket_size do: each gather then
  // runs beside the compute of the d units before it. The first unit of a pass (a chunk's forward
  // or backward) waits for its own gather. d = 0: every unit gathers when it is reached.
  std::vector<OpId> gather_block(int u, int step, int end, std::vector<OpId> deps, int micro_batch) {
    const LayerCost& c = unit_cost_[static_cast<std::size_t>(u)];
    if (plan_.zero != ZeroStage::kParameters || plan_.dp <= 1 || c.weights.value() == 0) {
      return gather_weights(c, std::move(deps), micro_batch);
    }
    const std::vector<OpId> entry = deps;
    std::vector<OpId> own;
    if (auto it = prefetched_.find(u); it != prefetched_.end()) {
      own = std::move(it->second);
      prefetched_.erase(it);
    } else {
      own = fsdp_gather(c, entry);
    }
    for (int i = 1; i <= plan_.zero_prefetch; ++i) {
      const int v = u + i * step;
      if (step > 0 ? v >= end : v <= end) break;
      const LayerCost& next = unit_cost_[static_cast<std::size_t>(v)];
      if (next.weights.value() == 0 || prefetched_.count(v)) continue;
      prefetched_[v] = fsdp_gather(next, entry);
    }
    deps.insert(deps.end(), own.begin(), own.end());
    return deps;
  }

  // Gradients of the last micro-batch go to the DP reduction in buckets as they are produced.
  // Without overlap (Megatron-LM 2021), everything is reduced once the backward pass is over.
  // A MoE block's expert gradients are reduced over the expert-data-parallel group instead
  // (Megatron-Core keeps the expert parameters in their own buffers, reduced over
  // expert_data_parallel_group), with the dense ones in the same bucket.
  void gradients_ready(const LayerCost& c, OpId producer) {
    // Layer costs count 2 bytes per value.
    pending_grad_ += Bytes{dense_bytes(c).value() / kActivationBytes * plan_.grad_reduce_bytes};
    pending_expert_grad_ += Bytes{expert_bytes(c).value() / kActivationBytes * plan_.grad_reduce_bytes};
    if (plan_.dp_overlap && pending_grad_ + pending_expert_grad_ >= bucket_bytes()) flush_bucket(producer);
  }

  void flush_bucket(OpId producer) {
    const bool sharded = plan_.zero != ZeroStage::kNone;
    const char* name = sharded ? "dp reduce-scatter" : "dp all-reduce";
    const CollectiveOp op = sharded ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
    if (plan_.dp * plan_.cp > 1 && pending_grad_.value() > 0) {
      reduce_bucket(collective(dp_group(), name, op, pending_grad_, {producer}), pending_grad_, plan_.shard_ways());
    }
    if (pending_expert_grad_.value() > 0) {
      if (expert_dp_ways() > 1) {
        reduce_bucket(collective(expert_dp_group(), expert_name(name).c_str(), op, pending_expert_grad_, {producer}),
                      pending_expert_grad_, expert_dp_ways());
      } else if (plan_.hybrid_sharding()) {
        // One expert-parallel block per shard group: nothing to shard, the replicas all-reduce.
        dp_ops_.push_back(collective(replica_group(), "expert dp replica all-reduce", CollectiveOp::kAllReduce, pending_expert_grad_, {producer}));
      }
    }
    pending_grad_ = pending_expert_grad_ = Bytes{0};
  }

  // Hybrid sharding: each rank's reduced shard (1/S of the bucket) is then all-reduced across
  // the replicas that hold the same shard (FSDP HYBRID_SHARD, MiCS).
  void reduce_bucket(OpId reduced, Bytes bucket, int shard_ways) {
    if (plan_.hybrid_sharding()) {
      dp_ops_.push_back(collective(replica_group(), "dp replica all-reduce", CollectiveOp::kAllReduce,
                                   Bytes{bucket.value() / shard_ways}, {reduced}));
    } else {
      dp_ops_.push_back(reduced);
    }
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
    std::int64_t params = 0, experts = 0;
    const int s = coord_.pp;
    for (int k = 0; k < chunks(); ++k) {
      const auto [first, last] = units_of(s, k);
      for (int u = first; u < last; ++u) {
        params += unit_cost_[static_cast<std::size_t>(u)].parameters;
        experts += expert_bytes(unit_cost_[static_cast<std::size_t>(u)]).value() / kActivationBytes;
      }
    }
    // With fp8, the blocks' weights are cast once per iteration, with a transposed copy
    // (block_cost.h, fp8_cast_traffic); counted with the step, the iteration's other pass over them.
    const std::int64_t fp8_casts = plan_.precision == Precision::kFp8 ? params * kFp8CastBytesPerElement : 0;
    if (s == 0) params += embedding_.parameters;
    if (s == plan_.pp - 1) params += head_.parameters;
    // ZeRO shards the dense parameters over the (shard) data-parallel group, the experts' over
    // the expert-data-parallel one.
    const bool sharded = plan_.zero != ZeroStage::kNone;
    const std::int64_t dense = params - experts;
    const std::int64_t dense_shards = sharded ? plan_.shard_ways() : 1, expert_shards = sharded ? expert_dp_ways() : 1;
    if (!plan_.dp_overlap) flush_bucket(bwd_last_);
    std::vector<OpId> deps = dp_ops_;
    deps.push_back(bwd_last_);
    const Bytes step_bytes{(dense / dense_shards + experts / expert_shards) * kOptimizerStepBytesPerParameter + fp8_casts};
    const OpId step = compute("optimizer step", Flops{0}, step_bytes, tg::ComputeClass::kOptimizer, deps);
    if ((plan_.zero == ZeroStage::kOptimizer || plan_.zero == ZeroStage::kGradients) && !plan_.overlap_param_gather) {
      if (plan_.dp * plan_.cp > 1) {
        over_dp_groups("dp param all-gather", CollectiveOp::kAllGather, Bytes{dense * kActivationBytes}, Bytes{experts * kActivationBytes}, {step});
      }
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
  // The data-parallel group ZeRO and the gradient reduction work over: all data-parallel (x
  // context) ranks, or with hybrid sharding this rank's shard group of S consecutive ones.
  std::uint32_t dp_group() const {
    if (!plan_.hybrid_sharding()) return dp_groups_.at({coord_.pp, coord_.tp, 0});
    return shard_groups_.at({coord_.pp, coord_.tp, (coord_.dp * plan_.cp + coord_.cp) / plan_.shard_ways()});
  }
  // Hybrid sharding: the ranks holding the same shard, one per shard group.
  std::uint32_t replica_group() const {
    return replica_groups_.at({coord_.pp, coord_.tp, (coord_.dp * plan_.cp + coord_.cp) % plan_.shard_ways()});
  }
  std::uint32_t cp_group() const { return cp_groups_.at({coord_.dp, coord_.pp, coord_.tp}); }
  std::uint32_t ep_group() const { return ep_groups_.at({coord_.pp, coord_.tp, (coord_.dp * plan_.cp + coord_.cp) / plan_.ep}); }
  // The expert-data-parallel group: the ranks holding the same experts, one per expert-parallel
  // block (the same position k mod ep among the dp x cp ranks), within this rank's shard group
  // under hybrid sharding: Megatron-Core's expert_data_parallel_group of dp cp / ep ranks (with
  // expert tensor parallelism equal to TP). Without expert parallelism, the data-parallel group.
  std::uint32_t expert_dp_group() const {
    if (plan_.ep <= 1) return dp_group();
    const int k = coord_.dp * plan_.cp + coord_.cp;
    const int block = k / plan_.shard_ways();
    return expert_dp_groups_.at({coord_.pp, coord_.tp, block * plan_.ep + k % plan_.ep});
  }
  // With expert parallelism, the ranks of the expert-data-parallel (shard) group: those that
  // reduce the experts' gradients and that their states are sharded over.
  int expert_dp_ways() const { return std::max(1, plan_.shard_ways() / plan_.ep); }

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
        if (plan_.hybrid_sharding()) {
          const int n = plan_.dp * plan_.cp, S = plan_.shard_ways();
          auto rank_of = [&](int k) { return graph_rank({k / plan_.cp, p, k % plan_.cp, t}); };
          for (int b = 0; b < n / S; ++b) {
            std::vector<std::uint32_t> r;
            for (int k = b * S; k < (b + 1) * S; ++k) r.push_back(rank_of(k));
            shard_groups_[{p, t, b}] = add(tag("shard", p, t, b).c_str(), tg::Stream::kDp, r);
          }
          for (int j = 0; j < S; ++j) {
            std::vector<std::uint32_t> r;
            for (int k = j; k < n; k += S) r.push_back(rank_of(k));
            replica_groups_[{p, t, j}] = add(tag("replica", p, t, j).c_str(), tg::Stream::kDp, r);
          }
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
          // Expert-data-parallel groups: position j of every expert-parallel block (of the
          // shard group, with hybrid sharding).
          const int S = plan_.shard_ways();
          for (int sb = 0; sb < n / S; ++sb) {
            for (int j = 0; j < plan_.ep; ++j) {
              std::vector<std::uint32_t> r;
              for (int k = sb * S + j; k < (sb + 1) * S; k += plan_.ep) r.push_back(graph_rank({k / plan_.cp, p, k % plan_.cp, t}));
              if (r.size() > 1) expert_dp_groups_[{p, t, sb * plan_.ep + j}] = add(tag("edp", p, t, sb * plan_.ep + j).c_str(), tg::Stream::kDp, r);
            }
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
  Split head_split_, cnn_split_;  // ZB-H1's dX / dW halves (CNN layers: no shapes)
  std::vector<Split> unit_split_;  // per transformer block, as unit_mix_
  std::vector<std::vector<WeightWork>> weight_work_;  // per micro-batch: its W pass, pending
  LayerCost embedding_, head_;
  std::vector<LayerRange> chunk_units_;  // chunk k of stage s at k p + s
  std::map<std::array<int, 3>, std::uint32_t> tp_groups_, dp_groups_, cp_groups_, ep_groups_, expert_dp_groups_, shard_groups_, replica_groups_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> seq_;
  std::vector<std::uint32_t> graph_rank_of_;  // grid rank -> graph rank
  std::uint32_t rank_ = 0;
  GridCoord coord_;
  std::vector<OpId> fwd_last_;
  std::vector<OpId> fwd_first_;  // per micro-batch: the first op of its forward on the first stage
  std::vector<OpId> dp_ops_;
  OpId bwd_last_ = 0;
  Bytes pending_grad_{0}, pending_expert_grad_{0};  // dense and expert gradients waiting for a bucket
  std::map<int, std::vector<OpId>> prefetched_;  // ZeRO-3: block unit -> its all-gather, issued ahead (gather_block)
};

}  // namespace

TrainingGraph build_training_graph(const Model& model, const ParallelPlan& plan, const std::string& file,
                                   const std::string& plan_path, bool symmetry) {
  validate_plan(model, plan, plan.gpus(), file, plan_path);
  RankGrid grid(plan, file, plan_path + "/order");
  // With hybrid sharding the data-parallel ranks fall into shard groups of S_d = S / cp of them;
  // the job is invariant under shifting the groups and, within every group alike, the positions
  // (which keeps the shard groups, the replica groups and the context-parallel groups), as long
  // as cp divides S and no expert-parallel blocks cut across them: otherwise every rank is
  // simulated.
  const bool hybrid = plan.hybrid_sharding();
  if (hybrid && (plan.shard_ways() % plan.cp != 0 || plan.ep > 1)) symmetry = false;
  const int group_dp = hybrid ? plan.shard_ways() / plan.cp : plan.dp;  // S_d
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
    // dd = (group shift) x S_d + (position shift); without hybrid sharding S_d = dp: a plain shift.
    const int shift = s.dd / group_dp, step = s.dd % group_dp;
    const int d = ((c.dp / group_dp + shift) % (plan.dp / group_dp)) * group_dp + (c.dp % group_dp + step) % group_dp;
    return grid.rank({d, c.pp, (c.cp + s.cc) % plan.cp, (c.tp + s.tt) % plan.tp});
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
  if (shifts.size() > 1) {
    // The shifts as digit shifts over the grid (task_graph.h, rank_symmetries.h): the data-
    // parallel coordinate as two digits (position in the shard group, then the group), the
    // context- and tensor-parallel coordinates as one each; digits of radix 1 never move.
    const GridCoord stride = grid.strides();
    const std::array<tg::GridAxis, 4> all_axes = {
        tg::GridAxis{static_cast<std::uint32_t>(group_dp), static_cast<std::uint32_t>(stride.dp)},
        tg::GridAxis{static_cast<std::uint32_t>(plan.dp / group_dp), static_cast<std::uint32_t>(stride.dp * group_dp)},
        tg::GridAxis{static_cast<std::uint32_t>(plan.cp), static_cast<std::uint32_t>(stride.cp)},
        tg::GridAxis{static_cast<std::uint32_t>(plan.tp), static_cast<std::uint32_t>(stride.tp)}};
    const auto digit_shifts = [&](const Shift& sh) {
      return std::array<int, 4>{sh.dd % group_dp, sh.dd / group_dp, sh.cc, sh.tt};
    };
    std::vector<tg::GridAxis> axes;
    for (const tg::GridAxis& a : all_axes) {
      if (a.radix > 1) axes.push_back(a);
    }
    std::vector<std::uint32_t> grid_index(order.begin(), order.end());
    tg::RankSymmetries symmetries(std::move(axes), std::move(grid_index));
    for (std::size_t k = 1; k < shifts.size(); ++k) {
      const std::array<int, 4> d = digit_shifts(shifts[k]);
      std::vector<std::uint32_t> shift;
      for (std::size_t i = 0; i < all_axes.size(); ++i) {
        if (all_axes[i].radix > 1) shift.push_back(static_cast<std::uint32_t>(d[i]));
      }
      symmetries.add_shift(std::move(shift));
    }
    out.graph.set_symmetries(std::move(symmetries));
  }
  return out;
}

}  // namespace cs::wl
