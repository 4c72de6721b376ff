// The GEMM shape model (sim/compute/gemm_model.h): tile and wave quantization in closed form, the
// full-wave rate from the published MAMF, and what the compute model makes of them.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/errors.h"
#include "hardware/catalog.h"
#include "sim/compute/compute_model.h"
#include "sim/compute/gemm_model.h"

namespace cs::compute {
namespace {

const hw::GpuSpec& gpu(const char* name) { return hw::Catalog::builtin().gpu(name, "test", "/gpu"); }

// The time of one GEMM op without its launch, memory traffic left out (compute-bound by fiat).
double gemm_seconds(const hw::GpuSpec& g, std::int64_t m, std::int64_t n, std::int64_t k) {
  const ComputeModel cm("bf16");
  const tg::GemmShape s{m, n, k};
  const Flops f{2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)};
  return to_seconds(cm.time(g, tg::ComputeClass::kGemm, f, Bytes{0}, {&s, 1}) - g.roofline.kernel_launch);
}

TEST(GemmModel, CatalogGivesEachGpuItsStructure) {
  EXPECT_EQ(gpu("A100-SXM-80GB").gemm.sms, 108);
  EXPECT_EQ(gpu("H100-SXM").gemm.sms, 132);
  EXPECT_EQ(gpu("H100-PCIe").gemm.sms, 114);
  EXPECT_EQ(gpu("A100-SXM-80GB").gemm.tile.m, 256);
  EXPECT_EQ(gpu("A100-SXM-80GB").gemm.tile.n, 128);
  EXPECT_DOUBLE_EQ(gpu("A100-SXM-80GB").gemm.mamf.at("bf16").value(), 271.2e12);
  EXPECT_DOUBLE_EQ(gpu("H100-SXM").gemm.mamf.at("bf16").value(), 794.5e12);
  for (const auto& [name, g] : hw::Catalog::builtin().gpus()) {
    for (const auto& [dtype, rate] : g.gemm.mamf) {
      EXPECT_LE(rate.value(), g.peak.at(dtype).value()) << name << " " << dtype;
    }
    EXPECT_GT(g.gemm.sms, 0) << name;
  }
}

TEST(GemmModel, TileAndWaveQuantizationInClosedForm) {
  const hw::GemmStructure& a100 = gpu("A100-SXM-80GB").gemm;  // 108 SMs, 256x128
  // 12 x 9 tiles of 256x128 = 108: one full wave, no padding.
  GemmTiling t = gemm_tiling(a100, 3072, 1152);
  EXPECT_EQ(t.tiles, 108);
  EXPECT_EQ(t.waves, 1);
  EXPECT_DOUBLE_EQ(t.efficiency, 1.0);
  // Tile quantization: 3000 rows still take 12 tiles; 3000 / 3072 of them is useful.
  t = gemm_tiling(a100, 3000, 1152);
  EXPECT_EQ(t.tiles, 108);
  EXPECT_DOUBLE_EQ(t.efficiency, 3000.0 / 3072.0);
  // Wave quantization: 4 full waves (432 tiles: 24 x 18), then one tile row more starts a fifth.
  t = gemm_tiling(a100, 24 * 256, 18 * 128);
  EXPECT_EQ(t.tiles, 432);
  EXPECT_EQ(t.waves, 4);
  EXPECT_DOUBLE_EQ(t.efficiency, 1.0);
  t = gemm_tiling(a100, 24 * 256 + 256, 18 * 128);
  EXPECT_EQ(t.waves, 5);
  EXPECT_DOUBLE_EQ(t.efficiency, 450.0 / (5 * 108));
}

TEST(GemmModel, AShapeJustPastAWaveBoundaryIsSlowerByThePredictedFactor) {
  // H100 SXM: 132 SMs, 128x256 tiles. m = 128 x 132 x w rows, n = 256: exactly w waves. One more
  // row needs one more tile, so a (w+1)-th wave: (w+1)/w times the time for 1 + 1/(128 x 132 w)
  // times the FLOPs.
  const hw::GpuSpec& h100 = gpu("H100-SXM");
  for (const std::int64_t w : {1, 2, 4, 8}) {
    const std::int64_t m = 128 * 132 * w, n = 256, k = 8192;
    const GemmTiling at = gemm_tiling(h100.gemm, m, n);
    const GemmTiling past = gemm_tiling(h100.gemm, m + 1, n);
    EXPECT_EQ(at.waves, w);
    EXPECT_EQ(past.waves, w + 1);
    const double ratio = gemm_seconds(h100, m + 1, n, k) / gemm_seconds(h100, m, n, k);
    EXPECT_NEAR(ratio, static_cast<double>(w + 1) / static_cast<double>(w), 1e-6) << "w=" << w;
  }
}

TEST(GemmModel, FullWaveRateComesFromThePublishedMamfAndItsShape) {
  // H100's MAMF, 794.5 TFLOP/s, was measured at 2048x2048x13312: 16 x 8 = 128 tiles of 128x256
  // on 132 SMs, one wave with 4 SMs idle. Full waves run 132/128 faster.
  const hw::GpuSpec& h100 = gpu("H100-SXM");
  EXPECT_NEAR(full_wave_rate(h100, "bf16").value(), 794.5e12 * 132.0 / 128.0, 1e6);
  // Without a published shape (A100), the MAMF is taken as the full-wave rate.
  EXPECT_DOUBLE_EQ(full_wave_rate(gpu("A100-SXM-80GB"), "bf16").value(), 271.2e12);
  // The published shape runs at the published MAMF (times the sustained share).
  const double f = 2.0 * 2048 * 2048 * 13312;
  EXPECT_NEAR(f / gemm_seconds(h100, 2048, 2048, 13312), 794.5e12 * h100.roofline.gemm, 1e9);
  // No MAMF for the dtype: the error names the precision.
  try {
    (void)full_wave_rate(gpu("A100-SXM-80GB"), "fp8");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/precision"), std::string::npos) << e.what();
  }
}

TEST(GemmModel, OnH100OnlyLargeAlignedShapesReachTheCeiling) {
  const hw::GpuSpec& h100 = gpu("H100-SXM");
  const double ceiling = full_wave_rate(h100, "bf16").value() * h100.roofline.gemm;
  double best = 0;
  std::int64_t best_m = 0;
  // Square GEMMs from 256 to 16384 in steps of 256: the rate never exceeds the ceiling, reaches
  // it only where the tiles fill whole waves, and small shapes stay far below it.
  for (std::int64_t s = 256; s <= 16384; s += 256) {
    const double rate = 2.0 * static_cast<double>(s) * static_cast<double>(s) * 8192 / gemm_seconds(h100, s, s, 8192);
    EXPECT_LE(rate, ceiling * (1 + 1e-9)) << s;
    if (rate > best) best = rate, best_m = s;
  }
  const GemmTiling t = gemm_tiling(h100.gemm, best_m, best_m);
  EXPECT_GE(t.efficiency, 0.99) << best_m;
  EXPECT_GE(best_m, 4096);
  EXPECT_LT(2.0 * 512 * 512 * 8192 / gemm_seconds(h100, 512, 512, 8192), 0.5 * ceiling);
  // 8192^3: 64 x 32 = 2048 tiles in 16 waves of 132 = 97% of the full-wave rate.
  EXPECT_DOUBLE_EQ(gemm_tiling(h100.gemm, 8192, 8192).efficiency, 2048.0 / (16 * 132));
}

TEST(GemmModel, UnderOneWaveASmallerTileSpreadsTheWork) {
  // 1024 x 1024 on A100: 32 tiles of 256x128 would leave 76 SMs idle. 64x64 tiles: 256 of them
  // in 3 waves, the least SM time among the library's tiles.
  const GemmTiling t = gemm_tiling(gpu("A100-SXM-80GB").gemm, 1024, 1024);
  EXPECT_EQ(t.tile.m, 64);
  EXPECT_EQ(t.tile.n, 64);
  EXPECT_EQ(t.waves, 3);
  EXPECT_DOUBLE_EQ(t.efficiency, 1024.0 * 1024.0 / (3 * 108 * 64 * 64));
}

TEST(GemmModel, AMixRunsAtItsFlopWeightedHarmonicEfficiency) {
  const hw::GemmStructure& a100 = gpu("A100-SXM-80GB").gemm;
  const tg::GemmShape mix[] = {{3072, 1152, 4096}, {3000, 1152, 1024}, {1024, 1024, 512}};
  double f = 0, w = 0;
  for (const auto& s : mix) {
    const double fs = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    f += fs;
    w += fs / gemm_tiling(a100, s.m, s.n).efficiency;
  }
  EXPECT_DOUBLE_EQ(mix_efficiency(a100, mix), f / w);
  EXPECT_DOUBLE_EQ(mix_efficiency(a100, {}), 1.0);
}

}  // namespace
}  // namespace cs::compute
