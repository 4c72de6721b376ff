#include "sim/compute/compute_model.h"

#include <algorithm>

#include "core/errors.h"
#include "sim/compute/gemm_model.h"

namespace cs::compute {
namespace {

using Prov = cal::EstimateProvenance;
constexpr int index(Prov p) { return static_cast<int>(p); }

}  // namespace

FlopRate ComputeModel::peak(const hw::GpuSpec& gpu) const {
  auto it = gpu.peak.find(dtype_);
  if (it == gpu.peak.end()) {
    throw ConfigError("", "/precision", "GPU " + gpu.name + " has no " + dtype_ + " peak in the catalog");
  }
  return it->second;
}

double ComputeModel::overlap_slowdown(const hw::GpuSpec& gpu) const {
  if (profile_) {
    if (auto s = profile_->overlap_slowdown()) {
      ++tally_.overlap[index(Prov::kMeasured)];
      return std::max(1.0, *s);
    }
    ++tally_.overlap[index(Prov::kNominal)];
  }
  return gpu.roofline.overlap_slowdown;
}

const ComputeModel::MixRate& ComputeModel::mix_rate(std::span<const tg::GemmShape> gemms) const {
  std::vector<std::array<std::int64_t, 3>> key;
  key.reserve(gemms.size());
  for (const tg::GemmShape& g : gemms) key.push_back({g.m, g.n, g.k});
  auto it = mix_cache_.find(key);
  if (it != mix_cache_.end()) return it->second;
  // The mix's rate: its FLOPs over the sum of its shapes' times; its provenance the weakest of
  // theirs (measured < interpolated < extrapolated).
  double flops = 0, seconds = 0;
  Prov worst = Prov::kMeasured;
  for (const tg::GemmShape& g : gemms) {
    const cal::GemmShape s{dtype_, g.m, g.n, g.k};
    const cal::Estimate e = profile_->gemm(s);
    flops += s.flops().value();
    seconds += to_seconds(e.time);
    worst = std::max(worst, e.provenance);
  }
  MixRate r;
  r.rate = FlopRate{seconds > 0 ? flops / seconds : 0};
  r.provenance = worst;
  return mix_cache_.emplace(std::move(key), r).first->second;
}

Duration ComputeModel::time(const hw::GpuSpec& gpu, tg::ComputeClass cls, Flops flops, Bytes memory,
                            std::span<const tg::GemmShape> gemms) const {
  const auto& eff = gpu.roofline;
  const bool gemm = cls == tg::ComputeClass::kGemm;
  Duration math{0};
  if ((gemm || cls == tg::ComputeClass::kAttention) && flops.value() > 0) {
    if (gemm && profile_ && profile_->has_gemm(dtype_)) {
      if (!gemms.empty()) {
        const MixRate& r = mix_rate(gemms);
        math = compute_time(flops, r.rate);
        ++tally_.gemm[index(r.provenance)];
      } else {
        const cal::Estimate e = profile_->gemm_flops(dtype_, flops);
        math = e.time;
        ++tally_.gemm[index(e.provenance)];
      }
    } else {
      // GEMMs: the full-wave rate (MAMF) x the share sustained in training x the shapes' wave and
      // tile efficiency (sim/compute/gemm_model.h); fused attention: its share of the peak.
      const double rate = gemm ? full_wave_rate(gpu, dtype_).value() * eff.gemm * mix_efficiency(gpu.gemm, gemms)
                               : peak(gpu).value() * eff.attention;
      math = compute_time(flops, FlopRate{rate});
      if (profile_ && gemm) ++tally_.gemm[index(Prov::kNominal)];
    }
  }
  Duration traffic{0};
  if (memory.value() > 0) {
    std::optional<cal::Estimate> e;
    if (profile_ && (e = profile_->memory(memory))) {
      traffic = e->time;
      ++tally_.memory[index(e->provenance)];
    } else {
      traffic = transfer_time(memory, scale(gpu.hbm_bandwidth, eff.memory));
      if (profile_) ++tally_.memory[index(Prov::kNominal)];
    }
  }
  Duration launch = eff.kernel_launch;
  if (profile_) {
    if (auto l = profile_->launch_overhead()) {
      launch = *l;
      ++tally_.launch[index(Prov::kMeasured)];
    } else {
      ++tally_.launch[index(Prov::kNominal)];
    }
  }
  return launch + std::max(math, traffic);
}

}  // namespace cs::compute
