// Strings with units (core/unit_parse.h): every family, bits vs bytes, decimal vs binary prefixes,
// and the inputs that must be rejected with a UnitParseError naming the input.
#include "core/unit_parse.h"

#include <functional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs {
namespace {

// Expects `parse(text)` to throw UnitParseError whose message contains the quoted input and
// `reason`.
template <class F>
void expect_rejected(F parse, const std::string& text, const std::string& reason = "") {
  try {
    parse(text);
    ADD_FAILURE() << "accepted \"" << text << "\"";
  } catch (const UnitParseError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("\"" + text + "\""), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  }
}

TEST(CoreUnitParse, Bytes) {
  EXPECT_EQ(parse_bytes("8B").value(), 8);
  EXPECT_EQ(parse_bytes("0B").value(), 0);
  EXPECT_EQ(parse_bytes("512MB").value(), 512000000);
  EXPECT_EQ(parse_bytes("1kB").value(), 1000);
  EXPECT_EQ(parse_bytes("1KB").value(), 1000);
  EXPECT_EQ(parse_bytes("80GiB").value(), 85899345920);  // 80 * 2^30
  EXPECT_EQ(parse_bytes("1KiB").value(), 1024);
  EXPECT_EQ(parse_bytes("1MiB").value(), 1048576);
  EXPECT_EQ(parse_bytes("2TB").value(), 2000000000000);
  EXPECT_EQ(parse_bytes("1TiB").value(), 1099511627776);
  EXPECT_EQ(parse_bytes("1PB").value(), 1000000000000000);
  EXPECT_EQ(parse_bytes("1PiB").value(), std::int64_t{1} << 50);  // the largest size (kMaxBytes)
  EXPECT_EQ(parse_bytes("1PiB").value(), 1125899906842624);
  // Fractions that give whole bytes are fine: 0.5 KiB = 512 B, 1.5 kB = 1500 B.
  EXPECT_EQ(parse_bytes("0.5KiB").value(), 512);
  EXPECT_EQ(parse_bytes("1.5kB").value(), 1500);
  EXPECT_EQ(parse_bytes("1e3B").value(), 1000);
}

TEST(CoreUnitParse, DecimalAndBinaryPrefixesDiffer) {
  EXPECT_EQ(parse_bytes("1GB").value(), 1000000000);
  EXPECT_EQ(parse_bytes("1GiB").value(), 1073741824);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GB/s").value(), 1e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s").value(), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Gbps").value(), 1e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Gibps").value(), 1073741824.0);
}

TEST(CoreUnitParse, Bandwidth) {
  // 400 Gb/s = 400e9 bits / 8 = 5e10 B/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value(), 5e10);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s").value(), 5e10);
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GB/s").value(), 5e10);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GBps").value(), 2.5e10);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbps").value(), 1.25e7);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Tbps").value(), 1.25e11);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3.2TB/s").value(), 3.2e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Mbps").value(), 1e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Mbps").value(), 125000.0);  // the slowest link (kMinBandwidth)
  EXPECT_DOUBLE_EQ(parse_bandwidth("1MB/s").value(), 1e6);
}

TEST(CoreUnitParse, BitsAndBytesDiffer) {
  // Lower-case b is bits, upper-case B is bytes: a factor of 8 apart.
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GBps").value() / parse_bandwidth("1Gbps").value(), 8.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GB/s").value() / parse_bandwidth("1Gb/s").value(), 8.0);
}

TEST(CoreUnitParse, Duration) {
  EXPECT_EQ(parse_duration("1.5us").count(), 1500000);
  EXPECT_EQ(parse_duration("1.5\u00b5s").count(), 1500000);
  EXPECT_EQ(parse_duration("700ns").count(), 700000);
  EXPECT_EQ(parse_duration("2ms").count(), 2000000000);
  EXPECT_EQ(parse_duration("1s").count(), 1000000000000);
  EXPECT_EQ(parse_duration("20ps").count(), 20);
  EXPECT_EQ(parse_duration("0s").count(), 0);
  // A day: 86,400 s = 8.64e16 ps, well inside the clock's range.
  EXPECT_EQ(parse_duration("3600s").count(), 3600000000000000);  // the longest input duration
}

TEST(CoreUnitParse, FlopRateAndFlops) {
  EXPECT_DOUBLE_EQ(parse_flop_rate("989TFLOP/s").value(), 9.89e14);
  EXPECT_DOUBLE_EQ(parse_flop_rate("19.5TFLOPS").value(), 1.95e13);
  EXPECT_DOUBLE_EQ(parse_flop_rate("2PFLOP/s").value(), 2e15);
  EXPECT_DOUBLE_EQ(parse_flop_rate("500GFLOPS").value(), 5e11);
  EXPECT_DOUBLE_EQ(parse_flops("3.2PFLOP").value(), 3.2e15);
  EXPECT_DOUBLE_EQ(parse_flops("1e18FLOP").value(), 1e18);
  EXPECT_DOUBLE_EQ(parse_flops("2EFLOP").value(), 2e18);
  EXPECT_DOUBLE_EQ(parse_flops("0FLOP").value(), 0.0);
}

TEST(CoreUnitParse, WhitespaceAroundNumberAndUnit) {
  EXPECT_EQ(parse_bytes(" 1.5 GiB ").value(), 1610612736);
  EXPECT_EQ(parse_duration("1.5 us").count(), 1500000);
  EXPECT_EQ(parse_duration("\t2\tms\n").count(), 2000000000);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gbps").value(), 5e10);
}

