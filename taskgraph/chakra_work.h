// What a GPU kernel of a Chakra trace computes, when the trace says (chakra_import.h's re-timing):
//   num_ops (FLOPs) and tensor_size (bytes); cs_class and cs_gemm_mix in clustersim's exports;
//   or a matrix multiply's input shapes, for kernels named as GEMMs (gemm, matmul, cutlass):
//   mm [[m,k],[k,n]], addmm [[n] or [m,n], [m,k], [k,n]], bmm [[b,m,k],[b,k,n]]: 2 b m n k FLOPs,
//   (b m k + b k n + b m n) elements of the first input's type (float 4 bytes, Half and BFloat16
//   2, double 8, Float8 and int8 1), the shape [b m, n, k] for the GEMM model.
// A kernel known by num_ops alone is timed as a GEMM: the compute model's roofline, the larger of
// its FLOPs at the GEMM rate and its bytes at the memory rate, as ASTRA-sim's roofline takes the
// larger of num_ops at peak and tensor_size at bandwidth (an assumption: the trace does not say
// what the kernel is; the compute model's other classes would ignore the FLOPs). Convolutions
// are not recognized (their strides and padding are not in the shapes).
#pragma once

#include <optional>
#include <vector>

#include "core/units.h"
#include "taskgraph/chakra_trace.h"
#include "taskgraph/task_graph.h"

namespace cs::tg {

struct ChakraKernelWork {
  Flops flops{0};
  Bytes bytes{0};
  ComputeClass cls = ComputeClass::kGemm;
  std::vector<GemmShape> gemms;  // the shapes its time is looked up by
};

// Nothing when the trace does not say. An InputError (no file; "node ID") for a cs_class or
// cs_gemm_mix that is not one.
std::optional<ChakraKernelWork> chakra_kernel_work(const ChakraNode& n);

}  // namespace cs::tg
