// The GPUs a multi-job scheduler hands out (docs/scheduling.md, "Placement"): servers with their
// GPUs, each GPU's free share in thousandths (a whole GPU is 1000; the Alibaba v2023 trace shares
// GPUs between small tasks), and each server's leaf group: the set of leaf switches its NICs
// connect to (servers under the same leaves on a leaf-spine; the same rail leaves on a
// rail-optimized fabric). Traffic between servers of one group stays below the spines.
//
// Placement policies (drivers/schedule_config.h, PlacementPolicy) pick GPUs for a job of g GPUs
// whose tensor-parallel groups of u GPUs must each sit in one server: a server gives a job a
// multiple of u of its whole free GPUs, lowest local index first (rail order). A share of one GPU
// goes on the GPU with the least free share that holds it (first_fit: the lowest-numbered one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"
#include "drivers/schedule_config.h"
#include "topology/cluster.h"

namespace cs::drv {

struct PoolServer {
  int first_gpu = 0;  // index of its first GPU in the pool (= cluster GPU rank order)
  int gpus = 0;
  int group = 0;      // leaf group
  std::string model;  // GPU model
};

// What a job asks for.
struct GpuRequest {
  int gpus = 1;
  int milli = 1000;   // < 1000: a share of one GPU
  int unit = 1;       // GPUs that must share a server (tensor parallelism)
  const std::vector<std::string>* models = nullptr;  // allowed GPU models; null or empty: any
};

struct Placement {
  std::vector<int> gpus;  // pool GPU indices in rank order (server order, local order)
  int milli = 1000;
  int servers = 0, groups = 0;
};

// The GPU nodes of a node list (the Alibaba v2023 openb_node_list format: columns "gpu" and,
// optionally, "model"; nodes without GPUs left out). With a fraction f < 1, GPU node i is kept
// when floor((i + 1) f) > floor(i f): evenly spaced, so the mix of models and sizes stays.
std::vector<PoolServer> read_node_list(const std::string& path, double fraction = 1);

class GpuPool {
 public:
  // From a cluster: servers in rank order, groups from the leaf switches of their NICs.
  explicit GpuPool(const topo::Cluster& cluster);
  // From a node list: (GPU count, model) per server, one group, no network.
  explicit GpuPool(std::vector<PoolServer> servers);

  int gpus() const { return static_cast<int>(free_.size()); }
  int groups() const { return groups_; }
  const std::vector<PoolServer>& servers() const { return servers_; }
  int server_of(int gpu) const { return server_of_[static_cast<std::size_t>(gpu)]; }

  // Whether the request could ever be met on an empty pool with every GPU up; the reason if not.
  std::optional<std::string> never_fits(const GpuRequest& r) const;
  // GPUs for the request now under `policy` (kNetworkAware is not handled here: the scheduler
  // times the candidates of kPacked and kTopology); nothing when it does not fit.
  std::optional<Placement> place(const GpuRequest& r, PlacementPolicy policy, Rng& rng) const;
  void allocate(const Placement& p);
  void release(const Placement& p);
  // A GPU fails (its free share is lost until it is repaired) or comes back.
  void set_down(int gpu, bool down);
  bool down(int gpu) const { return down_[static_cast<std::size_t>(gpu)]; }

  std::int64_t allocated_milli() const { return allocated_milli_; }
  int down_count() const { return down_count_; }
  // Whole free GPUs on servers with fewer than `threshold` of them (docs/scheduling.md,
  // "Results": free GPUs that no waiting job can use).
  int fragmented(int threshold) const;
  int max_server_gpus() const { return max_server_gpus_; }

 private:
  int usable(int server, const GpuRequest& r) const;  // whole free GPUs, a multiple of r.unit
  bool allowed(int server, const GpuRequest& r) const;
  Placement take(const std::vector<std::pair<int, int>>& per_server) const;  // (server, GPUs)
  std::optional<Placement> place_share(const GpuRequest& r, PlacementPolicy policy, Rng& rng) const;
  std::optional<Placement> place_whole(const GpuRequest& r, PlacementPolicy policy, Rng& rng) const;
  void finish();

  std::vector<PoolServer> servers_;
  std::vector<int> server_of_;
  std::vector<std::int16_t> free_;     // per GPU, thousandths
  std::vector<bool> down_;
  std::vector<int> whole_free_;        // per server: GPUs with all 1000 free
  int groups_ = 1;
  std::int64_t allocated_milli_ = 0;
  int down_count_ = 0;
  int max_server_gpus_ = 0;
};

}  // namespace cs::drv