TEST(CoreUnitParse, ExactMessage) {
  try {
    parse_bandwidth("400");
    FAIL() << "a bare number was accepted";
  } catch (const UnitParseError& e) {
    EXPECT_STREQ(e.what(), "expected a bandwidth such as \"400Gbps\"; got \"400\" (a number needs a unit)");
  }
}

TEST(CoreUnitParse, BareNumbersAreRejected) {
  expect_rejected(parse_bytes, "400", "a number needs a unit");
  expect_rejected(parse_bandwidth, "400", "a number needs a unit");
  expect_rejected(parse_duration, "1.5", "a number needs a unit");
  expect_rejected(parse_flop_rate, "989", "a number needs a unit");
  expect_rejected(parse_flops, "1e18", "a number needs a unit");
  expect_rejected(parse_bytes, "  8  ", "a number needs a unit");
}

TEST(CoreUnitParse, MissingNumberIsRejected) {
  expect_rejected(parse_bytes, "", "no number");
  expect_rejected(parse_bytes, "GiB", "no number");
  expect_rejected(parse_bandwidth, "fast", "no number");
  expect_rejected(parse_duration, "   ", "no number");
}

TEST(CoreUnitParse, NegativeValuesAreRejected) {
  expect_rejected(parse_bytes, "-1GB", "negative");
  expect_rejected(parse_bandwidth, "-400Gbps", "negative");
  expect_rejected(parse_duration, "-1us", "negative");
  expect_rejected(parse_flop_rate, "-1TFLOP/s", "negative");
  expect_rejected(parse_flops, "-1FLOP", "negative");
  expect_rejected(parse_duration, " -0s", "negative");
}

TEST(CoreUnitParse, ZeroRatesAreRejected) {
  expect_rejected(parse_bandwidth, "0Gbps", "positive");
  expect_rejected(parse_bandwidth, "0B/s", "positive");
  expect_rejected(parse_flop_rate, "0TFLOP/s", "positive");
}

TEST(CoreUnitParse, UnknownUnitsAreRejected) {
  expect_rejected(parse_bytes, "12 parsecs", "unknown unit \"parsecs\"");
  expect_rejected(parse_bytes, "1gb", "unknown unit");       // units are case-sensitive
  expect_rejected(parse_bytes, "1GB/s", "unknown unit");     // a bandwidth is not a size
  expect_rejected(parse_bandwidth, "50GB", "unknown unit");  // a size is not a bandwidth
  expect_rejected(parse_bandwidth, "1gbps", "unknown unit");
  expect_rejected(parse_duration, "1min", "unknown unit");
  expect_rejected(parse_duration, "1 u s", "unknown unit");
  expect_rejected(parse_flop_rate, "989TFLOP", "unknown unit");  // a count is not a rate
  expect_rejected(parse_flops, "989TFLOP/s", "unknown unit");    // a rate is not a count
  expect_rejected(parse_bytes, "1GB extra", "unknown unit");
}

TEST(CoreUnitParse, NonWholeBytesAreRejected) {
  expect_rejected(parse_bytes, "1.5B", "whole number of bytes");
  expect_rejected(parse_bytes, "0.1KiB", "whole number of bytes");  // 102.4 B
  expect_rejected(parse_bytes, "1.0001kB", "whole number of bytes");  // 1000.1 B
}

TEST(CoreUnitParse, InfinityAndNanAreRejected) {
  expect_rejected(parse_bytes, "infGB", "not a finite number");
  expect_rejected(parse_bandwidth, "inf Gbps", "not a finite number");
  expect_rejected(parse_duration, "nan s", "not a finite number");
  expect_rejected(parse_flop_rate, "NaNTFLOP/s", "not a finite number");
  expect_rejected(parse_flops, "infinityFLOP", "not a finite number");
  expect_rejected(parse_bytes, "inf");
}

TEST(CoreUnitParse, HugeValuesAreRejected) {
  expect_rejected(parse_bytes, "1.1PiB", "out of range");   // docs/cli.md, "Limits"
  expect_rejected(parse_bytes, "8000PiB", "out of range");
  expect_rejected(parse_bandwidth, "1bps", "out of range");
  expect_rejected(parse_bandwidth, "1e-300bps", "out of range");
  expect_rejected(parse_bandwidth, "9Pbps", "unknown unit");
  expect_rejected(parse_bandwidth, "2PB/s", "unknown unit");
  expect_rejected(parse_bandwidth, "2000TB/s", "out of range");
  expect_rejected(parse_duration, "3601s", "out of range");
  expect_rejected(parse_duration, "1e5s", "out of range");
  expect_rejected(parse_bytes, "1e-7B", "whole number");
  expect_rejected(parse_bytes, "0.4B", "whole number");
  expect_rejected(parse_bytes, "1e19B", "out of range");     // > int64 max, 9.2e18
  expect_rejected(parse_bytes, "10000PB", "out of range");   // 1e19 B
  expect_rejected(parse_bytes, "1e300PB", "out of range");   // overflows to infinity
  expect_rejected(parse_bytes, "1e400B");                    // not even a double
  expect_rejected(parse_duration, "1e7s", "out of range");   // 1e19 ps > int64 max
  expect_rejected(parse_duration, "200days");
  expect_rejected(parse_bandwidth, "1e308TB/s", "out of range");
  expect_rejected(parse_flops, "1e300EFLOP", "out of range");
  expect_rejected(parse_flop_rate, "1e300PFLOP/s", "out of range");
}

}  // namespace
}  // namespace cs
