#include "core/units.h"

#include <array>
#include <cstdio>

#include "core/errors.h"

namespace cs {
namespace {

std::string format_duration_seconds(double seconds) {
  if (!(seconds < 1e300)) return "an unbounded time";
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.3g s", seconds);
  return buf.data();
}

[[noreturn]] void too_long(double seconds, const std::string& what) {
  throw RangeError(what + " of " + format_duration_seconds(seconds) + " is beyond the longest simulated duration (" +
                   format_duration(kMaxDuration) + "); an input bandwidth, rate, size or latency is too extreme (docs/cli.md, \"Limits\")");
}

// Picoseconds for x seconds, rounded up; at most kMaxDuration.
Duration ceil_picoseconds(double seconds, const char* what) {
  const double ps = std::ceil(seconds * 1e12 - 1e-6);  // absorb representation noise of exact values
  if (!(ps <= static_cast<double>(kMaxDuration.count()))) too_long(seconds, what);
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
  if (!(std::fabs(ps) <= static_cast<double>(kMaxDuration.count()))) too_long(seconds, "a duration");
  return Duration{static_cast<std::int64_t>(ps)};
}

SimTime checked_add(SimTime t, Duration d) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(t.time_since_epoch().count(), d.count(), &sum) || sum > kTimeHorizon.time_since_epoch().count()) {
    throw RangeError("the simulated clock passed " + format_duration(kTimeHorizon.time_since_epoch()) +
                     ", the longest run clustersim simulates; an input bandwidth, rate, size or latency is too extreme (docs/cli.md, \"Limits\")");
  }
  return SimTime{Duration{sum}};
}

Bytes scale(Bytes b, double factor) {
  return Bytes{static_cast<std::int64_t>(std::llround(static_cast<double>(b.value()) * factor))};
}

Duration transfer_time(Bytes b, Bandwidth bw) {
  if (!(bw.value() > 0)) throw InternalError("transfer_time: bandwidth must be positive");
  return ceil_picoseconds(static_cast<double>(b.value()) / bw.value(), "a transfer");
}

Duration drain_time(double bytes, Bandwidth bw) {
  if (!(bw.value() > 0)) throw InternalError("drain_time: bandwidth must be positive");
  return ceil_picoseconds(bytes / bw.value(), "a transfer");
}

Duration compute_time(Flops f, FlopRate r) {
  if (!(r.value() > 0)) throw InternalError("compute_time: FLOP rate must be positive");
  return ceil_picoseconds(f.value() / r.value(), "a computation");
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
