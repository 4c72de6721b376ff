// How long a compute op takes on a GPU: the GEMM shape model and the roofline with catalog
// efficiencies, or, with a calibration profile (docs/calibration-profile.md), the times measured
// on real GPUs.
//
//   t = kernel_launch + max( F / R[class],  M / (HBM bandwidth x eff_memory) )
//   R[gemm]      = R_full[dtype] x eff_gemm x eta(shapes)    (sim/compute/gemm_model.h: the MAMF at
//                                                            full waves, the share sustained in
//                                                            training, tile and wave quantization)
//   R[attention] = peak[dtype] x eff_attention               (fused attention)
//
// F: the op's FLOPs; M: the bytes it moves to and from HBM; the efficiencies are hw::GpuSpec's
// RooflineParams and the shape model's inputs its GemmStructure (configs/hardware/gpus.json). Elementwise and optimizer ops are
// memory-bound by construction (their FLOPs run on the vector units at far below the tensor
// peak, so only M counts).
//
// With a profile, each term is taken from it where it has a model, and each use is tallied by
// provenance (measured, interpolated, extrapolated, nominal = the catalog):
//   GEMM time    an op that lists its GEMM shapes (TaskGraph gemm mixes) runs at the rate the
//                profile gives that mix (sum of FLOPs / sum of the shapes' times: table lookups
//                and interpolation); an op without shapes uses the profile's fitted curve;
//   memory time  t0 + M / bandwidth fitted over the memory-bound kernels;
//   launch       the measured launch overhead;
//   overlap      the measured slowdown of a GEMM beside a collective.
// Fused attention has no profile model and stays on the catalog's efficiency.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "calibration/profile_model.h"
#include "core/units.h"
#include "taskgraph/task_graph.h"
#include "hardware/catalog.h"

namespace cs::compute {

// How often each quantity was taken from where, indexed by cal::EstimateProvenance.
struct ProvenanceTally {
  using Counts = std::array<std::int64_t, 4>;
  Counts gemm{}, memory{}, launch{}, overlap{};
};

class ComputeModel {
 public:
  // `dtype`: the precision of matrix work ("bf16", "fp8"); the GPU must list a peak for it.
  explicit ComputeModel(std::string dtype = "bf16", std::shared_ptr<const cal::ProfileModel> profile = nullptr)
      : dtype_(std::move(dtype)), profile_(std::move(profile)) {}
  const std::string& dtype() const { return dtype_; }
  const cal::ProfileModel* profile() const { return profile_.get(); }

  // `gemms`: the shapes the op's FLOPs come from (may be empty).
  Duration time(const hw::GpuSpec& gpu, tg::ComputeClass cls, Flops flops, Bytes memory,
                std::span<const tg::GemmShape> gemms = {}) const;
  // The peak this model divides by, for MFU.
  FlopRate peak(const hw::GpuSpec& gpu) const;
  // How many times slower compute runs beside communication kernels on the same GPU.
  double overlap_slowdown(const hw::GpuSpec& gpu) const;

  // Uses so far, by provenance (only counted with a profile).
  const ProvenanceTally& tally() const { return tally_; }

 private:
  struct MixRate {
    FlopRate rate{0};
    cal::EstimateProvenance provenance = cal::EstimateProvenance::kMeasured;
  };
  const MixRate& mix_rate(std::span<const tg::GemmShape> gemms) const;

  std::string dtype_;
  std::shared_ptr<const cal::ProfileModel> profile_;
  // Per-simulation caches and counters (a model serves one single-threaded simulation).
  mutable std::map<std::vector<std::array<std::int64_t, 3>>, MixRate> mix_cache_;
  mutable ProvenanceTally tally_;
};

}  // namespace cs::compute
