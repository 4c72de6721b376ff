// Errors of the probe. Every CUDA, cuBLAS and NCCL call is checked; a failure throws ProbeError,
// which the section catches and records as a failed point (status "failed", the error text) before
// it goes on: an out-of-memory at 8 GiB does not cost the rest of the run. Memory is held by RAII
// owners (device_memory.h), so a throw frees it.
//
// A sticky CUDA error (an illegal address, a launch failure) leaves the context unusable: such a
// ProbeError is `fatal`, and the run stops after saving the profile it has.
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace cs::probe {

class ProbeError : public std::runtime_error {
 public:
  explicit ProbeError(const std::string& what, bool fatal = false, bool out_of_memory = false)
      : std::runtime_error(what), fatal_(fatal), out_of_memory_(out_of_memory) {}
  bool fatal() const { return fatal_; }
  bool out_of_memory() const { return out_of_memory_; }

 private:
  bool fatal_;
  bool out_of_memory_;
};

// Ctrl-C arrived while a point was being measured: the point is recorded as failed ("interrupted")
// and the run stops.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted (SIGINT)") {}
};

// "cudaMalloc(&p, n) failed: out of memory (cudaErrorMemoryAllocation) [gemm.cpp:42]"
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line);
// Whether `e` leaves the CUDA context unusable.
bool is_sticky(cudaError_t e);
// "[file.cpp:42]" with the folder removed.
std::string where(const char* file, int line);

}  // namespace cs::probe

#define CS_CUDA(expr)                                                                    \
  do {                                                                                   \
    const cudaError_t cs_cuda_status_ = (expr);                                          \
    if (cs_cuda_status_ != cudaSuccess) {                                                \
      ::cs::probe::throw_cuda_error(cs_cuda_status_, #expr, __FILE__, __LINE__);         \
    }                                                                                    \
  } while (0)

// After a kernel launch: launch-configuration errors now, asynchronous ones at the next sync.
#define CS_CUDA_LAUNCHED() CS_CUDA(cudaGetLastError())
