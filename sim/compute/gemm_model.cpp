#include "sim/compute/gemm_model.h"

#include <algorithm>
#include <array>

#include "core/errors.h"

namespace cs::compute {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

GemmTiling tile_with(const hw::GemmStructure& gpu, std::int64_t m, std::int64_t n, hw::GemmTile t) {
  GemmTiling out;
  out.tile = t;
  out.tiles = ceil_div(m, t.m) * ceil_div(n, t.n);
  out.waves = ceil_div(out.tiles, gpu.sms);
  // m n / (waves SMs Tm Tn), in doubles: the factors can exceed 2^63 together.
  out.efficiency = (static_cast<double>(m) * static_cast<double>(n)) /
                   (static_cast<double>(out.waves) * gpu.sms * t.m * t.n);
  return out;
}

}  // namespace

GemmTiling gemm_tiling(const hw::GemmStructure& gpu, std::int64_t m, std::int64_t n) {
  if (m < 1 || n < 1 || gpu.sms < 1 || gpu.tile.m < 1 || gpu.tile.n < 1) throw InternalError("gemm_tiling: empty shape or GPU");
  const hw::GemmTile large = gpu.tile, turned{gpu.tile.n, gpu.tile.m};
  // The large tile either way round: the one with less SM time (fewer waves, then fewer tiles).
  auto better = [](const GemmTiling& a, const GemmTiling& b) {
    return a.waves * a.tile.m * a.tile.n != b.waves * b.tile.m * b.tile.n
               ? a.waves * a.tile.m * a.tile.n < b.waves * b.tile.m * b.tile.n
               : a.tiles < b.tiles;
  };
  GemmTiling best = tile_with(gpu, m, n, large);
  if (turned.m != large.m) {
    const GemmTiling t = tile_with(gpu, m, n, turned);
    if (better(t, best)) best = t;
  }
  if (best.tiles >= gpu.sms) return best;
  // Less than one wave: the tile that finishes first (time = waves x Tm x Tn at one rate per SM).
  static constexpr std::array<hw::GemmTile, 4> kSmaller{{{128, 128}, {128, 64}, {64, 128}, {64, 64}}};
  for (hw::GemmTile t : kSmaller) {
    if (t.m * t.n >= large.m * large.n) continue;
    const GemmTiling c = tile_with(gpu, m, n, t);
    if (better(c, best)) best = c;
  }
  return best;
}

FlopRate full_wave_rate(const hw::GpuSpec& gpu, const std::string& dtype) {
  auto it = gpu.gemm.mamf.find(dtype);
  if (it == gpu.gemm.mamf.end()) {
    throw ConfigError("", "/precision", "GPU " + gpu.name + " has no " + dtype + " MAMF in the catalog");
  }
  const auto& s = gpu.gemm.mamf_shape;
  if (s[0] == 0) return it->second;
  return FlopRate{it->second.value() / gemm_tiling(gpu.gemm, s[0], s[1]).efficiency};
}

double mix_efficiency(const hw::GemmStructure& gpu, std::span<const tg::GemmShape> gemms) {
  double flops = 0, weighted = 0;
  for (const tg::GemmShape& g : gemms) {
    const double f = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    flops += f;
    weighted += f / gemm_tiling(gpu, g.m, g.n).efficiency;
  }
  return weighted > 0 ? flops / weighted : 1.0;
}

}  // namespace cs::compute
