#include "calibration/probe/nccl_group.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "calibration/probe/kernels.h"

namespace cs::probe {

void throw_nccl_error(ncclResult_t r, const char* expr, const char* file, int line) {
  std::string text = std::string(expr) + " failed: " + ncclGetErrorString(r);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 21300
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') text += std::string(" (") + last + ")";
#endif
  throw ProbeError(text + " " + where(file, line));
}

NcclGroup::NcclGroup(std::vector<int> devices, ProcessGroup* processes, int ranks, std::size_t buffer_bytes)
    : processes_(processes), ranks_(ranks), buffer_bytes_(buffer_bytes) {
  const int first_rank = processes_ != nullptr && processes_->distributed() ? processes_->rank() : 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    LocalRank r;
    r.device = devices[i];
    r.rank = first_rank + static_cast<int>(i);
    r.stream = std::make_unique<Stream>(r.device);
    r.send = DeviceBuffer(r.device, buffer_bytes);
    r.recv = DeviceBuffer(r.device, buffer_bytes);
    r.start = std::make_unique<Event>(r.device);
    r.end = std::make_unique<Event>(r.device);
    {
      ScopedDevice on(r.device);
      fill_random(r.send.get(), ElementType::kBF16, buffer_bytes / 2, 0xc011ec7ULL + static_cast<unsigned>(r.rank),
                  r.stream->get());
      CS_CUDA(cudaMemsetAsync(r.recv.get(), 0, buffer_bytes, r.stream->get()));
      CS_CUDA(cudaStreamSynchronize(r.stream->get()));
    }
    ranks_local_.push_back(std::move(r));
  }
  init_comms();
}

NcclGroup::~NcclGroup() { destroy_comms(false); }

void NcclGroup::init_comms() {
  if (processes_ != nullptr && processes_->distributed()) {
    ncclUniqueId id{};
    if (processes_->rank() == 0) CS_NCCL(ncclGetUniqueId(&id));
    processes_->broadcast(&id, sizeof id);
    LocalRank& r = ranks_local_.front();
    ScopedDevice on(r.device);
    CS_NCCL(ncclCommInitRank(&r.comm, ranks_, id, r.rank));
    return;
  }
  std::vector<ncclComm_t> comms(ranks_local_.size(), nullptr);
  std::vector<int> devs;
  for (const LocalRank& r : ranks_local_) devs.push_back(r.device);
  CS_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), devs.data()));
  for (std::size_t i = 0; i < comms.size(); ++i) ranks_local_[i].comm = comms[i];
}

void NcclGroup::destroy_comms(bool abort) {
  for (LocalRank& r : ranks_local_) {
    if (r.comm == nullptr) continue;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(r.device);
    if (abort) {
      (void)ncclCommAbort(r.comm);
    } else {
      (void)cudaStreamSynchronize(r.stream->get());
      (void)ncclCommDestroy(r.comm);
    }
    (void)cudaSetDevice(previous);
    r.comm = nullptr;
  }
}

void NcclGroup::reset() {
  destroy_comms(true);
  for (LocalRank& r : ranks_local_) {
    ScopedDevice on(r.device);
    (void)cudaStreamSynchronize(r.stream->get());
    (void)cudaGetLastError();
  }
  init_comms();
}

