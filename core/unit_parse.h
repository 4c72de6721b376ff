// Strings with units, as every file format and the command line write them:
//   bytes      "80GiB", "512MB", "8B"        decimal (k M G T P) and binary (Ki Mi Gi Ti Pi) prefixes
//   bandwidth  "400Gbps", "50GB/s", "25GBps"  bits ("bps", "b/s") differ from bytes ("B/s", "Bps")
//   duration   "1.5us", "700ns", "2ms", "1s"  ("µs" is accepted for "us")
//   FLOP rate  "989TFLOP/s", "19.5TFLOPS"
//   FLOPs      "3.2PFLOP", "1e18FLOP"
// A bare number is an error, as is a negative value, a zero bandwidth or FLOP rate, a byte count
// that is not whole, an unknown unit, and a value outside the limits below. Errors are UnitParseError with a one-line message that
// says what was expected and what was found.
#pragma once

#include <string_view>

#include "core/units.h"

namespace cs {

// Ranges every input value is held to, so that nothing computed from them overflows downstream
// (docs/cli.md, "Limits"; units.h, kMaxDuration): a transfer of kMaxBytes at kMinBandwidth would
// still overflow, and is refused as a RangeError when simulated.
inline constexpr Bytes kMaxBytes{std::int64_t{1} << 50};                 // 1 PiB
inline constexpr Bandwidth kMinBandwidth{1e6 / 8};                         // 1 Mbit/s
inline constexpr Bandwidth kMaxBandwidth{1e15};                            // 8 Pbit/s
inline constexpr Duration kMaxInputDuration{std::int64_t{3600} * 1000000000000};  // 1 hour
// Latencies (a link's, a step's, a launch) are at most this: a latency times the steps of a
// collective on the largest cluster stays far inside the clock.
inline constexpr Duration kMaxLatency{std::int64_t{1000000000000}};     // 1 s

Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
Duration parse_duration(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
Flops parse_flops(std::string_view text);

}  // namespace cs
