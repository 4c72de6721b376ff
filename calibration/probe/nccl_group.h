// NCCL communicators over n ranks with their streams and buffers, the collectives of the probe,
// and their timing (nccl-tests' semantics: docs/calibration.md, "Collectives").
//
// Single process: ranks are devices 0 .. n-1, one communicator each from ncclCommInitAll, every
// call issued by this thread inside ncclGroupStart/End. Distributed (MPI): one rank per process.
//
// Timing of one point: 5 warm-up calls (nccl-tests' former default; one is not enough after a size
// change), then samples. A sample is `iters` back-to-back calls between two CUDA events on every
// rank's stream (iters = 20, fewer when one call takes more than 50 us, so that a sample lasts
// about 1 ms, at least 1); its value is the slowest rank's elapsed time / iters, the max over
// processes too. That is nccl-tests' out-of-place time (which divides a host-timed batch of 20 by
// 20) measured with events. Samples follow the stop rule of stats.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "calibration/probe/device_memory.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/process_group.h"
#include "calibration/probe/stats.h"

namespace cs::probe {

[[noreturn]] void throw_nccl_error(ncclResult_t r, const char* expr, const char* file, int line);

#define CS_NCCL(expr)                                                           \
  do {                                                                          \
    const ncclResult_t cs_nccl_status_ = (expr);                                \
    if (cs_nccl_status_ != ncclSuccess) {                                       \
      ::cs::probe::throw_nccl_error(cs_nccl_status_, #expr, __FILE__, __LINE__); \
    }                                                                           \
  } while (0)

class NcclGroup {
 public:
  // `devices`: the CUDA devices of this process's ranks (all n of them single-process, its one GPU
  // distributed); `processes` is the group of processes (nullptr single-process). Buffers of
  // `buffer_bytes` per rank for send and for receive. Throws ProbeError.
  NcclGroup(std::vector<int> devices, ProcessGroup* processes, int ranks, std::size_t buffer_bytes);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int ranks() const { return ranks_; }
  std::size_t buffer_bytes() const { return buffer_bytes_; }
  cudaStream_t stream(std::size_t local) const { return ranks_local_[local].stream->get(); }

  // Enqueues one call of `op` (bf16, sum; broadcast root 0; all_to_all as grouped send/recv to
  // every peer; send_recv as a ring shift r -> r+1) on every local rank.
  void enqueue(const std::string& op, const CollectiveCounts& c);
  // Waits for every local stream and checks the communicators for asynchronous errors.
  void synchronize();
  // Times `op` at `c` as described above.
  cal::Timing measure(const std::string& op, const CollectiveCounts& c, const StopRule& rule,
                      const std::atomic<bool>* interrupted);
  // After an NCCL error: aborts the communicators and makes new ones (same ranks and buffers).
  void reset();

 private:
  struct LocalRank {
    int device = 0;
    int rank = 0;
    ncclComm_t comm = nullptr;
    std::unique_ptr<Stream> stream;
    DeviceBuffer send, recv;
    std::unique_ptr<Event> start, end;
  };
  void init_comms();
  void destroy_comms(bool abort);

  std::vector<LocalRank> ranks_local_;
  ProcessGroup* processes_;
  int ranks_;
  std::size_t buffer_bytes_;
};

}  // namespace cs::probe
