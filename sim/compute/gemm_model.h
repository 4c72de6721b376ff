// The GEMM shape model: how fast one matrix multiply runs on a GPU, from the GPU's structure.
//
// A BLAS library computes C[m x n] = A[m x k] B[k x n] in output tiles of Tm x Tn, one tile per SM
// at a time (NVIDIA, "Matrix Multiplication Background User's Guide"; calibration-methods 3.2):
//
//   tiles  = ceil(m / Tm) ceil(n / Tn)                 tile quantization: edge tiles are whole tiles
//   waves  = ceil(tiles / SMs)                         wave quantization: the last wave may be partial
//   time   = waves x 2 Tm Tn k / R_sm,   R_sm = R_full / SMs
//   eta    = 2 m n k / (time x R_full) = m n / (waves x SMs x Tm x Tn)
//
// so a shape just past a wave boundary (tiles = w SMs + 1) takes (w + 1) / w times as long as one
// with w SMs tiles. R_full, the rate of full waves of whole tiles, is the GPU's published maximum
// achievable matmul rate (MAMF, mamf-finder) divided by eta of the shape it was measured at (a
// best shape of a sweep is near full waves; where the shape is unknown its eta is taken as 1).
//
// The tile: the library's large tile (gpus.json gemm.tile, e.g. 256x128 on A100), either way
// round, when the matrix fills at least one wave with it; a smaller problem gets the tile among
// {large, 128x128, 128x64, 64x128, 64x64} that finishes first (cuBLAS's heuristics trade a large
// tile's operand reuse for parallelism when the GPU would otherwise sit idle). All tiles are
// assumed to run at the same rate per SM; split-K and stream-K kernels (which spread k over SMs
// for small outputs) are not modelled, so a GEMM with fewer 64x64 tiles than SMs is slower than
// cuBLAS would make it. Memory-bound GEMMs are the compute model's roofline (operand bytes over
// HBM bandwidth), not this model's.
//
// A mix of shapes (the GEMMs of one op) runs at R_full x sum(F) / sum(F / eta).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/units.h"
#include "hardware/catalog.h"
#include "taskgraph/task_graph.h"

namespace cs::compute {

struct GemmTiling {
  hw::GemmTile tile;        // as applied: tile.m along m, tile.n along n
  std::int64_t tiles = 0;   // output tiles
  std::int64_t waves = 0;   // rounds of `sms` tiles
  double efficiency = 0;    // eta: useful share of the SM time, in (0, 1]
};

// The tiling of an m x n output on a GPU with this structure (m, n >= 1).
GemmTiling gemm_tiling(const hw::GemmStructure& gpu, std::int64_t m, std::int64_t n);

// R_full for `dtype`: the MAMF over eta of its shape. ConfigError at /precision when the GPU has
// no MAMF for the dtype.
FlopRate full_wave_rate(const hw::GpuSpec& gpu, const std::string& dtype);

// eta of a mix of shapes: sum(F) / sum(F / eta); 1 for an empty mix.
double mix_efficiency(const hw::GemmStructure& gpu, std::span<const tg::GemmShape> gemms);

}  // namespace cs::compute
