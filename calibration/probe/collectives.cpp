// The NCCL collectives (docs/calibration.md, "Collectives"): every op at every power-of-two rank
// count and every size, with NCCL's automatic choice and, under --algos, with each algorithm forced
// through NCCL_ALGO (read by NCCL at communicator creation, so the communicators are made again
// for each forced algorithm).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "calibration/probe/context.h"
#include "calibration/probe/nccl_group.h"
#include "calibration/probe/nccl_log.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/process_group.h"
#include "calibration/probe/table.h"

namespace cs::probe {

namespace {

constexpr int kBf16 = 2;

// Sets NCCL_ALGO for the next communicators; "auto" restores what the user had.
class AlgoEnvironment {
 public:
  AlgoEnvironment() {
    if (const char* v = std::getenv("NCCL_ALGO")) user_ = std::string(v);
  }
  ~AlgoEnvironment() { set("auto"); }
  AlgoEnvironment(const AlgoEnvironment&) = delete;
  AlgoEnvironment& operator=(const AlgoEnvironment&) = delete;
  void set(const std::string& algorithm) {
    if (algorithm == "auto") {
      if (user_) {
        setenv("NCCL_ALGO", user_->c_str(), 1);
      } else {
        unsetenv("NCCL_ALGO");
      }
      return;
    }
    static const std::map<std::string, std::string> kNcclNames = {{"ring", "Ring"}, {"tree", "Tree"}, {"nvls", "NVLS"}};
    setenv("NCCL_ALGO", kNcclNames.at(algorithm).c_str(), 1);
  }

