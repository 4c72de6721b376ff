#include "drivers/serving_step_time.h"

#include <bit>
#include <cmath>

#include "core/errors.h"

namespace cs::drv {
namespace {

// The grid point at or below `size` and the next one: powers of two and 1.5 times them.
std::pair<std::int64_t, std::int64_t> grid_bracket(std::int64_t size) {
  const std::int64_t p = std::int64_t{1} << (63 - std::countl_zero(static_cast<std::uint64_t>(size)));
  const std::int64_t mid = p + p / 2;
  if (size < mid) return {p, mid};
  return {mid, 2 * p};
}

// `at(bytes)` at `size`: at the grid points around it, interpolated linearly.
template <class At>
Duration interpolated(Bytes size, const At& at) {
  const auto [lo, hi] = grid_bracket(size.value());
  const Duration a = at(lo);
  if (size.value() == lo) return a;
  const Duration b = at(hi);
  const double f = static_cast<double>(size.value() - lo) / static_cast<double>(hi - lo);
  return a + Duration{static_cast<std::int64_t>(std::llround(f * static_cast<double>((b - a).count())))};
}

}  // namespace

ServingStepTime::ServingStepTime(const coll::Machine& machine, const wl::Model& model, wl::InferenceShard shard,
                                 std::vector<std::vector<topo::NodeId>> replica_gpus,
                                 std::shared_ptr<const cal::ProfileModel> profile)
    : machine_(machine),
      model_(model),
      shard_(shard),
      replica_gpus_(std::move(replica_gpus)),
      gpu_(&machine.cluster.gpu_spec(replica_gpus_.at(0).at(0))),
      compute_(enum_name(wl::kPrecisionNames, shard.precision), std::move(profile)) {
  // One signature per replica: replicas inside one server at the same local GPU indices of the
  // same GPU model time their all-reduces alike; a replica across servers is its own.
  for (std::size_t r = 0; r < replica_gpus_.size(); ++r) {
    const auto& gpus = replica_gpus_[r];
    const int server = machine.cluster.node(gpus[0]).server;
    bool one_server = server >= 0;
    std::string sig = machine.cluster.node(gpus[0]).model;
    for (topo::NodeId g : gpus) {
      one_server = one_server && machine.cluster.node(g).server == server;
      sig.append("/").append(std::to_string(machine.cluster.node(g).local));
      sig.append(":").append(std::to_string(machine.cluster.out_links(g).size()));
    }
    if (!one_server) sig = "replica " + std::to_string(r);
    auto [it, fresh] = signature_index_.emplace(sig, static_cast<int>(r));
    signature_of_.push_back(it->second);
  }
}

Duration ServingStepTime::simulated(CollectiveOp op, int replica, Bytes size) {
  const int key_replica = signature_of_.at(static_cast<std::size_t>(replica));
  const auto key = std::make_tuple(op, key_replica, size.value());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  return cache_.emplace(key, simulate(op, replica_gpus_.at(static_cast<std::size_t>(key_replica)), size)).first->second;
}

Duration ServingStepTime::simulate(CollectiveOp op, std::vector<topo::NodeId> ranks, Bytes size) {
  if (!collectives_) collectives_ = std::make_unique<coll::CollectiveSimulator>(machine_);
  coll::CollectiveSpec spec;
  spec.op = op;
  spec.size = size;
  spec.ranks = std::move(ranks);
  return collectives_->run(spec).time;
}

Duration ServingStepTime::collective(CollectiveOp op, int replica, Bytes size) {
  if (replica_gpus_.at(static_cast<std::size_t>(replica)).size() <= 1 || size.value() <= 0) return Duration{0};
  return interpolated(size, [&](std::int64_t bytes) { return simulated(op, replica, Bytes{bytes}); });
}

StepBreakdown ServingStepTime::step(int replica, const wl::InferenceBatch& batch) {
  return step(replica, batch, 0, model_.transformer.layers, true);
}

StepBreakdown ServingStepTime::step(int replica, const wl::InferenceBatch& batch, int first, int count, bool head) {
  StepBreakdown out;
  if (batch.tokens <= 0) return out;
  const wl::TransformerConfig& c = model_.transformer;
  // Dense blocks first (DeepSeek's first_k_dense_replace), then the mixture's: two kinds at most,
  // each intersected with the stage's blocks.
  const int dense = c.is_moe() ? c.dense_layers : c.layers;
  const int kinds[2][2] = {{0, dense}, {dense, c.layers}};
  for (const auto& [begin, end] : kinds) {
    const int lo = std::max(begin, first), hi = std::min(end, first + count);
    if (hi <= lo) continue;
    const wl::InferenceBlockCost b = wl::inference_block_cost(c, lo, batch, shard_);
    const auto n = static_cast<std::int64_t>(hi - lo);
    out.gemm += compute_.time(*gpu_, tg::ComputeClass::kGemm, b.gemm.flops, b.gemm.memory, b.gemm.gemms) * n;
    out.attention += compute_.time(*gpu_, tg::ComputeClass::kAttention, b.attention.flops, b.attention.memory) * n;
    out.elementwise += compute_.time(*gpu_, tg::ComputeClass::kElementwise, Flops{0}, b.elementwise.memory) * n;
    out.communication += collective(CollectiveOp::kAllReduce, replica, b.tp_all_reduce) * (n * b.all_reduces);
    out.communication += collective(CollectiveOp::kAllToAll, replica, b.ep_all_to_all) * (n * b.all_to_alls);
  }
  if (head && batch.sampled > 0) {
    const wl::InferenceOpCost h = wl::inference_head_cost(c, batch, shard_);
    out.head = compute_.time(*gpu_, tg::ComputeClass::kGemm, h.flops, h.memory, h.gemms);
  }
  return out;
}

Duration ServingStepTime::send_recv(topo::NodeId from, topo::NodeId to, Bytes size) {
  if (size.value() <= 0 || from == to) return Duration{0};
  const auto at = [&](std::int64_t bytes) {
    const auto key = std::make_tuple(from.value, to.value, bytes);
    if (auto it = p2p_cache_.find(key); it != p2p_cache_.end()) return it->second;
    return p2p_cache_.emplace(key, simulate(CollectiveOp::kSendRecv, {from, to}, Bytes{bytes})).first->second;
  };
  return interpolated(size, at);
}

}  // namespace cs::drv
