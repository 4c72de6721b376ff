#include "core/unit_parse.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/long_duration.h"

namespace cs {
namespace {

struct UnitFactor {
  std::string_view unit;
  double factor;  // multiplies the number to give the base unit (bytes, bytes/s, s, FLOP, FLOP/s)
};

constexpr std::array kByteUnits{
    UnitFactor{"B", 1.0},      UnitFactor{"kB", 1e3},     UnitFactor{"KB", 1e3},
    UnitFactor{"MB", 1e6},     UnitFactor{"GB", 1e9},     UnitFactor{"TB", 1e12},
    UnitFactor{"PB", 1e15},    UnitFactor{"KiB", 0x1p10}, UnitFactor{"MiB", 0x1p20},
    UnitFactor{"GiB", 0x1p30}, UnitFactor{"TiB", 0x1p40}, UnitFactor{"PiB", 0x1p50},
};

constexpr std::array kBandwidthUnits{
    UnitFactor{"bps", 1.0 / 8},     UnitFactor{"kbps", 1e3 / 8},    UnitFactor{"Kbps", 1e3 / 8},
    UnitFactor{"Mbps", 1e6 / 8},    UnitFactor{"Gbps", 1e9 / 8},    UnitFactor{"Tbps", 1e12 / 8},
    UnitFactor{"b/s", 1.0 / 8},     UnitFactor{"kb/s", 1e3 / 8},    UnitFactor{"Kb/s", 1e3 / 8},
    UnitFactor{"Mb/s", 1e6 / 8},    UnitFactor{"Gb/s", 1e9 / 8},    UnitFactor{"Tb/s", 1e12 / 8},
    UnitFactor{"Kibps", 0x1p10 / 8}, UnitFactor{"Mibps", 0x1p20 / 8}, UnitFactor{"Gibps", 0x1p30 / 8},
    UnitFactor{"B/s", 1.0},         UnitFactor{"kB/s", 1e3},        UnitFactor{"KB/s", 1e3},
    UnitFactor{"MB/s", 1e6},        UnitFactor{"GB/s", 1e9},        UnitFactor{"TB/s", 1e12},
    UnitFactor{"Bps", 1.0},         UnitFactor{"kBps", 1e3},        UnitFactor{"KBps", 1e3},
    UnitFactor{"MBps", 1e6},        UnitFactor{"GBps", 1e9},        UnitFactor{"TBps", 1e12},
    UnitFactor{"KiB/s", 0x1p10},    UnitFactor{"MiB/s", 0x1p20},    UnitFactor{"GiB/s", 0x1p30},
    UnitFactor{"TiB/s", 0x1p40},
};

constexpr std::array kDurationUnits{
    UnitFactor{"ps", 1e-12}, UnitFactor{"ns", 1e-9}, UnitFactor{"us", 1e-6},
    UnitFactor{"\u00b5s", 1e-6}, UnitFactor{"ms", 1e-3}, UnitFactor{"s", 1.0},
};

// Long durations (core/long_duration.h): MTBFs, observation windows, checkpoint intervals.
constexpr std::array kLongDurationUnits{
    UnitFactor{"ms", 1e-3}, UnitFactor{"s", 1.0}, UnitFactor{"min", 60.0}, UnitFactor{"h", 3600.0}, UnitFactor{"d", 86400.0},
};

constexpr std::array kFlopRateUnits{
    UnitFactor{"FLOP/s", 1.0},   UnitFactor{"kFLOP/s", 1e3},  UnitFactor{"MFLOP/s", 1e6},
    UnitFactor{"GFLOP/s", 1e9},  UnitFactor{"TFLOP/s", 1e12}, UnitFactor{"PFLOP/s", 1e15},
    UnitFactor{"FLOPS", 1.0},    UnitFactor{"kFLOPS", 1e3},   UnitFactor{"MFLOPS", 1e6},
    UnitFactor{"GFLOPS", 1e9},   UnitFactor{"TFLOPS", 1e12},  UnitFactor{"PFLOPS", 1e15},
};

constexpr std::array kFlopUnits{
    UnitFactor{"FLOP", 1.0},   UnitFactor{"kFLOP", 1e3},  UnitFactor{"MFLOP", 1e6},
    UnitFactor{"GFLOP", 1e9},  UnitFactor{"TFLOP", 1e12}, UnitFactor{"PFLOP", 1e15},
    UnitFactor{"EFLOP", 1e18},
};

std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// Splits "1.5 GiB" into 1.5 and "GiB"; checks the number is finite and not negative.
template <std::size_t N>
double parse_scaled(std::string_view text, const std::array<UnitFactor, N>& units,
                    std::string_view what, std::string_view example) {
  const auto fail = [&](const std::string& why) -> double {
    throw UnitParseError("expected " + std::string(what) + " such as \"" + std::string(example) +
                         "\"; got " + quoted(text) + (why.empty() ? "" : " (" + why + ")"));
  };
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && text[i] == '-') return fail("negative values are not allowed");
  if (i < text.size() && text[i] == '+') ++i;
  double value = 0;
  const char* begin = text.data() + i;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec != std::errc{} || ptr == begin) return fail("no number");
  std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.remove_prefix(1);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.remove_suffix(1);
  if (unit.empty()) return fail("a number needs a unit");
  if (!std::isfinite(value)) return fail("not a finite number");
  for (const auto& u : units) {
    if (u.unit == unit) {
      const double scaled = value * u.factor;
      if (!std::isfinite(scaled)) return fail("out of range");
      return scaled;
    }
  }
  return fail("unknown unit \"" + std::string(unit) + "\"");
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  const double v = parse_scaled(text, kByteUnits, "a size", "80GiB");
  if (v > static_cast<double>(kMaxBytes.value())) throw UnitParseError("size " + quoted(text) + " is out of range (at most 1PiB)");
  const double whole = std::round(v);
  // Representation noise only ("0.1GB"): "1e-7B" or "0.4B" is not a whole number of bytes.
  if (std::fabs(v - whole) > 1e-9 * std::max(1.0, whole)) {
    throw UnitParseError("expected a whole number of bytes; got " + quoted(text));
  }
  return Bytes{static_cast<std::int64_t>(whole)};
}