 private:
  std::optional<std::string> user_;
};

// The largest send and receive buffers any op needs at any of `sizes`.
std::size_t buffer_need(const std::vector<std::int64_t>& sizes, int ranks) {
  std::int64_t need = 0;
  for (const std::string& op : collective_ops()) {
    for (const std::int64_t s : sizes) {
      if (const auto c = collective_counts(op, s, ranks, kBf16)) need = std::max({need, c->send_bytes, c->recv_bytes});
    }
  }
  return static_cast<std::size_t>(need);
}

}  // namespace

void run_collectives_section(ProbeContext& ctx) {
  ProcessGroup& world = ctx.processes();
  const bool distributed = world.distributed();
  const int total_ranks = distributed ? world.size() : ctx.device_count();
  const std::vector<int> rank_list = rank_counts(total_ranks);
  if (rank_list.empty()) {
    ctx.out() << "\n## collectives: none (one GPU)\n" << std::flush;
    return;
  }
  const std::vector<std::int64_t> sizes = collective_sizes(ctx.quick(), ctx.max_bytes());
  std::vector<std::string> algorithms = {"auto"};
  if (ctx.options().algos) {
    for (const auto& a : forced_algorithms()) algorithms.push_back(a);
  }
  NcclLogTail tail(ctx.nccl_log());
  AlgoEnvironment algo_env;

  for (const std::string& algorithm : algorithms) {
    algo_env.set(algorithm);
    for (const int n : rank_list) {
      std::unique_ptr<ProcessGroup> sub = world.first(n);
      if (sub == nullptr) continue;  // this process is not among the first n (MPI)
      const int nodes = ctx.nodes_of_first(n);
      const std::string link_class = nodes > 1 ? "network" : ctx.group_link_class(n);

      // Buffers: what the largest size needs, within about a third of free memory per buffer.
      std::vector<int> devices;
      if (distributed) {
        devices.push_back(ctx.device(0).cuda_device);
      } else {
        for (int d = 0; d < n; ++d) devices.push_back(d);
      }
      std::size_t free_min = SIZE_MAX;
      for (const int d : devices) {
        std::size_t free_bytes = 0, total = 0;
        ScopedDevice on(d);
        CS_CUDA(cudaMemGetInfo(&free_bytes, &total));
        free_min = std::min(free_min, free_bytes);
      }
      std::size_t buffer = std::min(buffer_need(sizes, n), free_min / 3);
      std::unique_ptr<NcclGroup> group;
      try {
        group = std::make_unique<NcclGroup>(devices, distributed ? sub.get() : nullptr, n, buffer);
      } catch (const ProbeError& e) {
        if (e.fatal()) throw;
        ctx.note("collectives with " + std::to_string(n) + " ranks, algorithm " + algorithm + " not run: " + e.what());
        if (algorithm == "auto") ctx.mark_incomplete();  // a forced algorithm NCCL refuses is not a failure
        if (ctx.is_root()) ctx.out() << "\n## collectives, " << n << " ranks, " << algorithm << ": " << e.what() << "\n";
        continue;
      }

      bool group_lost = false;  // the communicators could not be made again after an error
      for (const std::string& op : collective_ops()) {
        if (group_lost) break;
        if (!algorithm_supports(algorithm, op)) continue;
        if (ctx.is_root()) ctx.out() << "\n" << collective_table_header(op, n, nodes, algorithm) << "\n" << std::flush;
        bool first = true;
        bool skipped_for_memory = false;
        for (const std::int64_t size : sizes) {
          const std::optional<CollectiveCounts> counts = collective_counts(op, size, n, kBf16);
          if (!counts) continue;
          if (static_cast<std::size_t>(std::max(counts->send_bytes, counts->recv_bytes)) > group->buffer_bytes()) {
            skipped_for_memory = true;
            break;
          }
          cal::CollectivePoint pt;
          pt.op = op;
          pt.ranks = n;
          pt.nodes = nodes;
          pt.bytes = Bytes{counts->bytes};
          pt.dtype = "bf16";
          pt.link_class = link_class;
          pt.algorithm = algorithm;
          pt.protocol = "auto";
          (void)tail.read_new();  // drop what earlier points logged
          const bool was_first = first;
          first = false;
          try {
            pt.timing = group->measure(op, *counts, ctx.stop_rule(), ctx.interrupted());
            pt.status = cal::PointStatus::kOk;
          } catch (const Interrupted& e) {
            pt.status = cal::PointStatus::kFailed;
            pt.error = e.what();
            ctx.count_failure();
            ctx.emit(ctx.profile().collectives, pt, [&](const cal::CollectivePoint& p) {
              return collective_table_row(p, counts->elements);
            });
            throw;
          } catch (const ProbeError& e) {
            if (e.fatal()) throw;
            try {
              group->reset();
            } catch (const ProbeError& again) {
              if (again.fatal()) throw;
              ctx.note("collectives with " + std::to_string(n) + " ranks, algorithm " + algorithm +
                       " stopped: the communicators could not be made again: " + again.what());
              pt.status = cal::PointStatus::kFailed;
              pt.error = e.what();
              pt.timing.reset();
              ctx.count_failure();
              ctx.emit(ctx.profile().collectives, pt, [&](const cal::CollectivePoint& p) {
                return collective_table_row(p, counts->elements);
              });
              group_lost = true;
              break;
            }
            if (algorithm != "auto" && was_first) {
              // NCCL does not offer this algorithm for this op here (e.g. NVLS without NVSwitch).
              ctx.note("NCCL_ALGO=" + algorithm + ": " + op + " with " + std::to_string(n) + " ranks not available: " + e.what());
              if (ctx.is_root()) ctx.out() << "  not available with this algorithm: " << e.what() << "\n";
              break;
            }
            pt.status = cal::PointStatus::kFailed;
            pt.error = e.what();
            ctx.count_failure();
          }
          if (pt.status == cal::PointStatus::kOk) {
            pt.nccl_choice = dominant_choice(tail.read_new(), nccl_function_name(op));
          } else {
            pt.timing.reset();
          }
          ctx.emit(ctx.profile().collectives, pt, [&](const cal::CollectivePoint& p) {
            return collective_table_row(p, counts->elements);
          });
        }
        if (skipped_for_memory) {
          ctx.note(op + " with " + std::to_string(n) + " ranks: sizes above " + std::to_string(group->buffer_bytes()) +
                   " bytes per buffer not measured (GPU memory)");
        }
      }
    }
  }
}

}  // namespace cs::probe
