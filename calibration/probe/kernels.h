// The probe's own CUDA kernels, behind plain C++ launch functions (the .cu files stay small and
// the rest of the probe is ordinary C++). Every launch is checked (CS_CUDA_LAUNCHED); sizes must
// respect the alignment each function states (the callers round their byte counts).
//
// Memory-bound kernels move 16-byte vectors, coalesced, over a grid of 8 blocks of 256 threads per
// multiprocessor (fewer for small sizes); their byte counts are what they read plus what they
// write, the minimum traffic, so bytes / time is the achieved bandwidth.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cs::probe {

enum class ElementType : std::uint8_t { kF32, kBF16, kF16, kFP8E4M3 };
std::size_t element_size(ElementType t);

// n elements of about N(0, 1) (Irwin-Hall sum of four uniforms from a counter-based hash of
// (seed, index)): random-looking, reproducible, never zeros (GEMMs on zeros run faster).
void fill_random(void* p, ElementType t, std::size_t n, std::uint64_t seed, cudaStream_t stream);
void fill_f32(float* p, float value, std::size_t n, cudaStream_t stream);

// dst = src; bytes a multiple of 16. Reads bytes, writes bytes.
void launch_copy(const void* src, void* dst, std::size_t bytes, int sm_count, cudaStream_t stream);
// y = a x + y over n floats, n a multiple of 4. Reads 2n, writes n floats.
void launch_axpy(float a, const float* x, float* y, std::size_t n, int sm_count, cudaStream_t stream);
// Per-block partial sums of n floats (n a multiple of 4) into partials[0..reduce_blocks(n)).
std::size_t reduce_blocks(std::size_t n, int sm_count);
void launch_reduce_sum(const float* x, std::size_t n, float* partials, int sm_count, cudaStream_t stream);
// RMSNorm of `rows` rows of `cols` bf16 values (cols a multiple of 8, at most 8192):
// y = x / sqrt(mean(x^2) + 1e-6) * weight, one block per row, fp32 arithmetic. x, weight and y are
// bf16 bit patterns.
void launch_rms_norm(const std::uint16_t* x, const std::uint16_t* weight, std::uint16_t* y, std::size_t rows,
                     std::size_t cols, cudaStream_t stream);
inline constexpr std::size_t kMaxNormCols = 8192;

// An empty kernel <<<1, 1>>> (launch overhead).
void launch_empty(cudaStream_t stream);

// Spins until *release (host-mapped) is non-zero, or until timeout_ns of GPU time, then sets
// *timed_out. Holds back the work queued behind it so that timed work is enqueued before it
// starts (nvbench's blocking kernel).
void launch_spin(const volatile int* release, volatile int* timed_out, unsigned long long timeout_ns,
                 cudaStream_t stream);

}  // namespace cs::probe
