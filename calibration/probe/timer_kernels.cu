// The blocking (spin) kernel of the timer and the empty kernel of the launch-overhead point.
#include "calibration/probe/cuda_check.h"
#include "calibration/probe/kernels.h"

namespace cs::probe {

namespace {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(const volatile int* release, volatile int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
#if __CUDA_ARCH__ >= 700
    __nanosleep(500);
#endif
  }
}

__global__ void empty_kernel() {}

}  // namespace

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  CS_CUDA_LAUNCHED();
}

void launch_spin(const volatile int* release, volatile int* timed_out, unsigned long long timeout_ns,
                 cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
  CS_CUDA_LAUNCHED();
}

}  // namespace cs::probe
