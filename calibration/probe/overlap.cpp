// A GEMM beside an NCCL all-reduce on the same GPU (docs/calibration.md, "Overlap"): the GEMM's
// median time alone on GPU 0, then with all-reduces running on every rank's communication
// stream for the whole of each sample; slowdown = beside / alone. Needs two GPUs or more
// (single process): with one there is nothing to overlap and no point is recorded.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "calibration/probe/context.h"
#include "calibration/probe/gemm.h"
#include "calibration/probe/nccl_group.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/table.h"

namespace cs::probe {

void run_overlap_section(ProbeContext& ctx) {
  if (ctx.processes().distributed() || ctx.device_count() < 2) {
    ctx.out() << "\n## overlap: none (needs two GPUs in one process)\n" << std::flush;
    return;
  }
  int ranks = 1;
  while (ranks * 2 <= ctx.device_count()) ranks *= 2;
  const std::vector<std::int64_t> gemm_dims = ctx.quick() ? std::vector<std::int64_t>{8192}
                                                          : std::vector<std::int64_t>{4096, 8192};
  std::vector<std::int64_t> coll_bytes = ctx.quick() ? std::vector<std::int64_t>{256LL << 20}
                                                     : std::vector<std::int64_t>{32LL << 20, 256LL << 20};
  if (ctx.max_bytes() > 0) {
    coll_bytes.erase(std::remove_if(coll_bytes.begin(), coll_bytes.end(), [&](std::int64_t b) { return b > ctx.max_bytes(); }),
                     coll_bytes.end());
  }
  if (coll_bytes.empty()) {
    ctx.out() << "\n## overlap: none (--max-bytes is below the collective sizes)\n" << std::flush;
    return;
  }
  ctx.out() << "\n## overlap: bf16 GEMM on GPU 0 beside an all_reduce on " << ranks << " ranks\n" << std::flush;

  const int dev = ctx.device(0).cuda_device;
  const DeviceInfo& info = ctx.device(0);
  try {
    std::vector<int> devices;
    for (int d = 0; d < ranks; ++d) devices.push_back(d);
    NcclGroup group(devices, nullptr, ranks, static_cast<std::size_t>(*std::max_element(coll_bytes.begin(), coll_bytes.end())));
    Stream compute(dev);
    GemmEngine engine(dev);
    const std::int64_t dmax = *std::max_element(gemm_dims.begin(), gemm_dims.end());
    const auto elems = static_cast<std::size_t>(dmax * dmax);
    GemmOperands ops(dev, "bf16", elems, elems, elems, compute.get());
    const StopRule rule = ctx.stop_rule();

    for (const std::int64_t d : gemm_dims) {
      cal::GemmShape shape;
      shape.dtype = "bf16";
      shape.m = shape.n = shape.k = d;
      GemmRunner gemm(engine, shape, ops, compute.get());
      SampleOptions so;
      so.rule = rule;
      so.flush_l2 = false;
      so.block = false;
      Sampler alone_sampler(dev, compute.get(), info.nvml, nullptr, nullptr, ctx.interrupted());
      const cal::Timing alone = alone_sampler.measure([&] { gemm.enqueue(); }, so);

      for (const std::int64_t bytes : coll_bytes) {
        const auto counts = collective_counts("all_reduce", bytes, ranks, 2);
        const cal::Timing coll = group.measure("all_reduce", *counts, rule, ctx.interrupted());
        // Enough all-reduces to cover the GEMM three times over, so it runs beside them throughout.
        const int calls = std::max(2, static_cast<int>(std::ceil(3 * to_seconds(alone.median) / to_seconds(coll.median))));
        Event start(dev), end(dev);
        std::vector<double> kept;
        double spread = 1e300;
        int last_checked = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (;;) {
          ctx.check_interrupted();
          for (int i = 0; i < calls; ++i) group.enqueue("all_reduce", *counts);
          {
            ScopedDevice on(dev);
            CS_CUDA(cudaEventRecord(start.get(), compute.get()));
            gemm.enqueue();
            CS_CUDA(cudaEventRecord(end.get(), compute.get()));
            CS_CUDA(cudaEventSynchronize(end.get()));
          }
          group.synchronize();
          kept.push_back(elapsed_seconds(start, end));
          const int n = static_cast<int>(kept.size());
          if (spread_check_due(rule, n, last_checked)) {
            spread = summarize(kept).spread;
            last_checked = n;
          }
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (should_stop(rule, n, spread, elapsed) != StopReason::kContinue) break;
        }
        cal::OverlapPoint p;
        p.gemm = shape;
        p.collective_op = "all_reduce";
        p.collective_ranks = ranks;
        p.collective_bytes = Bytes{counts->bytes};
        p.alone = alone.median;
        p.beside = duration_from_seconds(summarize(kept).median_s);
        ctx.emit(ctx.profile().overlap, p, overlap_table_row);
      }
    }
  } catch (const ProbeError& e) {
    if (e.fatal()) throw;
    // Overlap points have no status: the failure goes to the notes and marks the run incomplete.
    ctx.note(std::string("overlap not measured: ") + e.what());
    ctx.mark_incomplete();
    if (ctx.is_root()) ctx.out() << " overlap failed: " << e.what() << "\n" << std::flush;
  }
}

}  // namespace cs::probe
