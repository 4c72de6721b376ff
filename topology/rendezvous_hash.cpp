#include "topology/rendezvous_hash.h"

#include <cmath>
#include <cstring>

#include "core/errors.h"
#include "core/random.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CS_HASH_SIMD 1
#endif

namespace cs::topo {
namespace {

std::size_t max_hash_scalar(const std::uint32_t* ids, std::size_t n, std::uint64_t seed) {
  std::size_t best = 0;
  std::uint64_t best_hash = hash_combine(seed, ids[0]);
  for (std::size_t i = 1; i < n; ++i) {
    const std::uint64_t h = hash_combine(seed, ids[i]);
    if (h > best_hash) {
      best = i;
      best_hash = h;
    }
  }
  return best;
}

#ifdef CS_HASH_SIMD
// max_hash_scalar, kLanes hashes at a time in GCC's vector extensions; the body is compiled for
// AVX-512 (8 lanes) and for AVX2 (4 lanes). hash_combine(seed, v) = mix64(seed ^ (v + k)) with
// k = 0x9e3779b97f4a7c15 + (seed << 6) + (seed >> 2), all modulo 2^64 (core/random.h). The lanes
// compute the scalar loop's hashes exactly, and ids never tie, so every variant returns the same
// index. Lanes compare as signed after flipping the sign bit (AVX2 has only a signed 64-bit
// compare) and select by mask arithmetic, so the loop stays in vector registers.
template <int kLanes>
struct Lanes;  // the vector types of kLanes 64-bit lanes
template <>
struct Lanes<4> {
  typedef std::uint64_t U64 __attribute__((vector_size(32)));
  typedef std::int64_t I64 __attribute__((vector_size(32)));
  typedef std::uint32_t U32 __attribute__((vector_size(16)));
};
template <>
struct Lanes<8> {
  typedef std::uint64_t U64 __attribute__((vector_size(64)));
  typedef std::int64_t I64 __attribute__((vector_size(64)));
  typedef std::uint32_t U32 __attribute__((vector_size(32)));
};

template <int kLanes>
__attribute__((always_inline)) inline std::size_t max_hash_vector(const std::uint32_t* ids, std::size_t n,
                                                                  std::uint64_t seed) {
  using U64 = typename Lanes<kLanes>::U64;
  using I64 = typename Lanes<kLanes>::I64;
  using U32 = typename Lanes<kLanes>::U32;
  constexpr std::uint64_t kSign = 1ULL << 63;
  if (n < 2 * kLanes) return max_hash_scalar(ids, n, seed);
  const std::uint64_t k = 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  // The hashes of ids[i, i + kLanes), sign bit flipped (into `out`: a vector returned by value
  // would change the ABI between targets).
  const auto hashes = [&](I64& out, std::size_t i) {
    U32 v32;
    std::memcpy(&v32, ids + i, sizeof v32);
    U64 x = (seed ^ (__builtin_convertvector(v32, U64) + k)) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    out = reinterpret_cast<I64>((x ^ (x >> 31)) ^ kSign);
  };
  I64 index, best_index;
  for (int lane = 0; lane < kLanes; ++lane) index[lane] = lane;
  best_index = index;
  I64 best, h;
  hashes(best, 0);
  std::size_t i = kLanes;
  for (; i + kLanes <= n; i += kLanes) {
    index += kLanes;
    hashes(h, i);
    const I64 more = h > best;  // all ones where the new hash is larger
    best = (h & more) | (best & ~more);
    best_index = (index & more) | (best_index & ~more);
  }
  std::size_t out = static_cast<std::size_t>(best_index[0]);
  std::uint64_t out_hash = static_cast<std::uint64_t>(best[0]) ^ kSign;
  for (int lane = 1; lane < kLanes; ++lane) {
    const std::uint64_t lane_hash = static_cast<std::uint64_t>(best[lane]) ^ kSign;
    if (lane_hash > out_hash) {
      out = static_cast<std::size_t>(best_index[lane]);
      out_hash = lane_hash;
    }
  }
  for (; i < n; ++i) {
    const std::uint64_t tail_hash = hash_combine(seed, ids[i]);
    if (tail_hash > out_hash) {
      out = i;
      out_hash = tail_hash;
    }
  }
  return out;
}

__attribute__((target("avx512f,avx512dq"))) std::size_t max_hash_avx512(const std::uint32_t* ids, std::size_t n,
                                                                          std::uint64_t seed) {
  return max_hash_vector<8>(ids, n, seed);
}
__attribute__((target("avx2"))) std::size_t max_hash_avx2(const std::uint32_t* ids, std::size_t n,
                                                           std::uint64_t seed) {
  return max_hash_vector<4>(ids, n, seed);
}
#endif  // CS_HASH_SIMD

// The variant's answer; isa must be supported().
std::size_t dispatch(HashIsa isa, const std::uint32_t* ids, std::size_t n, std::uint64_t seed) {
#ifdef CS_HASH_SIMD
  if (isa == HashIsa::kAvx512) return max_hash_avx512(ids, n, seed);
  if (isa == HashIsa::kAvx2) return max_hash_avx2(ids, n, seed);
#endif
  return max_hash_scalar(ids, n, seed);
}

}  // namespace

bool supported(HashIsa isa) {
#ifdef CS_HASH_SIMD
  static const bool avx2 = __builtin_cpu_supports("avx2");
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  if (isa == HashIsa::kAvx2) return avx2;
  if (isa == HashIsa::kAvx512) return avx512;
#endif
  return isa == HashIsa::kScalar;
}

std::size_t max_hash_with(HashIsa isa, const std::uint32_t* ids, std::size_t n, std::uint64_t seed) {
  if (n == 0 || !supported(isa)) throw InternalError("max_hash_with: no ids, or an instruction set this CPU lacks");
  return dispatch(isa, ids, n, seed);
}

std::size_t max_hash(const std::uint32_t* ids, std::size_t n, std::uint64_t seed) {
  static const HashIsa widest = supported(HashIsa::kAvx512) ? HashIsa::kAvx512
                                : supported(HashIsa::kAvx2) ? HashIsa::kAvx2
                                                            : HashIsa::kScalar;
  return dispatch(widest, ids, n, seed);
}

std::size_t max_weighted_hash(const std::uint32_t* ids, const std::uint32_t* weights, std::size_t n,
                              std::uint64_t seed) {
  if (n == 0) throw InternalError("max_weighted_hash: no ids");
  bool equal = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (weights[i] == 0) throw InternalError("max_weighted_hash: a weight of 0");
    equal = equal && weights[i] == weights[0];
  }
  if (equal) return max_hash(ids, n, seed);
  std::size_t best = 0;
  double best_score = 0;
  std::uint64_t best_hash = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = hash_combine(seed, ids[i]);
    const double u = (static_cast<double>(h >> 11) + 0.5) * 0x1p-53;
    const double score = std::log(u) / static_cast<double>(weights[i]);
    if (i == 0 || score > best_score || (score == best_score && h > best_hash)) {
      best = i;
      best_score = score;
      best_hash = h;
    }
  }
  return best;
}

}  // namespace cs::topo
