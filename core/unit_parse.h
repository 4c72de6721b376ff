// Strings with units, as every file format and the command line write them:
//   bytes      "80GiB", "512MB", "8B"        decimal (k M G T P) and binary (Ki Mi Gi Ti Pi) prefixes
//   bandwidth  "400Gbps", "50GB/s", "25GBps"  bits ("bps", "b/s") differ from bytes ("B/s", "Bps")
//   duration   "1.5us", "700ns", "2ms", "1s"  ("µs" is accepted for "us")
//   FLOP rate  "989TFLOP/s", "19.5TFLOPS"
//   FLOPs      "3.2PFLOP", "1e18FLOP"
// A bare number is an error, as is a negative value, a zero bandwidth or FLOP rate, a byte count
// that is not whole, and an unknown unit. Errors are UnitParseError with a one-line message that
// says what was expected and what was found.
#pragma once

#include <string_view>

#include "core/units.h"

namespace cs {

Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
Duration parse_duration(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
Flops parse_flops(std::string_view text);

}  // namespace cs