void NcclGroup::enqueue(const std::string& op, const CollectiveCounts& c) {
  const auto count = static_cast<std::size_t>(c.count);
  constexpr std::size_t kElt = 2;  // bf16
  CS_NCCL(ncclGroupStart());
  try {
    for (LocalRank& r : ranks_local_) {
      void* send = r.send.get();
      void* recv = r.recv.get();
      cudaStream_t s = r.stream->get();
      if (op == "all_reduce") {
        CS_NCCL(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, r.comm, s));
      } else if (op == "all_gather") {
        CS_NCCL(ncclAllGather(send, recv, count, ncclBfloat16, r.comm, s));
      } else if (op == "reduce_scatter") {
        CS_NCCL(ncclReduceScatter(send, recv, count, ncclBfloat16, ncclSum, r.comm, s));
      } else if (op == "broadcast") {
        CS_NCCL(ncclBroadcast(send, recv, count, ncclBfloat16, 0, r.comm, s));
      } else if (op == "reduce") {
        CS_NCCL(ncclReduce(send, recv, count, ncclBfloat16, ncclSum, 0, r.comm, s));
      } else if (op == "all_to_all") {
        for (int peer = 0; peer < ranks_; ++peer) {
          const std::size_t offset = static_cast<std::size_t>(peer) * count * kElt;
          CS_NCCL(ncclSend(static_cast<char*>(send) + offset, count, ncclBfloat16, peer, r.comm, s));
          CS_NCCL(ncclRecv(static_cast<char*>(recv) + offset, count, ncclBfloat16, peer, r.comm, s));
        }
      } else if (op == "send_recv") {
        const int to = (r.rank + 1) % ranks_;
        const int from = (r.rank + ranks_ - 1) % ranks_;
        CS_NCCL(ncclSend(send, count, ncclBfloat16, to, r.comm, s));
        CS_NCCL(ncclRecv(recv, count, ncclBfloat16, from, r.comm, s));
      } else {
        throw ProbeError("unknown collective \"" + op + "\"");
      }
    }
  } catch (...) {
    (void)ncclGroupEnd();
    throw;
  }
  CS_NCCL(ncclGroupEnd());
}

void NcclGroup::synchronize() {
  for (LocalRank& r : ranks_local_) {
    ScopedDevice on(r.device);
    CS_CUDA(cudaStreamSynchronize(r.stream->get()));
    ncclResult_t async = ncclSuccess;
    CS_NCCL(ncclCommGetAsyncError(r.comm, &async));
    if (async != ncclSuccess) throw_nccl_error(async, "asynchronous NCCL error", __FILE__, __LINE__);
  }
}

cal::Timing NcclGroup::measure(const std::string& op, const CollectiveCounts& c, const StopRule& rule,
                               const std::atomic<bool>* interrupted) {
  ProcessGroup* pg = processes_;
  auto max_over_processes = [&](double v) { return pg != nullptr ? pg->max(v) : v; };
  auto root_decides = [&](bool v) { return pg != nullptr ? pg->root_value(v) : v; };

  // Warm-up: 5 calls, host-timed to choose the batch size.
  constexpr int kWarmup = 5;
  if (pg != nullptr) pg->barrier();
  const auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kWarmup; ++i) enqueue(op, c);
  synchronize();
  const double per_call =
      max_over_processes(std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() / kWarmup);
  const int iters = std::clamp(static_cast<int>(std::ceil(1e-3 / std::max(per_call, 1e-9))), 1, 20);

  std::vector<double> kept;
  double spread = 1e300;
  int last_checked = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (root_decides(interrupted != nullptr && interrupted->load())) throw Interrupted();
    if (pg != nullptr) pg->barrier();
    for (LocalRank& r : ranks_local_) {
      ScopedDevice on(r.device);
      CS_CUDA(cudaEventRecord(r.start->get(), r.stream->get()));
    }
    for (int i = 0; i < iters; ++i) enqueue(op, c);
    for (LocalRank& r : ranks_local_) {
      ScopedDevice on(r.device);
      CS_CUDA(cudaEventRecord(r.end->get(), r.stream->get()));
    }
    double slowest = 0;
    for (LocalRank& r : ranks_local_) {
      ScopedDevice on(r.device);
      CS_CUDA(cudaEventSynchronize(r.end->get()));
      slowest = std::max(slowest, elapsed_seconds(*r.start, *r.end));
    }
    synchronize();
    kept.push_back(max_over_processes(slowest) / iters);

    const int n = static_cast<int>(kept.size());
    if (spread_check_due(rule, n, last_checked)) {
      spread = summarize(kept).spread;
      last_checked = n;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (root_decides(should_stop(rule, n, spread, elapsed) != StopReason::kContinue)) break;
  }
  return to_timing(summarize(kept), 0);
}

}  // namespace cs::probe
