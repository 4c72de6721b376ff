// How long a compute op takes on a GPU: the roofline with catalog efficiencies.
//
//   t = kernel_launch + max( F / (peak[dtype] x eff[class]),  M / (HBM bandwidth x eff_memory) )
//
// F: the op's FLOPs; M: the bytes it moves to and from HBM; eff[class] is the GEMM efficiency
// for matrix multiplies and the attention efficiency for fused attention (topo::GpuSpec's
// ComputeEfficiency, from configs/hardware/gpus.json). Elementwise and optimizer ops are
// memory-bound by construction (their FLOPs run on the vector units at far below the tensor
// peak, so only M counts). A calibration profile will replace these fractions with measured
// tables (the calibration issue); the interface stays.
#pragma once

#include <string>

#include "core/units.h"
#include "sim/taskgraph/task_graph.h"
#include "topology/catalog.h"

namespace cs::compute {

class ComputeModel {
 public:
  // `dtype`: the precision of matrix work ("bf16", "fp8"); the GPU must list a peak for it.
  explicit ComputeModel(std::string dtype = "bf16") : dtype_(std::move(dtype)) {}
  const std::string& dtype() const { return dtype_; }

  Duration time(const topo::GpuSpec& gpu, tg::ComputeClass cls, Flops flops, Bytes memory) const;
  // The peak this model divides by, for MFU.
  FlopRate peak(const topo::GpuSpec& gpu) const;
  // How many times slower compute runs beside communication kernels on the same GPU.
  double overlap_slowdown(const topo::GpuSpec& gpu) const { return gpu.efficiency.overlap_slowdown; }

 private:
  std::string dtype_;
};

}  // namespace cs::compute
