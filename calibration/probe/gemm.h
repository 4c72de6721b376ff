// GEMMs through cuBLASLt, as frameworks run them: TN layout (D[m x n] = A[m x k] B[n x k]^T in
// row-major terms, i.e. cuBLAS's op(A) = T, op(B) = N, column-major, lda = ldb = k, ldd = m; the
// layout of nn.Linear and the one cuBLASLt requires for fp8), alpha = 1, beta = 0 (D is written
// in full by every call), fp32 accumulation, the first algorithm of cuBLASLt's heuristic with a
// 32 MiB workspace.
//
//   dtype  A, B         C, D   compute
//   bf16   bf16         bf16   32F
//   fp16   fp16         fp16   32F
//   tf32   fp32         fp32   32F_FAST_TF32
//   fp8    e4m3 (unit   bf16   32F          (compute capability >= 8.9; A and B scale pointers
//          scales)                           set to device 1.0f)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "calibration/probe/device_memory.h"
#include "calibration/probe/kernels.h"
#include "calibration/profile.h"

namespace cs::probe {

[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* expr, const char* file, int line);

#define CS_CUBLAS(expr)                                                             \
  do {                                                                              \
    const cublasStatus_t cs_cublas_status_ = (expr);                                \
    if (cs_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                               \
      ::cs::probe::throw_cublas_error(cs_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                               \
  } while (0)

inline constexpr std::size_t kGemmWorkspaceBytes = 32u << 20;

// Element types of a dtype's operands.
struct GemmTypes {
  ElementType ab;   // A and B
  ElementType cd;   // C and D
};
GemmTypes gemm_types(const std::string& dtype);  // throws ProbeError for an unknown dtype

// A cuBLASLt handle and workspace on one device.
class GemmEngine {
 public:
  explicit GemmEngine(int device);
  ~GemmEngine();
  GemmEngine(const GemmEngine&) = delete;
  GemmEngine& operator=(const GemmEngine&) = delete;
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_.get(); }
  const float* unit_scale() const { return unit_scale_.as<float>(); }
  int device() const { return device_; }

 private:
  int device_;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  DeviceBuffer unit_scale_;  // one float 1.0 (fp8 scales)
};

// Random operands of one dtype, large enough for every shape asked for (prefixes are used).
struct GemmOperands {
  GemmOperands(int device, const std::string& dtype, std::size_t a_elements, std::size_t b_elements,
               std::size_t d_elements, cudaStream_t stream);
  std::string dtype;
  DeviceBuffer a, b, d;
};

// One shape's descriptors and heuristic algorithm; enqueue() runs D = A B^T on the stream.
class GemmRunner {
 public:
  GemmRunner(const GemmEngine& engine, const cal::GemmShape& shape, const GemmOperands& ops, cudaStream_t stream);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  void enqueue();
  // cuBLASLt's choice: algo id, tile, stages, split-K, reduction scheme, swizzle, cluster shape,
  // waves, workspace (the profile's "algo").
  nlohmann::json algo_info() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Multiplies a 256^3 problem of `dtype` and compares 64 entries of D with a double-precision
// product of the same inputs. Returns "" when the relative error (2-norm over the entries) is
// within the dtype's tolerance, else what went wrong.
std::string gemm_self_check(const GemmEngine& engine, const std::string& dtype, cudaStream_t stream);

}  // namespace cs::probe