Bandwidth parse_bandwidth(std::string_view text) {
  const double v = parse_scaled(text, kBandwidthUnits, "a bandwidth", "400Gbps");
  if (!(v > 0)) throw UnitParseError("expected a positive bandwidth; got " + quoted(text));
  if (v < kMinBandwidth.value() || v > kMaxBandwidth.value()) {
    throw UnitParseError("bandwidth " + quoted(text) + " is out of range (from 1Mbps to 8Pbps)");
  }
  return Bandwidth{v};
}

Duration parse_duration(std::string_view text) {
  const double v = parse_scaled(text, kDurationUnits, "a duration", "1.5us");
  if (v > to_seconds(kMaxInputDuration)) throw UnitParseError("duration " + quoted(text) + " is out of range (at most 1h = 3600s)");
  return duration_from_seconds(v);
}

LongDuration parse_long_duration(std::string_view text) {
  const double v = parse_scaled(text, kLongDurationUnits, "a duration", "50700h");
  if (!(v > 0)) throw UnitParseError("expected a positive duration; got " + quoted(text) + " (zero is not allowed)");
  if (v > kMaxLongDuration.value()) throw UnitParseError("duration " + quoted(text) + " is out of range (at most 10000000h)");
  return LongDuration{v};
}

FlopRate parse_flop_rate(std::string_view text) {
  const double v = parse_scaled(text, kFlopRateUnits, "a FLOP rate", "989TFLOP/s");
  if (!(v > 0)) throw UnitParseError("expected a positive FLOP rate; got " + quoted(text));
  if (v < 1e6 || v > 1e21) throw UnitParseError("FLOP rate " + quoted(text) + " is out of range (from 1MFLOP/s to 1e6PFLOP/s)");
  return FlopRate{v};
}

Flops parse_flops(std::string_view text) {
  return Flops{parse_scaled(text, kFlopUnits, "a FLOP count", "3.2PFLOP")};
}

}  // namespace cs
