// The warm-up and the GEMM section (docs/calibration.md, "GEMMs").
#include <array>
#include <chrono>
#include <map>
#include <memory>

#include "calibration/probe/context.h"
#include "calibration/probe/gemm.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/table.h"

namespace cs::probe {

void run_warmup(ProbeContext& ctx, const std::vector<int>& devices, double seconds) {
  if (seconds <= 0 || devices.empty()) return;
  // A sustained bf16 8192^3 GEMM on every device (mamf-finder's 30 s): clocks and temperature
  // reach their steady state before anything is timed.
  struct Warm {
    std::unique_ptr<Stream> stream;
    std::unique_ptr<GemmEngine> engine;
    std::unique_ptr<GemmOperands> ops;
    std::unique_ptr<GemmRunner> runner;
  };
  cal::GemmShape shape;
  shape.dtype = "bf16";
  shape.m = shape.n = shape.k = 8192;
  const auto elems = static_cast<std::size_t>(shape.m * shape.k);
  try {
    std::vector<Warm> warm;
    for (const int d : devices) {
      Warm w;
      w.stream = std::make_unique<Stream>(d);
      w.engine = std::make_unique<GemmEngine>(d);
      w.ops = std::make_unique<GemmOperands>(d, "bf16", elems, elems, elems, w.stream->get());
      w.runner = std::make_unique<GemmRunner>(*w.engine, shape, *w.ops, w.stream->get());
      warm.push_back(std::move(w));
    }
    ctx.log() << "warm-up: " << seconds << " s of bf16 8192^3 GEMMs on " << devices.size() << " GPU"
              << (devices.size() == 1 ? "" : "s") << " ..." << std::flush;
    const auto t0 = std::chrono::steady_clock::now();
    long gemms = 0;
    double elapsed = 0;
    while (elapsed < seconds) {
      ctx.check_interrupted();
      for (std::size_t i = 0; i < warm.size(); ++i) {
        ScopedDevice on(devices[i]);
        for (int j = 0; j < 4; ++j) warm[i].runner->enqueue();
      }
      for (std::size_t i = 0; i < warm.size(); ++i) {
        ScopedDevice on(devices[i]);
        CS_CUDA(cudaStreamSynchronize(warm[i].stream->get()));
      }
      gemms += 4;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ctx.log() << " done (" << gemms << " GEMMs per GPU, about "
              << static_cast<long>(static_cast<double>(gemms) * shape.flops().value() / elapsed / 1e12)
              << " TFLOP/s)\n";
  } catch (const ProbeError& e) {
    if (e.fatal()) throw;
    ctx.log() << "\nwarm-up failed: " << e.what() << "\n";
    ctx.note(std::string("warm-up failed: ") + e.what());
  }
}

void run_gemm_section(ProbeContext& ctx) {
  const int dev = ctx.device(0).cuda_device;
  const DeviceInfo& info = ctx.device(0);
  const bool fp8 = info.cc_major * 10 + info.cc_minor >= 89;
  if (!fp8) ctx.note("fp8 GEMMs not measured: compute capability " + std::to_string(info.cc_major) + "." +
                     std::to_string(info.cc_minor) + " is below 8.9");
  const std::vector<GemmPlanEntry> plan = gemm_plan(ctx.quick(), fp8);
  ctx.out() << "\n## gemm: " << plan.size() << " shapes on GPU 0 (" << info.name
            << "), cuBLASLt TN, heuristic algorithm 0, L2 flushed before each sample\n"
            << gemm_table_header() << "\n"
            << std::flush;

  // The largest operands each dtype needs: one set per dtype, filled once, prefixes used.
  std::map<std::string, std::array<std::size_t, 3>> need;
  for (const GemmPlanEntry& e : plan) {
    auto& n = need[e.shape.dtype];
    n[0] = std::max(n[0], static_cast<std::size_t>(e.shape.m * e.shape.k));
    n[1] = std::max(n[1], static_cast<std::size_t>(e.shape.n * e.shape.k));
    n[2] = std::max(n[2], static_cast<std::size_t>(e.shape.m * e.shape.n));
  }

  std::unique_ptr<Stream> stream;
  std::unique_ptr<GemmEngine> engine;
  std::string setup_error;
  try {
    stream = std::make_unique<Stream>(dev);
    engine = std::make_unique<GemmEngine>(dev);
  } catch (const ProbeError& e) {
    if (e.fatal()) throw;
    setup_error = e.what();
  }
  std::map<std::string, std::unique_ptr<GemmOperands>> operands;
  std::map<std::string, std::string> dtype_error;  // a failed self-check or allocation: every point of the dtype fails

  SampleOptions so;
  so.rule = ctx.stop_rule();
  for (const GemmPlanEntry& entry : plan) {
    cal::GemmPoint pt;
    pt.shape = entry.shape;
    pt.source = entry.source;
    ctx.measure_into(ctx.profile().gemm, std::move(pt), [&](cal::GemmPoint& p) {
      if (!setup_error.empty()) throw ProbeError(setup_error);
      const std::string& dt = p.shape.dtype;
      if (const auto err = dtype_error.find(dt); err != dtype_error.end()) throw ProbeError(err->second);
      if (operands.count(dt) == 0) {
        try {
          const std::string check = gemm_self_check(*engine, dt, stream->get());
          if (!check.empty()) throw ProbeError(check);
          const auto& n = need[dt];
          operands[dt] = std::make_unique<GemmOperands>(dev, dt, n[0], n[1], n[2], stream->get());
        } catch (const ProbeError& e) {
          if (!e.fatal()) dtype_error[dt] = e.what();
          throw;
        }
      }
      GemmRunner runner(*engine, p.shape, *operands[dt], stream->get());
      p.algo = runner.algo_info();
      Sampler sampler(dev, stream->get(), info.nvml, &ctx.flusher(dev), &ctx.blocker(dev), ctx.interrupted());
      p.timing = sampler.measure([&] { runner.enqueue(); }, so);
    }, gemm_table_row);
  }
}

}  // namespace cs::probe
