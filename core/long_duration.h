// Long spans of wall-clock time: a per-GPU MTBF of 50,700 hours, a 54-day observation window,
// months of training. They exceed the simulated clock (Duration: integer picoseconds, ±106 days;
// inputs at most 1 hour, unit_parse.h), so they are seconds as a double in a type of their own:
// a LongDuration never mixes with a Duration except through the named conversions below.
//
// Text: "50700h", "54d", "12.9min", "30s", "500ms" (units ms, s, min, h, d; d = 86,400 s); a bare
// number, a negative or zero value, or more than kMaxLongDuration is a UnitParseError.
#pragma once

#include <string>
#include <string_view>

#include "core/config.h"
#include "core/units.h"

namespace cs {

struct LongDurationTag {};
using LongDuration = Quantity<LongDurationTag, double>;  // seconds

// 10^7 hours (about 1,140 years): above any published component MTBF.
inline constexpr LongDuration kMaxLongDuration{3.6e10};

constexpr LongDuration long_seconds(double s) { return LongDuration{s}; }
constexpr LongDuration long_minutes(double m) { return LongDuration{m * 60}; }
constexpr LongDuration long_hours(double h) { return LongDuration{h * 3600}; }
constexpr LongDuration long_days(double d) { return LongDuration{d * 86400}; }
constexpr double to_seconds(LongDuration d) { return d.value(); }
constexpr double to_hours(LongDuration d) { return d.value() / 3600; }
// A clock duration as a long one (exact to the double's precision).
constexpr LongDuration to_long(Duration d) { return LongDuration{to_seconds(d)}; }
// Time to move `b` at rate `bw` (> 0), for transfers that may outlast the clock (a checkpoint of
// terabytes to a slow store).
constexpr LongDuration long_transfer_time(Bytes b, Bandwidth bw) {
  return LongDuration{static_cast<double>(b.value()) / bw.value()};
}

// Defined in unit_parse.cpp with the other unit strings.
LongDuration parse_long_duration(std::string_view text);
// The node's string as a long duration; a ConfigError at the node otherwise.
LongDuration as_long_duration(const ConfigNode& node);

// "2.78 h", "12.9 min", "30.0 s", "54.0 d" for people.
std::string format_long_duration(LongDuration d);

}  // namespace cs
