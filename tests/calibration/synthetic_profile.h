// Synthetic calibration profiles with known true models, for the calibration tests and
// bench/bench_fit.cpp. Every measured time is the model's time times (1 + e), e uniform in
// [-noise, +noise] from a seeded cs::Rng, so fits can be checked against the true parameters.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "calibration/profile.h"
#include "core/random.h"
#include "core/units.h"

namespace cs::cal::testing {

// 8 B .. 8 GiB: the powers of two 2^3 .. 2^33 (31 sizes).
inline std::vector<Bytes> log_sizes(int lo_pow2 = 3, int hi_pow2 = 33) {
  std::vector<Bytes> out;
  for (int p = lo_pow2; p <= hi_pow2; ++p) out.push_back(Bytes{std::int64_t{1} << p});
  return out;
}

// t (1 + e), e uniform in [-noise, noise].
inline Duration noisy(double seconds, double noise, Rng& rng) {
  return duration_from_seconds(seconds * (1.0 + noise * (2.0 * rng.uniform() - 1.0)));
}

// A measured timing whose median is `median` (the other statistics around it).
inline Timing timing_of(Duration median) {
  Timing t;
  t.median = median;
  t.p10 = median - median / 200;
  t.p90 = median + median / 200;
  t.min = median - median / 100;
  t.samples = 20;
  return t;
}

// The true collective model of the synthetic profiles, with the collective model's latency
// structure (sim/collectives/collective_runner.h): a launch latency shared by every protocol plus
// 2 (n - 1) steps of a per-protocol step latency; beta = bus factor / bus bandwidth.
inline constexpr double kTrueLaunchSeconds = 8e-6;
inline double true_step_seconds(const std::string& protocol) {
  if (protocol == "ll") return 0.5e-6;
  if (protocol == "ll128") return 0.75e-6;
  return 1.25e-6;
}
inline double true_bus_bandwidth(const std::string& protocol) {
  if (protocol == "ll") return 120e9;
  if (protocol == "ll128") return 300e9;
  return 360e9;
}
struct TrueCollective {
  double alpha_s;
  double beta_s_per_byte;
};
inline TrueCollective true_collective(const std::string& op, const std::string& protocol, int ranks) {
  const double alpha = kTrueLaunchSeconds + 2.0 * (ranks - 1) * true_step_seconds(protocol);
  const double factor = bus_factor(op, ranks) > 0 ? bus_factor(op, ranks) : 1.0;
  return {alpha, factor / true_bus_bandwidth(protocol)};
}

// The true GEMM model: t(F) = 4 us + F / rate(shape), rate 700 TFLOP/s scaled down for skinny
// shapes (so the table is not one number).
inline double true_gemm_rate(std::int64_t m, std::int64_t n, std::int64_t k) {
  const double smallest = static_cast<double>(std::min({m, n, k}));
  return 700e12 * smallest / (smallest + 256.0);
}
inline double true_gemm_seconds(std::int64_t m, std::int64_t n, std::int64_t k) {
  const double f = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return 4e-6 + f / true_gemm_rate(m, n, k);
}

struct SyntheticOptions {
  std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                  "broadcast",  "reduce",     "send_recv"};
  std::vector<int> ranks = {2, 4, 8, 16};
  std::vector<std::string> protocols = {"simple", "ll", "ll128"};
  std::string algorithm = "ring";
  std::string link_class = "nvlink";
  int regimes = 1;           // 3: the model changes at 4 KiB and 16 MiB (see collective_seconds)
  int samples_per_size = 1;  // points per (group, size)
  int gemm_points = 1000;
  double noise = 0.01;
  std::uint64_t seed = 42;
};

// The time of one synthetic collective point. With 3 regimes: below 4 KiB a low-latency,
// low-bandwidth regime (alpha / 3, beta x 5), from 16 MiB a high-latency one (alpha x 3), between
// them the true model with beta x 1.5.
inline double collective_seconds(const TrueCollective& tc, Bytes s, int regimes) {
  const double x = static_cast<double>(s.value());
  if (regimes == 3) {
    if (s < kibibytes(4)) return tc.alpha_s / 3 + 5 * tc.beta_s_per_byte * x;
    if (s < mebibytes(16)) return tc.alpha_s + 1.5 * tc.beta_s_per_byte * x;
    return 3 * tc.alpha_s + tc.beta_s_per_byte * x;
  }
  return tc.alpha_s + tc.beta_s_per_byte * x;
}

inline Profile synthetic_profile(const SyntheticOptions& o = {}) {
  Rng rng = Rng::derive(o.seed, 1);
  Profile p;
  p.provenance.kind = "synthetic";
  p.provenance.tool = "synthetic_profile.h";
  p.provenance.host = "catalog";
  p.inventory.gpus.push_back(GpuInventory{});
  p.inventory.gpus[0].catalog_gpu = "H200-SXM";
  p.inventory.peer_access = {{true}};
  p.inventory.nvlink = {{0}};
  for (const std::string& op : o.ops) {
    for (int ranks : o.ranks) {
      for (const std::string& protocol : o.protocols) {
        const TrueCollective tc = true_collective(op, protocol, ranks);
        for (Bytes s : log_sizes()) {
          for (int sample = 0; sample < o.samples_per_size; ++sample) {
            CollectivePoint c;
            c.op = op;
            c.ranks = ranks;
            c.nodes = 1;
            c.bytes = s;
            c.link_class = o.link_class;
            c.algorithm = o.algorithm;
            c.protocol = protocol;
            c.timing = timing_of(noisy(collective_seconds(tc, s, o.regimes), o.noise, rng));
            p.collectives.push_back(std::move(c));
          }
        }
      }
    }
  }
  // GEMM shapes: m, n, k drawn from powers of two 2^7 .. 2^14 (repeats give duplicates).
  for (int i = 0; i < o.gemm_points; ++i) {
    GemmPoint g;
    g.shape.dtype = "bf16";
    g.shape.m = std::int64_t{1} << (7 + rng.below(8));
    g.shape.n = std::int64_t{1} << (7 + rng.below(8));
    g.shape.k = std::int64_t{1} << (7 + rng.below(8));
    g.timing = timing_of(noisy(true_gemm_seconds(g.shape.m, g.shape.n, g.shape.k), o.noise, rng));
    p.gemm.push_back(std::move(g));
  }
  // Memory: 3 us + B / 4 TB/s from 4 KiB to 4 GiB.
  for (Bytes s : log_sizes(12, 32)) {
    MemoryPoint m;
    m.bytes = s;
    m.timing = timing_of(noisy(3e-6 + static_cast<double>(s.value()) / 4e12, o.noise, rng));
    p.memory.push_back(std::move(m));
  }
  for (int us : {3, 4, 2, 5, 3}) {  // median 3 us
    LaunchPoint l;
    l.timing = timing_of(microseconds(us));
    p.launch.push_back(std::move(l));
  }
  for (double slowdown : {1.10, 1.05, 1.20}) {  // median 1.10
    OverlapPoint ov;
    ov.gemm = GemmShape{"bf16", 8192, 8192, 8192};
    ov.collective_ranks = 8;
    ov.collective_bytes = mebibytes(256);
    ov.alone = microseconds(1000);
    ov.beside = duration_from_seconds(1e-3 * slowdown);
    p.overlap.push_back(std::move(ov));
  }
  return p;
}

}  // namespace cs::cal::testing
