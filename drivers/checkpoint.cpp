#include "drivers/checkpoint.h"

#include <algorithm>
#include <set>

#include "workloads/memory.h"

namespace cs::drv {

Bytes checkpoint_bytes(const wl::Model& m) {
  return Bytes{(wl::kWeightBytesPerParameter + wl::kOptimizerBytesPerParameter) * wl::parameter_count(m)};
}

int checkpoint_writers(const wl::ParallelPlan& plan) {
  const int replicas = plan.zero >= wl::ZeroStage::kOptimizer ? plan.shard_ways() : 1;
  return plan.tp * plan.pp * replicas;
}

std::optional<CheckpointWrite> checkpoint_write(const topo::Cluster& cluster, const wl::Model& m, const wl::ParallelPlan& plan) {
  CheckpointWrite w;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const topo::NodeId id{i};
    if (cluster.node(id).kind != topo::NodeKind::kStorage) continue;
    ++w.storage_devices;
    for (const topo::LinkId l : cluster.in_links(id)) w.storage_ingress += cluster.link(l).bandwidth;
  }
  if (w.storage_ingress.value() <= 0) return std::nullopt;

  // The servers the job runs on, their GPUs and their fabric uplinks.
  std::set<std::int32_t> servers;
  const std::size_t job = std::min(cluster.gpus().size(), static_cast<std::size_t>(plan.gpus()));
  for (std::size_t g = 0; g < job; ++g) servers.insert(cluster.node(cluster.gpus()[g]).server);
  int server_gpus = 0;
  for (const topo::NodeId g : cluster.gpus()) server_gpus += servers.count(cluster.node(g).server) ? 1 : 0;
  Bandwidth uplinks{0};
  for (std::uint32_t l = 0; l < cluster.link_count(); ++l) {
    const topo::LinkInfo& link = cluster.link(topo::LinkId{l});
    const topo::NodeInfo& src = cluster.node(link.src);
    if (link.tier == 1 && src.server >= 0 && servers.count(src.server)) uplinks += link.bandwidth;
  }

  w.size = checkpoint_bytes(m);
  w.writers = std::max(1, std::min(checkpoint_writers(plan), static_cast<int>(job)));
  w.per_writer = Bytes{(w.size.value() + w.writers - 1) / w.writers};
  if (uplinks.value() > 0 && server_gpus > 0) w.writers_egress = uplinks * (static_cast<double>(w.writers) / server_gpus);
  w.bandwidth = w.writers_egress.value() > 0 ? std::min(w.storage_ingress, w.writers_egress) : w.storage_ingress;
  w.save_time = long_transfer_time(w.size, w.bandwidth);
  return w;
}

}  // namespace cs::drv
