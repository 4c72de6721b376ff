#include "drivers/plan_estimate.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/errors.h"
#include "workloads/block_shape.h"
#include "workloads/pipeline_split.h"

namespace cs::drv {

namespace {

constexpr std::int64_t kOptimizerBytesPerParameter = 46;  // workloads/training_graph.cpp, optimizer step
// The two sizes each communication group is timed at (alpha + S / beta between them).
constexpr std::int64_t kProbeSmall = std::int64_t{8} << 20, kProbeLarge = std::int64_t{128} << 20;

// d x k, held below 2^58 ps (3.3 days) so that the few dozen terms of an estimate cannot
// overflow the clock whatever the plan (a hostile one ranks last instead).
Duration scaled(Duration d, double k) {
  const double ps = static_cast<double>(d.count()) * k;
  return Duration{ps >= 0x1p58 ? std::int64_t{1} << 58 : static_cast<std::int64_t>(ps)};
}
Duration positive(Duration d) { return d.count() > 0 ? d : Duration{0}; }

}  // namespace

PlanEstimator::PlanEstimator(const coll::Machine& machine, const wl::Model& model, std::shared_ptr<const cal::ProfileModel> profile)
    : machine_(machine), model_(model), gpu_(machine.cluster.gpu_spec(machine.cluster.gpus()[0])), simulator_(machine),
      profile_(std::move(profile)) {}

Duration PlanEstimator::collective(CollectiveOp op, int n, int stride, Bytes size) {
  if (n <= 1 || size.value() <= 0) return Duration{0};
  const auto key = std::make_tuple(static_cast<int>(op), n, stride);
  auto it = fits_.find(key);
  if (it == fits_.end()) {
    coll::CollectiveSpec spec;
    spec.op = op;
    const auto gpus = machine_.cluster.gpus();
    for (int i = 0; i < n; ++i) spec.ranks.push_back(gpus[static_cast<std::size_t>(i) * static_cast<std::size_t>(stride)]);
    std::array<double, 2> t{};
    const std::int64_t sizes[2] = {kProbeSmall, kProbeLarge};
    try {
      for (int k = 0; k < 2; ++k) {
        // Sizes as nccl-tests counts them: a multiple of the ranks for the split operations.
        spec.size = Bytes{sizes[k] / n * n};
        t[static_cast<std::size_t>(k)] = to_seconds(simulator_.run(spec).time);
      }
    } catch (const InputError&) {
      // A group the collective model refuses (beyond its limits): remembered as NaN; a plan that
      // needs it ranks last (estimate()), and its full simulation says why.
      t = {std::nan(""), std::nan("")};
    }
    const double per_byte = std::isnan(t[0]) ? t[0] : std::max(0.0, (t[1] - t[0]) / static_cast<double>(kProbeLarge - kProbeSmall));
    const double alpha = std::isnan(t[0]) ? t[0] : std::max(0.0, t[0] - per_byte * static_cast<double>(kProbeSmall));
    it = fits_.emplace(key, std::array<double, 2>{alpha, per_byte}).first;
  }
  if (std::isnan(it->second[0])) {
    refused_ = true;
    return Duration{0};
  }
  return duration_from_seconds(it->second[0] + it->second[1] * static_cast<double>(size.value()));
}

Duration PlanEstimator::tp_time(const wl::LayerCost& c, const wl::TpCollectives& n, int tp) {
  if (tp <= 1 || n.count() == 0) return Duration{0};
  return scaled(collective(CollectiveOp::kAllReduce, tp, 1, c.tp_collective_bytes), n.all_reduce) +
         scaled(collective(CollectiveOp::kAllGather, tp, 1, c.tp_collective_bytes), n.all_gather) +
         scaled(collective(CollectiveOp::kReduceScatter, tp, 1, c.tp_collective_bytes), n.reduce_scatter);
}

PlanEstimate PlanEstimator::estimate(const wl::ParallelPlan& plan) {
  refused_ = false;
  const char* dtype = enum_name(wl::kPrecisionNames, plan.precision);
  auto cm = compute_.find(dtype);
  if (cm == compute_.end()) cm = compute_.emplace(dtype, compute::ComputeModel(dtype, profile_)).first;
  const compute::ComputeModel& compute = cm->second;
  const wl::CostParams cost = wl::cost_params(model_, plan);
  const auto time = [&](tg::ComputeClass cls, Flops f, Bytes b, std::span<const tg::GemmShape> g = {}) {
    return f.value() <= 0 && b.value() <= 0 ? Duration{0} : compute.time(gpu_, cls, f, b, g);
  };
  struct Pass {
    Duration forward{0}, backward{0}, weight{0}, tp{0};
    std::int64_t parameters = 0;
    Bytes output{0};
  };
  // One unit's (block, CNN layer, embedding or head) times for one micro-batch.
  const auto pass = [&](const wl::LayerCost& c) {
    Pass s;
    const tg::ComputeClass attn = c.attention_fused ? tg::ComputeClass::kAttention : tg::ComputeClass::kGemm;
    const Duration gemm_f = time(tg::ComputeClass::kGemm, c.forward - c.attention_forward, c.gemm_forward_traffic, c.gemms);
    const std::vector<tg::GemmShape> bwd = wl::backward_gemms(c.gemms);
    const Duration gemm_b = time(tg::ComputeClass::kGemm, c.backward - c.attention_backward, c.gemm_backward_traffic, bwd);
    s.forward = gemm_f + time(attn, c.attention_forward, c.attention_forward_traffic) + time(tg::ComputeClass::kElementwise, Flops{0}, c.elementwise_forward);
    s.backward = gemm_b + time(attn, c.attention_backward, c.attention_backward_traffic) + time(tg::ComputeClass::kElementwise, Flops{0}, c.elementwise_backward);
    const bool full = plan.recompute == wl::Recompute::kFull;
    const Duration gemm_r = time(tg::ComputeClass::kGemm, c.recompute - c.attention_recompute, c.gemm_recompute_traffic, c.gemms);
    s.backward += gemm_r + time(attn, c.attention_recompute, c.attention_recompute_traffic) +
                  (full ? time(tg::ComputeClass::kElementwise, Flops{0}, c.elementwise_forward) : Duration{0});
    s.weight = scaled(gemm_b, 0.5);
    // Sequence-parallel all-gathers and reduce-scatters chunked beside the GEMMs (tp_comm_overlap;
    // workloads/training_graph.cpp, chunked_around_tp_collectives): per piece (a GEMM between an
    // all-gather and a reduce-scatter) k = tp chunks in three chains, the all-gathers, the GEMM
    // chunks (slowed beside communication kernels) and the reduce-scatters, each a chunk behind
    // the one before; what the piece takes beyond its GEMM alone is exposed, and the GEMM's
    // slowdown while a collective runs beside it.
    const bool chunk = plan.tp_comm_overlap && plan.tp > 1 && c.tp_forward.all_reduce == 0 && c.tp_backward.all_reduce == 0;
    const auto chunked = [&](const wl::TpCollectives& n, Duration gemm) {
      if (n.count() == 0) return Duration{0};
      const int pieces = std::max(1, n.reduce_scatter);
      const int k = plan.tp;
      const Bytes size{c.tp_collective_bytes.value() / k};
      const Duration ag = collective(CollectiveOp::kAllGather, k, 1, size), rs = collective(CollectiveOp::kReduceScatter, k, 1, size);
      const Duration alone = scaled(gemm, 1.0 / pieces);
      const Duration g = scaled(alone, 1.0 / k);
      Duration exposed{0};
      for (int i = 0; i < pieces; ++i) {
        const Duration a = i < n.all_gather ? ag : Duration{0}, r = i < n.reduce_scatter ? rs : Duration{0};
        const Duration piece = std::max({scaled(a, k) + g, a + scaled(g, k) + r, a + g + scaled(r, k)});
        // The GEMM runs slower only while a chunk's collective runs beside it.
        const Duration beside = std::min(alone, scaled(a + r, k));
        exposed += positive(piece - alone) + scaled(beside, compute.overlap_slowdown(gpu_) - 1);
      }
      return exposed;
    };
    const Duration tp_f = chunk ? chunked(c.tp_forward, gemm_f) : tp_time(c, c.tp_forward, plan.tp);
    const Duration tp_b = chunk ? chunked(c.tp_backward, gemm_b) + (full ? chunked(c.tp_forward, gemm_r) : Duration{0})
                                : tp_time(c, c.tp_backward, plan.tp) + (full ? tp_time(c, c.tp_forward, plan.tp) : Duration{0});
    s.tp = tp_f + tp_b;
    const int grid_stride = plan.tp * plan.cp * plan.pp;
    if (c.moe_all_to_all_bytes.value() > 0 && plan.ep > 1) {
      s.tp += scaled(collective(CollectiveOp::kAllToAll, plan.ep, grid_stride, c.moe_all_to_all_bytes), 4);
    }
    if (plan.cp > 1 && c.cp_kv_bytes.value() > 0) {
      Duration cp{0};
      switch (plan.cp_comm_type) {
        case wl::CpCommType::kP2p:  // the ring's steps beside the attention of each step
          cp = positive(scaled(collective(CollectiveOp::kSendRecv, 2, plan.tp, c.cp_kv_bytes), plan.cp - 1) -
                        time(attn, c.attention_forward, c.attention_forward_traffic));
          cp = scaled(cp, 3);  // forward, and twice the bytes in backward
          break;
        case wl::CpCommType::kAllGather:
          cp = collective(CollectiveOp::kAllGather, plan.cp, plan.tp, Bytes{c.cp_kv_bytes.value() * plan.cp}) +
               collective(CollectiveOp::kReduceScatter, plan.cp, plan.tp, Bytes{c.cp_kv_bytes.value() * plan.cp});
          break;
        case wl::CpCommType::kA2a:
          cp = scaled(collective(CollectiveOp::kAllToAll, plan.cp, plan.tp, c.cp_kv_bytes + c.cp_q_bytes), 4);
          break;
      }
      s.tp += cp;
    }
    s.parameters = c.parameters;
    s.output = c.output_bytes;
    return s;
  };

  const int p = plan.pp;
  const std::vector<int> stage_units = wl::stage_layers(model_, plan);
  const bool transformer = model_.family == wl::ModelFamily::kTransformer;
  std::vector<Pass> units;
  const int total_units = wl::pipeline_layers(model_);
  // Transformer blocks cost the same but for a mixture's dense ones: time one of each kind.
  std::optional<Pass> dense_block, moe_block;
  for (int u = 0; u < total_units; ++u) {
    if (transformer) {
      const bool moe = model_.transformer.is_moe_layer(u);
      std::optional<Pass>& cached = moe ? moe_block : dense_block;
      if (!cached) cached = pass(wl::transformer_block_cost(model_, cost, u));
      units.push_back(*cached);
    } else {
      units.push_back(pass(wl::pipeline_layer_cost(model_, u, cost)));
    }
  }
  const Pass embedding = transformer ? pass(wl::embedding_cost(model_, cost)) : Pass{};
  const Pass head = transformer ? pass(wl::head_cost(model_, cost)) : Pass{};

  std::vector<Duration> stage_time(static_cast<std::size_t>(p));
  std::vector<Duration> stage_weight(static_cast<std::size_t>(p)), stage_backward(static_cast<std::size_t>(p));
  std::vector<std::int64_t> stage_params(static_cast<std::size_t>(p));
  Duration tp_worst{0};
  Bytes boundary{0};
  int first = 0;
  for (int s = 0; s < p; ++s) {
    Pass sum;
    for (int u = first; u < first + stage_units[static_cast<std::size_t>(s)]; ++u) {
      const Pass& x = units[static_cast<std::size_t>(u)];
      sum.forward += x.forward, sum.backward += x.backward, sum.weight += x.weight, sum.tp += x.tp;
      sum.parameters += x.parameters;
      boundary = x.output;
    }
    first += stage_units[static_cast<std::size_t>(s)];
    for (const Pass* extra : {s == 0 ? &embedding : nullptr, s == p - 1 ? &head : nullptr}) {
      if (extra == nullptr) continue;
      sum.forward += extra->forward, sum.backward += extra->backward, sum.weight += extra->weight, sum.tp += extra->tp;
      sum.parameters += extra->parameters;
    }
    const auto i = static_cast<std::size_t>(s);
    stage_time[i] = sum.forward + sum.backward + sum.tp;
    stage_backward[i] = sum.backward;
    stage_weight[i] = sum.weight;
    stage_params[i] = sum.parameters;
    tp_worst = std::max(tp_worst, sum.tp);
  }

  // A pipeline send of one micro-batch's activation (scatter/gather: 1/t of it, then an all-gather over TP).
  Duration p2p{0};
  if (p > 1) {
    const int stride = plan.tp * plan.cp;
    const bool scatter = plan.pp_scatter_gather && plan.tp > 1 && !plan.sequence_parallel;
    p2p = scatter ? collective(CollectiveOp::kSendRecv, 2, stride, Bytes{boundary.value() / plan.tp}) +
                        collective(CollectiveOp::kAllGather, plan.tp, 1, boundary)
                  : collective(CollectiveOp::kSendRecv, 2, stride, boundary);
  }
  const int m = plan.micro_batches();
  const Duration worst = *std::max_element(stage_time.begin(), stage_time.end());
  Duration sum_stages{0};
  for (Duration d : stage_time) sum_stages += d;
  PlanEstimate r;
  const int v = plan.schedule == wl::PipelineSchedule::kInterleaved ? plan.virtual_stages : 1;
  const Duration per_mb = worst + scaled(p2p, 2.0 * v);
  switch (plan.schedule) {
    case wl::PipelineSchedule::kInterleaved:
      r.bubble = scaled(worst, static_cast<double>(p - 1) / v);
      r.pipeline = scaled(per_mb, m) + r.bubble;
      break;
    case wl::PipelineSchedule::kZbH1: {
      Duration w{0};
      for (std::size_t s = 0; s < stage_weight.size(); ++s) w = std::max(w, stage_weight[s]);
      r.bubble = scaled(positive(worst - w), p - 1);
      r.pipeline = scaled(per_mb, m) + r.bubble;
      break;
    }
    default:
      r.bubble = sum_stages - worst + scaled(p2p, 2.0 * (p - 1));
      r.pipeline = scaled(per_mb, m - 1) + sum_stages + scaled(p2p, 2.0 * (p - 1));
      break;
  }
  r.tp_comm = scaled(tp_worst, m);

  // Data parallelism, for the stage with the most parameters.
  const std::int64_t params = *std::max_element(stage_params.begin(), stage_params.end());
  const Duration backward = *std::max_element(stage_backward.begin(), stage_backward.end());
  const int dp_ranks = plan.dp * plan.cp;
  const int dp_stride = plan.cp == 1 ? plan.tp * plan.pp : plan.tp;
  const Bytes grads{params * plan.grad_reduce_bytes};
  const Bytes weights{params * wl::kActivationBytes};
  Duration exposed{0};
  r.dp_window = plan.dp_overlap ? backward : Duration{0};
  r.dp_bytes = grads;
  if (dp_ranks > 1) {
    const Duration window = r.dp_window;
    switch (plan.zero) {
      case wl::ZeroStage::kNone:
        exposed = positive(collective(CollectiveOp::kAllReduce, dp_ranks, dp_stride, grads) - window);
        break;
      case wl::ZeroStage::kOptimizer:
      case wl::ZeroStage::kGradients: {
        const Duration rs = collective(CollectiveOp::kReduceScatter, dp_ranks, dp_stride, grads);
        exposed = plan.zero == wl::ZeroStage::kOptimizer ? positive(rs - window) : scaled(positive(rs - backward), m) + positive(rs - window);
        if (!plan.overlap_param_gather) exposed += collective(CollectiveOp::kAllGather, dp_ranks, dp_stride, weights);
        break;
      }
      case wl::ZeroStage::kParameters: {
        const Duration ag = collective(CollectiveOp::kAllGather, dp_ranks, dp_stride, weights);
        const Duration rs = collective(CollectiveOp::kReduceScatter, dp_ranks, dp_stride, grads);
        exposed = scaled(positive(scaled(ag, 2) + rs - worst), m) + ag;
        break;
      }
    }
  }
  r.exposed_dp = exposed;
  const std::int64_t shard = plan.zero == wl::ZeroStage::kNone ? 1 : plan.shard_ways();
  r.optimizer = time(tg::ComputeClass::kOptimizer, Flops{0}, Bytes{params / shard * kOptimizerBytesPerParameter});
  r.iteration = r.pipeline + r.exposed_dp + r.optimizer;
  if (refused_ || r.iteration > kMaxDuration) r.iteration = kMaxDuration;  // refused, or beyond the clock: last
  return r;
}

}  // namespace cs::drv
