// Copy-engine bandwidth and latency of the links (docs/calibration.md, "Links"), nvbandwidth's way:
// cudaMemcpyPeerAsync / cudaMemcpyAsync issued on the source device's stream behind a blocking
// kernel, CUDA events around one copy per sample, no L2 flush.
#include <algorithm>
#include <memory>

#include "calibration/probe/context.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/table.h"

namespace cs::probe {

namespace {

// A buffer of up to `bytes` on `device`, halving on out-of-memory down to `floor` bytes.
DeviceBuffer device_buffer_up_to(int device, std::size_t bytes, std::size_t floor) {
  for (;;) {
    try {
      return DeviceBuffer(device, bytes);
    } catch (const ProbeError& e) {
      if (!e.out_of_memory() || bytes / 2 < floor) throw;
      bytes /= 2;
    }
  }
}

PinnedBuffer pinned_buffer_up_to(std::size_t bytes, std::size_t floor) {
  for (;;) {
    try {
      return PinnedBuffer(bytes);
    } catch (const ProbeError& e) {
      if (!e.out_of_memory() || bytes / 2 < floor) throw;
      bytes /= 2;
    }
  }
}

}  // namespace

void run_links_section(ProbeContext& ctx) {
  const std::vector<std::int64_t> sizes = link_sizes(ctx.quick(), ctx.max_bytes());
  if (sizes.empty()) return;
  const int gpus = ctx.device_count();
  const std::vector<std::pair<int, int>> pairs = link_pairs(gpus, ctx.quick());
  std::vector<int> host_gpus;
  for (int d = 0; d < (ctx.quick() ? 1 : gpus); ++d) host_gpus.push_back(d);
  const std::size_t points = (pairs.size() + 2 * host_gpus.size()) * sizes.size();
  ctx.out() << "\n## links: " << points << " points, copy engines (cudaMemcpy[Peer]Async), one copy per sample\n"
            << link_table_header() << "\n"
            << std::flush;

  const auto largest = static_cast<std::size_t>(sizes.back());
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<DeviceBuffer> buffers;
  std::string setup_error;
  PinnedBuffer host;
  try {
    for (int d = 0; d < gpus; ++d) {
      streams.push_back(std::make_unique<Stream>(d));
      buffers.push_back(device_buffer_up_to(d, largest, 1u << 20));
      ScopedDevice on(d);
      CS_CUDA(cudaMemset(buffers.back().get(), 1, buffers.back().bytes()));
    }
    host = pinned_buffer_up_to(largest, 1u << 20);
    std::fill_n(host.as<unsigned char>(), host.bytes(), static_cast<unsigned char>(2));
    // Direct peer paths where CUDA offers them (otherwise cudaMemcpyPeerAsync stages through the host).
    for (const auto& [i, j] : pairs) {
      int can = 0;
      CS_CUDA(cudaDeviceCanAccessPeer(&can, i, j));
      if (can == 0) continue;
      ScopedDevice on(i);
      const cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
      } else {
        CS_CUDA(e);
      }
    }
  } catch (const ProbeError& e) {
    if (e.fatal()) throw;
    setup_error = e.what();
  }

  SampleOptions so;
  so.rule = ctx.stop_rule();
  so.flush_l2 = false;
  auto measure = [&](const std::string& kind, int src, int dst, std::int64_t bytes, const std::string& cls) {
    cal::LinkPoint pt;
    pt.kind = kind;
    pt.src = src;
    pt.dst = dst;
    pt.bytes = Bytes{bytes};
    pt.link_class = cls;
    ctx.measure_into(ctx.profile().links, std::move(pt), [&](cal::LinkPoint& p) {
      if (!setup_error.empty()) throw ProbeError(setup_error);
      const auto n = static_cast<std::size_t>(bytes);
      const int dev = src >= 0 ? src : dst;  // the copy is issued on the source device (the GPU for h2d)
      if (n > host.bytes() || (src >= 0 && n > buffers[static_cast<std::size_t>(src)].bytes()) ||
          (dst >= 0 && n > buffers[static_cast<std::size_t>(dst)].bytes())) {
        throw ProbeError("not measured: the buffers of this size could not be allocated", false, true);
      }
      cudaStream_t s = streams[static_cast<std::size_t>(dev)]->get();
      Sampler sampler(dev, s, ctx.device(dev).nvml, nullptr, &ctx.blocker(dev), ctx.interrupted());
      p.timing = sampler.measure(
          [&] {
            if (kind == "d2d") {
              CS_CUDA(cudaMemcpyPeerAsync(buffers[static_cast<std::size_t>(dst)].get(), dst,
                                          buffers[static_cast<std::size_t>(src)].get(), src, n, s));
            } else if (kind == "h2d") {
              CS_CUDA(cudaMemcpyAsync(buffers[static_cast<std::size_t>(dst)].get(), host.get(), n,
                                      cudaMemcpyHostToDevice, s));
            } else {
              CS_CUDA(cudaMemcpyAsync(host.get(), buffers[static_cast<std::size_t>(src)].get(), n,
                                      cudaMemcpyDeviceToHost, s));
            }
          },
          so);
    }, link_table_row);
  };

  for (const auto& [i, j] : pairs) {
    for (const std::int64_t b : sizes) measure("d2d", i, j, b, ctx.link_class()[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
  }
  for (const int d : host_gpus) {
    for (const std::int64_t b : sizes) measure("h2d", -1, d, b, "pcie");
    for (const std::int64_t b : sizes) measure("d2h", d, -1, b, "pcie");
  }
}

}  // namespace cs::probe
