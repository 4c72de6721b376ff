// The timing harness every single-GPU point goes through (docs/calibration.md, "How a point is
// measured"): CUDA events around the work, an L2 flush before each cold sample, a blocking kernel
// so that enqueueing is not timed, at least min_samples samples, the stop rule of stats.h, and
// throttled samples discarded.
//
// One sample:  [flush L2: memset of >= 2 x L2, 256 MiB at least]  [spin kernel]  event  op x k
//              event  [release the spin kernel]  synchronise; sample = elapsed / k.
// Throttling:  NVML's SM clock and clock-event reasons are read after warm-up (the point's
//              start) and after every sample. A sample is discarded (and counted in
//              discarded_throttled) when the SM clock is below 95% of its value at the start, or
//              when a power or thermal reason (SW power cap, HW slowdown, SW/HW thermal, power
//              brake) is set that was not set at the start. After 2 x min_samples discards in a
//              row the new state is taken as the point's start (a GPU that settles at a lower
//              clock is measured there rather than never). Without NVML nothing is discarded.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include <cuda_runtime_api.h>

#include "calibration/probe/device_memory.h"
#include "calibration/probe/stats.h"

namespace cs::probe {

// Holds a stream back with a spin kernel on a host-mapped flag until release().
class StreamBlocker {
 public:
  explicit StreamBlocker(int device, double timeout_s = 1.0);
  ~StreamBlocker();
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  void block(cudaStream_t stream);
  void release();
  // After the stream has synchronised: whether the spin kernel gave up waiting (the enqueue took
  // longer than the timeout, so the sample timed the enqueue too).
  bool timed_out() const;
  // After a time-out, blocking is off for the rest of the run (samples then include enqueueing).
  bool enabled() const { return enabled_; }
  void disable() { enabled_ = false; }
  int timeouts() const { return timeouts_; }
  void count_timeout() { ++timeouts_; }

 private:
  PinnedBuffer flags_;  // [0] release, [1] timed out
  volatile int* host_ = nullptr;
  int* device_ptr_ = nullptr;
  unsigned long long timeout_ns_;
  bool enabled_ = true;
  bool blocked_ = false;
  int timeouts_ = 0;
};

// Evicts the L2 cache by writing a buffer larger than it.
class L2Flusher {
 public:
  L2Flusher(int device, std::size_t bytes);
  void flush(cudaStream_t stream);
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
  int value_ = 0;
};

struct SampleOptions {
  StopRule rule;
  bool flush_l2 = true;  // cold samples (GEMMs, memory kernels); off for launch overhead
  bool block = true;     // spin kernel before the start event; off for launch overhead
  int ops_per_sample = 1;
  int warmup_runs = 2;
};

class Sampler {
 public:
  // `nvml_device` may be nullptr (no throttle detection); `flusher` and `blocker` may be nullptr
  // (then no flush / no blocking whatever the options say).
  Sampler(int device, cudaStream_t stream, void* nvml_device, L2Flusher* flusher, StreamBlocker* blocker,
          const std::atomic<bool>* interrupted);

  // Times `enqueue` (which enqueues one operation on the stream). Throws ProbeError (a CUDA error,
  // or no sample kept), Interrupted (Ctrl-C).
  cal::Timing measure(const std::function<void()>& enqueue, const SampleOptions& options);

 private:
  int device_;
  cudaStream_t stream_;
  void* nvml_device_;
  L2Flusher* flusher_;
  StreamBlocker* blocker_;
  const std::atomic<bool>* interrupted_;
};

}  // namespace cs::probe
