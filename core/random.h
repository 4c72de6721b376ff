// Deterministic randomness and hashing. One seed per run; each component derives its own stream
// from (seed, stable id), so results never depend on creation order or thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace cs {

// SplitMix64 finaliser: a fast, well-mixed 64-bit hash of one word.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Combines words into one hash, order-sensitive.
constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) {
  return mix64(seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

// A small deterministic generator (SplitMix64 stream). Not for cryptography.
class Rng {
 public:
  explicit constexpr Rng(std::uint64_t seed) : state_(seed) {}
  // A generator for a component: the same (seed, stream id) always gives the same stream.
  static constexpr Rng derive(std::uint64_t seed, std::uint64_t stream_id) {
    return Rng(hash_combine(mix64(seed), stream_id));
  }
  constexpr std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  // Uniform integer in [0, n), n > 0.
  constexpr std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

// Exponential with mean 1 (inversion).
inline double draw_exponential(Rng& rng) { return -std::log1p(-rng.uniform()); }

// Standard normal (Box-Muller, one value per call).
inline double draw_normal(Rng& rng) {
  const double u = 1.0 - rng.uniform();  // (0, 1]
  const double v = rng.uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

}  // namespace cs
