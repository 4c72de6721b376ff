#include "core/units.h"

#include <array>
#include <cstdio>

#include "core/errors.h"

namespace cs {
namespace {

// Picoseconds for x seconds, rounded up; guards the int64 range.
Duration ceil_picoseconds(double seconds) {
  const double ps = std::ceil(seconds * 1e12 - 1e-6);  // absorb representation noise of exact values
  if (!(ps < 9.2e18)) throw InternalError("duration out of range: " + std::to_string(seconds) + " s");
  return Duration{static_cast<std::int64_t>(ps < 0 ? 0 : ps)};
}

std::string printf_string(const char* fmt, double v, const char* unit) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), fmt, v, unit);
  return buf.data();
}

// Three significant digits: 1.50, 12.3, 512.
std::string three_digits(double v, const char* unit) {
  const double a = std::fabs(v);
  const char* fmt = a >= 100 ? "%.0f %s" : a >= 10 ? "%.1f %s" : "%.2f %s";
  return printf_string(fmt, v, unit);
}

}  // namespace

Duration duration_from_seconds(double seconds) {
  const double ps = std::round(seconds * 1e12);
  if (!(std::fabs(ps) < 9.2e18)) throw InternalError("duration out of range");
  return Duration{static_cast<std::int64_t>(ps)};
}

Bytes scale(Bytes b, double factor) {
  return Bytes{static_cast<std::int64_t>(std::llround(static_cast<double>(b.value()) * factor))};
}

Duration transfer_time(Bytes b, Bandwidth bw) {
  if (!(bw.value() > 0)) throw InternalError("transfer_time: bandwidth must be positive");
  return ceil_picoseconds(static_cast<double>(b.value()) / bw.value());
}

Duration drain_time(double bytes, Bandwidth bw) {
  if (!(bw.value() > 0)) throw InternalError("drain_time: bandwidth must be positive");
  return ceil_picoseconds(bytes / bw.value());
}

Duration compute_time(Flops f, FlopRate r) {
  if (!(r.value() > 0)) throw InternalError("compute_time: FLOP rate must be positive");
  return ceil_picoseconds(f.value() / r.value());
}

Bandwidth average_rate(Bytes b, Duration d) {
  return Bandwidth{static_cast<double>(b.value()) / to_seconds(d)};
}

FlopRate average_rate(Flops f, Duration d) { return FlopRate{f.value() / to_seconds(d)}; }

std::string format_bytes(Bytes b) {
  static constexpr std::array<const char*, 7> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(b.value());
  std::size_t i = 0;
  while (std::fabs(v) >= 1024 && i + 1 < kUnits.size()) {
    v /= 1024;
    ++i;
  }
  if (i == 0) return std::to_string(b.value()) + " B";
  return three_digits(v, kUnits[i]);
}

std::string format_duration(Duration d) {
  const double s = to_seconds(d);
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-9) return three_digits(s * 1e12, "ps");
  if (a < 1e-6) return three_digits(s * 1e9, "ns");
  if (a < 1e-3) return three_digits(s * 1e6, "us");
  if (a < 1) return three_digits(s * 1e3, "ms");
  return three_digits(s, "s");
}

std::string format_bandwidth(Bandwidth bw) {
  const double v = bw.value();
  if (v >= 1e12) return three_digits(v / 1e12, "TB/s");
  if (v >= 1e9) return three_digits(v / 1e9, "GB/s");
  if (v >= 1e6) return three_digits(v / 1e6, "MB/s");
  return three_digits(v / 1e3, "kB/s");
}

std::string format_flop_rate(FlopRate r) {
  const double v = r.value();
  if (v >= 1e15) return three_digits(v / 1e15, "PFLOP/s");
  if (v >= 1e12) return three_digits(v / 1e12, "TFLOP/s");
  return three_digits(v / 1e9, "GFLOP/s");
}

}  // namespace cs
