// Random fills and the memory-bound kernels of the probe (kernels.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "calibration/probe/cuda_check.h"
#include "calibration/probe/kernels.h"

namespace cs::probe {

namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

unsigned grid_for(std::size_t items, int sm_count) {
  const std::size_t wanted = (items + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(std::max(sm_count, 1)) * kBlocksPerSm;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, cap)));
}

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__device__ __forceinline__ float normalish(unsigned long long seed, unsigned long long i) {
  const unsigned long long h = mix64(seed + 0x9e3779b97f4a7c15ULL * (i + 1));
  float s = 0;
  for (int k = 0; k < 4; ++k) s += static_cast<float>((h >> (16 * k)) & 0xffffULL) * (1.0f / 65536.0f);
  return (s - 2.0f) * 1.7320508f;  // mean 0, variance 1
}

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

template <class T>
__global__ void fill_random_kernel(T* p, std::size_t n, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = from_float<T>(normalish(seed, i));
  }
}

__global__ void fill_f32_kernel(float* p, float value, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = value;
  }
}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void axpy_kernel(float a, const float4* __restrict__ x, float4* __restrict__ y, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 xv = x[i];
    float4 yv = y[i];
    yv.x = fmaf(a, xv.x, yv.x);
    yv.y = fmaf(a, xv.y, yv.y);
    yv.z = fmaf(a, xv.z, yv.z);
    yv.w = fmaf(a, xv.w, yv.w);
    y[i] = yv;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  __shared__ float total;
  v = warp_sum(v);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < static_cast<int>(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) total = s;
  }
  __syncthreads();
  return total;
}

__global__ void reduce_sum_kernel(const float4* __restrict__ x, std::size_t n4, float* __restrict__ partials) {
  float s = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

constexpr int kNormThreads = 256;
constexpr int kNormVectorsPerThread = static_cast<int>(kMaxNormCols / 8 / kNormThreads);  // 4

__global__ void rms_norm_kernel(const uint4* __restrict__ x, const uint4* __restrict__ weight, uint4* __restrict__ y,
                                std::size_t vectors_per_row) {
  const std::size_t row = blockIdx.x;
  const uint4* in = x + row * vectors_per_row;
  uint4* out = y + row * vectors_per_row;
  uint4 v[kNormVectorsPerThread];
  float sum_sq = 0;
#pragma unroll
  for (int j = 0; j < kNormVectorsPerThread; ++j) {
    const std::size_t idx = threadIdx.x + static_cast<std::size_t>(j) * kNormThreads;
    if (idx < vectors_per_row) {
      v[j] = in[idx];
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v[j]);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = __bfloat1622float2(h[e]);
        sum_sq += f.x * f.x + f.y * f.y;
      }
    }
  }
  const float total = block_sum(sum_sq);
  const float scale = rsqrtf(total / static_cast<float>(vectors_per_row * 8) + 1e-6f);
#pragma unroll
  for (int j = 0; j < kNormVectorsPerThread; ++j) {
    const std::size_t idx = threadIdx.x + static_cast<std::size_t>(j) * kNormThreads;
    if (idx < vectors_per_row) {
      const uint4 w = weight[idx];
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v[j]);
      const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&w);
      uint4 r;
      __nv_bfloat162* rh = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = __bfloat1622float2(h[e]);
        const float2 g = __bfloat1622float2(wh[e]);
        rh[e] = __floats2bfloat162_rn(f.x * scale * g.x, f.y * scale * g.y);
      }
      out[idx] = r;
    }
  }
}

}  // namespace

std::size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::kF32: return 4;
    case ElementType::kBF16: return 2;
    case ElementType::kF16: return 2;
    case ElementType::kFP8E4M3: return 1;
  }
  return 1;
}

void fill_random(void* p, ElementType t, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_for(n, 132);
  switch (t) {
    case ElementType::kF32:
      fill_random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(p), n, seed);
      break;
    case ElementType::kBF16:
      fill_random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(p), n, seed);
      break;
    case ElementType::kF16:
      fill_random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(p), n, seed);
      break;
    case ElementType::kFP8E4M3:
      fill_random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed);
      break;
  }
  CS_CUDA_LAUNCHED();
}

void fill_f32(float* p, float value, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  fill_f32_kernel<<<grid_for(n, 132), kThreads, 0, stream>>>(p, value, n);
  CS_CUDA_LAUNCHED();
}

void launch_copy(const void* src, void* dst, std::size_t bytes, int sm_count, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  copy_kernel<<<grid_for(n, sm_count), kThreads, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
  CS_CUDA_LAUNCHED();
}

void launch_axpy(float a, const float* x, float* y, std::size_t n, int sm_count, cudaStream_t stream) {
  const std::size_t n4 = n / 4;
  axpy_kernel<<<grid_for(n4, sm_count), kThreads, 0, stream>>>(a, reinterpret_cast<const float4*>(x),
                                                               reinterpret_cast<float4*>(y), n4);
  CS_CUDA_LAUNCHED();
}

std::size_t reduce_blocks(std::size_t n, int sm_count) { return grid_for(n / 4, sm_count); }

void launch_reduce_sum(const float* x, std::size_t n, float* partials, int sm_count, cudaStream_t stream) {
  const std::size_t n4 = n / 4;
  reduce_sum_kernel<<<grid_for(n4, sm_count), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x), n4, partials);
  CS_CUDA_LAUNCHED();
}

void launch_rms_norm(const std::uint16_t* x, const std::uint16_t* weight, std::uint16_t* y, std::size_t rows,
                     std::size_t cols, cudaStream_t stream) {
  if (rows == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kNormThreads, 0, stream>>>(
      reinterpret_cast<const uint4*>(x), reinterpret_cast<const uint4*>(weight), reinterpret_cast<uint4*>(y), cols / 8);
  CS_CUDA_LAUNCHED();
}

}  // namespace cs::probe
