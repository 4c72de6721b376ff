// Strong unit types and the cross-unit functions of core/units.h. Every expected value is
// derived in a comment; the rounding rule under test is "a duration computed from a rate is
// rounded up to the next whole picosecond; exact results stay exact".
#include "core/units.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs {
namespace {

// ---- same-dimension arithmetic ----------------------------------------------------------------

TEST(CoreUnits, TimeArithmetic) {
  const SimTime t0 = kTimeZero + nanoseconds(5);
  const SimTime t1 = t0 + microseconds(2);
  // 2 us = 2,000,000 ps; 5 ns = 5,000 ps.
  EXPECT_EQ((t1 - t0).count(), 2000000);
  EXPECT_EQ(t1.time_since_epoch().count(), 2005000);
  static_assert(std::is_same_v<decltype(t1 - t0), Duration>);
  static_assert(std::is_same_v<decltype(t0 + picoseconds(1)), SimTime>);
  EXPECT_DOUBLE_EQ(to_seconds(microseconds(3)), 3e-6);
  EXPECT_DOUBLE_EQ(to_seconds(kTimeZero + nanoseconds(1)), 1e-9);
  EXPECT_GT(kTimeNever, kTimeZero + Duration{std::int64_t{1} << 62});
}

TEST(CoreUnits, QuantityArithmetic) {
  EXPECT_EQ(bytes(3) + bytes(4), bytes(7));
  EXPECT_EQ(bytes(10) - bytes(4), bytes(6));
  EXPECT_EQ(bytes(3) * 4, bytes(12));
  EXPECT_EQ(4 * bytes(3), bytes(12));
  EXPECT_EQ(bytes(12) / 4, bytes(3));
  Bytes b = bytes(1);
  b += bytes(2);
  b -= bytes(1);
  EXPECT_EQ(b, bytes(2));
  EXPECT_LT(bytes(1), bytes(2));
  // The ratio of two quantities of one dimension is a plain number.
  static_assert(std::is_same_v<decltype(bytes(1) / bytes(2)), double>);
  EXPECT_DOUBLE_EQ(bytes(1) / bytes(4), 0.25);
  EXPECT_DOUBLE_EQ(flops(3e12) / flops(1e12), 3.0);
}

TEST(CoreUnits, Constructors) {
  EXPECT_EQ(kibibytes(1).value(), 1024);
  EXPECT_EQ(mebibytes(1).value(), 1048576);
  EXPECT_EQ(gibibytes(80).value(), 85899345920);  // 80 * 2^30, beyond 32 bits
  EXPECT_EQ(nanoseconds(1).count(), 1000);
  EXPECT_EQ(microseconds(1).count(), 1000000);
  // 400 Gb/s = 400e9 / 8 B/s = 5e10 B/s.
  EXPECT_DOUBLE_EQ(gigabits_per_second(400).value(), 5e10);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(50).value(), 5e10);
  EXPECT_DOUBLE_EQ(teraflops_per_second(989).value(), 9.89e14);
}

TEST(CoreUnits, ScaleRoundsBytesToNearest) {
  EXPECT_EQ(scale(bytes(1000), 0.5), bytes(500));
  // 10 * 0.25 = 2.5 rounds half away from zero to 3; 10 * 0.24 = 2.4 rounds to 2.
  EXPECT_EQ(scale(bytes(10), 0.25), bytes(3));
  EXPECT_EQ(scale(bytes(10), 0.24), bytes(2));
  EXPECT_EQ(scale(gibibytes(4), 1.5), gibibytes(6));
  EXPECT_DOUBLE_EQ(scale(Bandwidth{1e9}, 0.8).value(), 8e8);
}

TEST(CoreUnits, DurationFromSecondsRoundsToNearest) {
  EXPECT_EQ(duration_from_seconds(1.5e-6).count(), 1500000);
  EXPECT_EQ(duration_from_seconds(2.4e-12).count(), 2);
  EXPECT_EQ(duration_from_seconds(2.6e-12).count(), 3);
  EXPECT_EQ(duration_from_seconds(0).count(), 0);
  EXPECT_THROW(duration_from_seconds(1e7), RangeError);  // 1e19 ps > int64 max (9.2e18)
  EXPECT_THROW(duration_from_seconds(1.2e6), RangeError);  // beyond kMaxDuration (2^60 ps, 13.3 days)
  EXPECT_EQ(duration_from_seconds(1.1e6).count(), 1100000000000000000);
}

