// The memory-bound kernels and the launch overhead (docs/calibration.md, "Memory-bound kernels",
// "Launch overhead"), on GPU 0.
#include <algorithm>

#include "calibration/probe/context.h"
#include "calibration/probe/kernels.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/table.h"

namespace cs::probe {

namespace {

// Buffers and the enqueue of one memory-kernel point of about `target` bytes moved.
struct MemoryCase {
  std::int64_t bytes = 0;  // exactly what the kernel reads plus writes
  std::size_t footprint = 0;
  DeviceBuffer x, y, z;
  std::size_t n = 0, rows = 0, cols = 0;
};

MemoryCase make_case(const std::string& kernel, std::int64_t target, int device, int sm_count, cudaStream_t s) {
  MemoryCase c;
  const auto t = static_cast<std::size_t>(target);
  if (kernel == "copy") {
    c.n = t / 2 / 16 * 16;  // bytes of each buffer, 16-byte vectors
    if (c.n == 0) return c;
    c.x = DeviceBuffer(device, c.n);
    c.y = DeviceBuffer(device, c.n);
    fill_random(c.x.get(), ElementType::kF32, c.n / 4, 11, s);
    c.bytes = static_cast<std::int64_t>(2 * c.n);
  } else if (kernel == "elementwise") {
    c.n = t / 3 / 16 * 4;  // floats in x and y, a multiple of 4
    if (c.n == 0) return c;
    c.x = DeviceBuffer(device, c.n * 4);
    c.y = DeviceBuffer(device, c.n * 4);
    fill_random(c.x.get(), ElementType::kF32, c.n, 12, s);
    fill_random(c.y.get(), ElementType::kF32, c.n, 13, s);
    c.bytes = static_cast<std::int64_t>(3 * c.n * 4);  // read x and y, write y
  } else if (kernel == "reduction") {
    c.n = t / 16 * 4;  // floats read
    if (c.n == 0) return c;
    c.x = DeviceBuffer(device, c.n * 4);
    const std::size_t blocks = reduce_blocks(c.n, sm_count);
    c.y = DeviceBuffer(device, blocks * 4);
    fill_random(c.x.get(), ElementType::kF32, c.n, 14, s);
    c.bytes = static_cast<std::int64_t>(c.n * 4 + blocks * 4);
  } else {  // norm: bf16 rows read once and written once, plus the weight row
    const std::size_t elements = t / 2 / 2;
    c.cols = std::min<std::size_t>(kMaxNormCols, elements / 8 * 8);
    if (c.cols == 0) return c;
    c.rows = elements / c.cols;
    c.x = DeviceBuffer(device, c.rows * c.cols * 2);
    c.y = DeviceBuffer(device, c.rows * c.cols * 2);
    c.z = DeviceBuffer(device, c.cols * 2);
    fill_random(c.x.get(), ElementType::kBF16, c.rows * c.cols, 15, s);
    fill_random(c.z.get(), ElementType::kBF16, c.cols, 16, s);
    c.bytes = static_cast<std::int64_t>(2 * c.rows * c.cols * 2 + c.cols * 2);
  }
  CS_CUDA(cudaStreamSynchronize(s));
  return c;
}

void enqueue_case(const std::string& kernel, MemoryCase& c, int sm_count, cudaStream_t s) {
  if (kernel == "copy") {
    launch_copy(c.x.get(), c.y.get(), c.n, sm_count, s);
  } else if (kernel == "elementwise") {
    launch_axpy(1e-3f, c.x.as<float>(), c.y.as<float>(), c.n, sm_count, s);
  } else if (kernel == "reduction") {
    launch_reduce_sum(c.x.as<float>(), c.n, c.y.as<float>(), sm_count, s);
  } else {
    launch_rms_norm(c.x.as<std::uint16_t>(), c.z.as<std::uint16_t>(), c.y.as<std::uint16_t>(), c.rows, c.cols, s);
  }
}

}  // namespace

void run_memory_section(ProbeContext& ctx) {
  const int dev = ctx.device(0).cuda_device;
  const DeviceInfo& info = ctx.device(0);
  std::size_t free_bytes = 0, total = 0;
  {
    ScopedDevice on(dev);
    CS_CUDA(cudaMemGetInfo(&free_bytes, &total));
  }
  // Each point holds about its byte count in buffers; keep well inside free memory.
  const auto memory_bound = static_cast<std::int64_t>(static_cast<double>(free_bytes) * 0.8);
  const std::vector<std::int64_t> all_sizes = memory_sizes(ctx.quick(), ctx.max_bytes());
  std::vector<std::int64_t> sizes;
  for (const std::int64_t s : all_sizes) {
    if (s <= memory_bound) sizes.push_back(s);
  }
  if (sizes.size() < all_sizes.size()) {
    ctx.note("memory kernels above " + std::to_string(memory_bound) + " bytes not measured (free GPU memory)");
  }
  ctx.out() << "\n## memory: " << memory_kernels().size() * sizes.size() << " points on GPU 0 (" << info.name
            << "), bytes = read + written, L2 flushed before each sample\n"
            << memory_table_header() << "\n"
            << std::flush;

  Stream stream(dev);
  SampleOptions so;
  so.rule = ctx.stop_rule();
  for (const std::string& kernel : memory_kernels()) {
    for (const std::int64_t target : sizes) {
      cal::MemoryPoint pt;
      pt.kernel = kernel;
      pt.bytes = Bytes{target};
      ctx.measure_into(ctx.profile().memory, std::move(pt), [&](cal::MemoryPoint& p) {
        MemoryCase c = make_case(kernel, target, dev, info.sm_count, stream.get());
        if (c.bytes == 0) throw ProbeError("size too small for the kernel");
        p.bytes = Bytes{c.bytes};
        Sampler sampler(dev, stream.get(), info.nvml, &ctx.flusher(dev), &ctx.blocker(dev), ctx.interrupted());
        p.timing = sampler.measure([&] { enqueue_case(kernel, c, info.sm_count, stream.get()); }, so);
      }, memory_table_row);
    }
  }
}

void run_launch_section(ProbeContext& ctx) {
  const int dev = ctx.device(0).cuda_device;
  const DeviceInfo& info = ctx.device(0);
  ctx.out() << "\n## launch: empty kernel <<<1, 1>>> on GPU 0, 100 back-to-back launches per sample\n" << std::flush;
  Stream stream(dev);
  SampleOptions so;
  so.rule = ctx.stop_rule();
  so.flush_l2 = false;
  so.block = false;  // the enqueue is what is measured
  so.ops_per_sample = 100;
  cal::LaunchPoint pt;
  pt.kernel = "empty";
  ctx.measure_into(ctx.profile().launch, std::move(pt), [&](cal::LaunchPoint& p) {
    Sampler sampler(dev, stream.get(), info.nvml, nullptr, nullptr, ctx.interrupted());
    p.timing = sampler.measure([&] { launch_empty(stream.get()); }, so);
  }, launch_table_row);
}

}  // namespace cs::probe
