#include "calibration/probe/timer.h"

#include <chrono>
#include <optional>
#include <cstdint>
#include <vector>

#include "calibration/probe/kernels.h"
#include "calibration/probe/nvml.h"

namespace cs::probe {

// ---- StreamBlocker ---------------------------------------------------------------------------

StreamBlocker::StreamBlocker(int device, double timeout_s)
    : flags_(2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
      timeout_ns_(static_cast<unsigned long long>(timeout_s * 1e9)) {
  host_ = flags_.as<int>();
  ScopedDevice on(device);
  void* dev = nullptr;
  CS_CUDA(cudaHostGetDevicePointer(&dev, flags_.get(), 0));
  device_ptr_ = static_cast<int*>(dev);
  // Load the spin kernel now (lazy module loading must not happen behind a spinning kernel).
  host_[0] = 1;
  host_[1] = 0;
  launch_spin(device_ptr_, device_ptr_ + 1, timeout_ns_, nullptr);
  CS_CUDA(cudaDeviceSynchronize());
}

StreamBlocker::~StreamBlocker() {
  if (host_ != nullptr) host_[0] = 1;  // never leave a kernel spinning
}

void StreamBlocker::block(cudaStream_t stream) {
  host_[0] = 0;
  host_[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  launch_spin(device_ptr_, device_ptr_ + 1, timeout_ns_, stream);
  blocked_ = true;
}

void StreamBlocker::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  host_[0] = 1;
  blocked_ = false;
}

bool StreamBlocker::timed_out() const { return host_[1] != 0; }

// ---- L2Flusher -------------------------------------------------------------------------------

L2Flusher::L2Flusher(int device, std::size_t bytes) : buffer_(device, bytes) {
  ScopedDevice on(device);
  CS_CUDA(cudaMemset(buffer_.get(), 0, buffer_.bytes()));
  CS_CUDA(cudaDeviceSynchronize());
}

void L2Flusher::flush(cudaStream_t stream) {
  value_ = (value_ + 1) & 0xff;
  CS_CUDA(cudaMemsetAsync(buffer_.get(), value_, buffer_.bytes(), stream));
}

// ---- Sampler ---------------------------------------------------------------------------------

namespace {

// Releases the blocker if the sample throws between block() and release().
class BlockGuard {
 public:
  explicit BlockGuard(StreamBlocker* b) : b_(b) {}
  ~BlockGuard() {
    if (b_ != nullptr) b_->release();
  }
  void release() {
    if (b_ != nullptr) b_->release();
    b_ = nullptr;
  }
  BlockGuard(const BlockGuard&) = delete;
  BlockGuard& operator=(const BlockGuard&) = delete;

 private:
  StreamBlocker* b_;
};

}  // namespace

Sampler::Sampler(int device, cudaStream_t stream, void* nvml_device, L2Flusher* flusher, StreamBlocker* blocker,
                 const std::atomic<bool>* interrupted)
    : device_(device), stream_(stream), nvml_device_(nvml_device), flusher_(flusher), blocker_(blocker),
      interrupted_(interrupted) {}

cal::Timing Sampler::measure(const std::function<void()>& enqueue, const SampleOptions& options) {
  ScopedDevice on(device_);
  const int k = options.ops_per_sample < 1 ? 1 : options.ops_per_sample;
  const Nvml& nvml = Nvml::instance();

  // Warm-up: loads the kernels, settles caches and allocators.
  for (int i = 0; i < options.warmup_runs; ++i) {
    for (int j = 0; j < k; ++j) enqueue();
  }
  CS_CUDA(cudaStreamSynchronize(stream_));

  std::optional<unsigned> ref_clock = nvml.sm_clock_mhz(nvml_device_);
  std::uint64_t ref_reasons = nvml.clock_event_reasons(nvml_device_).value_or(0) & kNvmlThrottleReasons;

  Event start(device_), end(device_);
  std::vector<double> kept;
  int discarded = 0, discarded_in_a_row = 0, last_checked = 0;
  double spread = 1e300;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (interrupted_ != nullptr && interrupted_->load()) throw Interrupted();
    const bool flush = options.flush_l2 && flusher_ != nullptr;
    const bool block = options.block && blocker_ != nullptr && blocker_->enabled();
    if (flush) flusher_->flush(stream_);
    {
      BlockGuard guard(block ? blocker_ : nullptr);
      if (block) blocker_->block(stream_);
      CS_CUDA(cudaEventRecord(start.get(), stream_));
      for (int j = 0; j < k; ++j) enqueue();
      CS_CUDA(cudaEventRecord(end.get(), stream_));
      guard.release();
    }
    CS_CUDA(cudaEventSynchronize(end.get()));
    const double sample = elapsed_seconds(start, end) / k;

    bool keep = true;
    if (block && blocker_->timed_out()) {
      // The spin kernel gave up before the work was enqueued: this sample timed the enqueue too.
      blocker_->count_timeout();
      blocker_->disable();
      keep = false;
    } else if (nvml_device_ != nullptr) {
      const std::optional<unsigned> clock = nvml.sm_clock_mhz(nvml_device_);
      const std::uint64_t reasons = nvml.clock_event_reasons(nvml_device_).value_or(0) & kNvmlThrottleReasons;
      const bool slow = clock && ref_clock && static_cast<double>(*clock) < 0.95 * static_cast<double>(*ref_clock);
      const bool new_reason = (reasons & ~ref_reasons) != 0;
      if (slow || new_reason) {
        keep = false;
        ++discarded;
        if (++discarded_in_a_row >= 2 * options.rule.min_samples) {
          ref_clock = clock;  // the GPU has settled there: measure it there
          ref_reasons |= reasons;
          discarded_in_a_row = 0;
        }
      }
    }
    if (keep) {
      discarded_in_a_row = 0;
      kept.push_back(sample);
    }

    const int n = static_cast<int>(kept.size());
    if (keep && spread_check_due(options.rule, n, last_checked)) {
      spread = summarize(kept).spread;
      last_checked = n;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (should_stop(options.rule, n, spread, elapsed) != StopReason::kContinue) break;
  }
  if (kept.empty()) {
    throw ProbeError("no sample kept within " + std::to_string(options.rule.time_limit_s * options.rule.hard_limit_factor) +
                     " s (" + std::to_string(discarded) + " discarded as throttled)");
  }
  return to_timing(summarize(kept), discarded);
}

}  // namespace cs::probe