// ---- cross-unit functions ---------------------------------------------------------------------

TEST(CoreUnits, TransferTimeRoundsUpToNextPicosecond) {
  // 1 B at 3 B/s = 1/3 s = 333,333,333,333.33... ps, rounded up to ...334.
  EXPECT_EQ(transfer_time(bytes(1), Bandwidth{3}).count(), 333333333334);
  // 2 B at 3 B/s = 666,666,666,666.67 ps -> ...667.
  EXPECT_EQ(transfer_time(bytes(2), Bandwidth{3}).count(), 666666666667);
  // 1 B at 7 GB/s = 142.857... ps -> 143.
  EXPECT_EQ(transfer_time(bytes(1), gigabytes_per_second(7)).count(), 143);
}

TEST(CoreUnits, TransferTimeExactCasesStayExact) {
  // 1 GiB at 1 GiB/s = 1 s = 10^12 ps exactly (no spurious +1 from the ceiling).
  EXPECT_EQ(transfer_time(gibibytes(1), Bandwidth{0x1p30}).count(), 1000000000000);
  // 1 B at 400 Gb/s = 1 / 5e10 s = 20 ps (STYLE.md's example).
  EXPECT_EQ(transfer_time(bytes(1), gigabits_per_second(400)).count(), 20);
  // 1 MB at 50 GB/s = 1e6 / 5e10 s = 20 us = 2e7 ps.
  EXPECT_EQ(transfer_time(bytes(1000000), gigabytes_per_second(50)).count(), 20000000);
  // 3 B at 3 B/s = 1 s.
  EXPECT_EQ(transfer_time(bytes(3), Bandwidth{3}).count(), 1000000000000);
  EXPECT_EQ(transfer_time(bytes(0), Bandwidth{1}).count(), 0);
}

TEST(CoreUnits, TransferTimeLargeMessages) {
  // 80 GiB at 50 GB/s = 85,899,345,920 / 5e10 s = 1.7179869184 s = 1,717,986,918,400 ps exactly.
  EXPECT_EQ(transfer_time(gibibytes(80), gigabytes_per_second(50)).count(), 1717986918400);
}

TEST(CoreUnits, TransferTimeRejectsNonPositiveBandwidth) {
  EXPECT_THROW(transfer_time(bytes(1), Bandwidth{0}), InternalError);
  EXPECT_THROW(transfer_time(bytes(1), Bandwidth{-1}), InternalError);
  EXPECT_THROW(transfer_time(bytes(1), Bandwidth{std::nan("")}), InternalError);
  // 1e18 B at 1 B/s = 1e18 s: beyond the +-106 days of the clock, an input error (exit 2).
  EXPECT_THROW(transfer_time(bytes(1000000000000000000), Bandwidth{1}), RangeError);
  // 1 PiB at 1 Mbit/s (the extremes the parsers accept) is still refused, not wrapped around.
  EXPECT_THROW(transfer_time(bytes(std::int64_t{1} << 50), Bandwidth{125000}), RangeError);
  EXPECT_THROW(compute_time(flops(1e30), FlopRate{1e6}), RangeError);
}

TEST(CoreUnits, ComputeTimeRoundsUpAndStaysExact) {
  // 989 TFLOP at 989 TFLOP/s = 1 s exactly.
  EXPECT_EQ(compute_time(flops(9.89e14), teraflops_per_second(989)).count(), 1000000000000);
  // 1 FLOP at 3 FLOP/s = 1/3 s -> rounded up to 333,333,333,334 ps.
  EXPECT_EQ(compute_time(flops(1), FlopRate{3}).count(), 333333333334);
  // 2e12 FLOP at 1e15 FLOP/s = 2 ms = 2e9 ps.
  EXPECT_EQ(compute_time(flops(2e12), FlopRate{1e15}).count(), 2000000000);
  EXPECT_EQ(compute_time(flops(0), FlopRate{1}).count(), 0);
  EXPECT_THROW(compute_time(flops(1), FlopRate{0}), InternalError);
  EXPECT_THROW(compute_time(flops(1), FlopRate{-5}), InternalError);
}

