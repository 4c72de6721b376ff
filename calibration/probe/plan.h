// What a calibration run measures, in which order: GEMM shapes, byte sizes, rank counts, GPU
// pairs, sections (docs/calibration.md, "What is measured"). Pure C++ and deterministic: the
// same options always give the same plan, so points come out in the same order on every run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calibration/profile.h"

namespace cs::probe {

// ---- sections ----------------------------------------------------------------------------------

// In run order: gemm, memory, launch, overlap, links, collectives.
const std::vector<std::string>& all_sections();
// "gemm,links" -> the sections in run order (duplicates merged). Throws InputError naming
// --sections and the unknown name.
std::vector<std::string> parse_sections(std::string_view list);

// ---- GEMM ----------------------------------------------------------------------------------------

struct GemmPlanEntry {
  cal::GemmShape shape;
  std::string source;  // mamf, model-shape, grid, wave-sweep
};

// The GEMMs of a run, each (dtype, m, n, k) once (the first source listed wins):
//   mamf         bf16 8192^3
//   model-shape  bf16; GPT blocks with T tokens, hidden h, tensor-parallel degree t:
//                QKV (T, 3h/t, h), proj (T, h, h/t), fc1 (T, 4h/t, h), fc2 (T, h, 4h/t);
//                T in {2048, 4096, 8192, 16384}, h in {2304, 4096, 8192, 12288}, t in {1, 8}
//                (quick: T 4096, h in {4096, 8192})
//   grid         bf16: m, n, k in {256, 512, ..., 16384} (quick: the cubes only);
//                fp16, tf32, fp8: m, n, k in {256, 1024, 4096, 16384} (quick: 4096^3, 8192^3)
//   wave-sweep   bf16, m = k = 8192, n from 7936 to 9216 by 128 (quick: by 256)
// fp8 (e4m3) only when `fp8` (compute capability 8.9 and later).
std::vector<GemmPlanEntry> gemm_plan(bool quick, bool fp8);

// ---- byte sizes ------------------------------------------------------------------------------------

// first, first*factor, ... up to last (inclusive); `last` itself is appended when it is not on the
// progression and `include_last` is set. Empty when last < first.
std::vector<std::int64_t> geometric_sizes(std::int64_t first, std::int64_t last, std::int64_t factor,
                                          bool include_last);

// Bytes moved (read + written) by each memory-kernel point: 4 KiB to 4 GiB by x4 (quick: to 1 GiB
// by x8), none above max_bytes.
std::vector<std::int64_t> memory_sizes(bool quick, std::int64_t max_bytes);
const std::vector<std::string>& memory_kernels();  // copy, elementwise, reduction, norm

// Copy sizes of the link points: 8 B to 1 GiB by x2 (quick: by x8), none above max_bytes.
std::vector<std::int64_t> link_sizes(bool quick, std::int64_t max_bytes);
// Ordered GPU pairs of the d2d points: all of them (quick: GPU 0 with each other GPU, both ways).
std::vector<std::pair<int, int>> link_pairs(int gpus, bool quick);

// nccl-tests sizes of the collective points: 8 B to 8 GiB by x2 (quick: to 1 GiB by x4, 1 GiB
// included), none above max_bytes.
std::vector<std::int64_t> collective_sizes(bool quick, std::int64_t max_bytes);

// ---- collectives ---------------------------------------------------------------------------------

// all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv.
const std::vector<std::string>& collective_ops();
// Every power of two >= 2 up to `gpus`.
std::vector<int> rank_counts(int gpus);
// The algorithms forced with NCCL_ALGO under --algos: ring, tree, nvls.
const std::vector<std::string>& forced_algorithms();
// Whether NCCL implements `op` with `algorithm` ("auto" runs every op; tree: all_reduce only;
// nvls: all_reduce, all_gather, reduce_scatter; ring: every collective but the point-to-point ones).
bool algorithm_supports(std::string_view algorithm, std::string_view op);

// Element counts and buffer sizes of one collective call at nccl-tests' size `size_bytes`
// (docs/calibration-profile.md, points.collectives), with nccl-tests' trimming: all_gather,
// reduce_scatter and all_to_all take a per-rank (per-peer) count rounded down to a multiple of
// 16 bytes. Nothing when the trimmed count is 0.
struct CollectiveCounts {
  std::int64_t count = 0;       // the count argument of the NCCL call (per rank / per peer)
  std::int64_t elements = 0;    // nccl-tests' count column: size / element size
  std::int64_t bytes = 0;       // nccl-tests' size after trimming (the point's bytes)
  std::int64_t send_bytes = 0;  // per rank
  std::int64_t recv_bytes = 0;  // per rank
};
std::optional<CollectiveCounts> collective_counts(std::string_view op, std::int64_t size_bytes, int ranks,
                                                  int element_size);

}  // namespace cs::probe