TEST(CoreUnits, AverageRate) {
  // 1 GiB over 1 s = 2^30 B/s; 1 MB over 20 us = 5e10 B/s.
  EXPECT_DOUBLE_EQ(average_rate(gibibytes(1), picoseconds(1000000000000)).value(), 0x1p30);
  EXPECT_DOUBLE_EQ(average_rate(bytes(1000000), microseconds(20)).value(), 5e10);
  // 1.5e12 FLOP over 1 ms = 1.5e15 FLOP/s.
  EXPECT_DOUBLE_EQ(average_rate(flops(1.5e12), microseconds(1000)).value(), 1.5e15);
}

TEST(CoreUnits, TransferTimeIsNeverEarlyAndLateByUnderOnePicosecond) {
  const Bandwidth bw = gigabytes_per_second(7);
  for (std::int64_t n : {1, 7, 1000, 123457, 1 << 30}) {
    const double exact_ps = static_cast<double>(n) / bw.value() * 1e12;
    const auto d = static_cast<double>(transfer_time(bytes(n), bw).count());
    EXPECT_GE(d, exact_ps - 1e-6) << n;  // 1e-6: the double noise of exact results
    EXPECT_LT(d, exact_ps + 1) << n;
  }
}

// ---- text for people ----------------------------------------------------------------------

TEST(CoreUnits, FormatBytes) {
  EXPECT_EQ(format_bytes(bytes(0)), "0 B");
  EXPECT_EQ(format_bytes(bytes(512)), "512 B");
  EXPECT_EQ(format_bytes(bytes(1023)), "1023 B");
  EXPECT_EQ(format_bytes(bytes(1024)), "1.00 KiB");
  EXPECT_EQ(format_bytes(mebibytes(200)), "200 MiB");
  EXPECT_EQ(format_bytes(mebibytes(1536)), "1.50 GiB");
  EXPECT_EQ(format_bytes(gibibytes(80)), "80.0 GiB");
  EXPECT_EQ(format_bytes(gibibytes(3 * 1024)), "3.00 TiB");
}

TEST(CoreUnits, FormatDuration) {
  EXPECT_EQ(format_duration(Duration{0}), "0 s");
  EXPECT_EQ(format_duration(picoseconds(20)), "20.0 ps");
  EXPECT_EQ(format_duration(picoseconds(999)), "999 ps");
  EXPECT_EQ(format_duration(nanoseconds(1)), "1.00 ns");
  EXPECT_EQ(format_duration(nanoseconds(700)), "700 ns");
  EXPECT_EQ(format_duration(picoseconds(1500000)), "1.50 us");
  EXPECT_EQ(format_duration(microseconds(12300)), "12.3 ms");
  EXPECT_EQ(format_duration(microseconds(2000000)), "2.00 s");
}

TEST(CoreUnits, FormatBandwidth) {
  EXPECT_EQ(format_bandwidth(gigabytes_per_second(50)), "50.0 GB/s");
  EXPECT_EQ(format_bandwidth(gigabits_per_second(400)), "50.0 GB/s");
  EXPECT_EQ(format_bandwidth(Bandwidth{1.2e12}), "1.20 TB/s");
  EXPECT_EQ(format_bandwidth(Bandwidth{1e6}), "1.00 MB/s");
  EXPECT_EQ(format_bandwidth(Bandwidth{500}), "0.50 kB/s");
}

TEST(CoreUnits, FormatFlopRate) {
  EXPECT_EQ(format_flop_rate(teraflops_per_second(989)), "989 TFLOP/s");
  EXPECT_EQ(format_flop_rate(teraflops_per_second(19.5)), "19.5 TFLOP/s");
  EXPECT_EQ(format_flop_rate(FlopRate{1.979e15}), "1.98 PFLOP/s");
  EXPECT_EQ(format_flop_rate(FlopRate{5e9}), "5.00 GFLOP/s");
}

}  // namespace
}  // namespace cs
