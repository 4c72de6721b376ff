// Strong unit types checked by the compiler.
//
//   Duration   a length of simulated time: integer picoseconds (std::chrono, ±106 days of range).
//   SimTime    a point on the simulated clock. SimTime + Duration -> SimTime,
//              SimTime - SimTime -> Duration, SimTime + SimTime does not compile.
//   Bytes      64-bit integer byte count (messages over 2 GiB are normal).
//   Bandwidth  bytes per second (double).
//   Flops      floating-point operations (double: 10^18 and more is normal).
//   FlopRate   FLOP per second (double).
//
// Quantities of one dimension add, subtract and compare; they scale by a plain number; the
// ratio of two of them is a plain number. Anything that crosses dimensions is a named function
// at the end of this file, with one rounding rule: a duration computed from a rate is rounded
// up to the next whole picosecond, so a transfer or a kernel never finishes early.
#pragma once

#include <chrono>
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace cs {

// ---- time -----------------------------------------------------------------------------------
using Duration = std::chrono::duration<std::int64_t, std::pico>;

struct SimClock {
  using rep = std::int64_t;
  using period = std::pico;
  using duration = Duration;
  using time_point = std::chrono::time_point<SimClock, Duration>;
  static constexpr bool is_steady = true;
};
using SimTime = SimClock::time_point;

inline constexpr SimTime kTimeZero{Duration{0}};
inline constexpr SimTime kTimeNever{Duration{std::numeric_limits<std::int64_t>::max()}};

// Overflow guard (docs/cli.md, "Limits"). Any one duration computed from the input (a transfer, a
// kernel, a parsed value) is at most kMaxDuration (2^60 ps, 13.3 days), and the engine refuses an
// event past kTimeHorizon (2^62 ps, 53.4 days): so `now + d` and the sum of a few such durations
// stay inside the 64-bit clock (2^63 ps) without a check on every addition. Exceeding either is a
// RangeError (exit 2).
inline constexpr Duration kMaxDuration{std::int64_t{1} << 60};
inline constexpr SimTime kTimeHorizon{Duration{std::int64_t{1} << 62}};
// t + d, or a RangeError past kTimeHorizon.
SimTime checked_add(SimTime t, Duration d);

constexpr Duration picoseconds(std::int64_t ps) { return Duration{ps}; }
constexpr Duration nanoseconds(std::int64_t ns) { return Duration{ns * 1000}; }
constexpr Duration microseconds(std::int64_t us) { return Duration{us * 1000000}; }

// Seconds as a double, for people and for output files.
constexpr double to_seconds(Duration d) { return static_cast<double>(d.count()) * 1e-12; }
constexpr double to_seconds(SimTime t) { return to_seconds(t.time_since_epoch()); }
// A duration from seconds, rounded to the nearest picosecond (used for parsed values only); a
// RangeError beyond kMaxDuration.
Duration duration_from_seconds(double seconds);

// ---- quantities -----------------------------------------------------------------------------
template <class Tag, class Rep>
class Quantity {
 public:
  using rep = Rep;
  constexpr Quantity() = default;
  constexpr explicit Quantity(Rep v) : v_(v) {}
  // An integer quantity (Bytes) never takes a real number silently: use scale() to round.
  template <class T>
    requires(std::is_floating_point_v<T> && std::is_integral_v<Rep>)
  Quantity(T) = delete;
  constexpr Rep value() const { return v_; }

  constexpr Quantity& operator+=(Quantity o) { v_ += o.v_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v_ -= o.v_; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity{a.v_ + b.v_}; }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity{a.v_ - b.v_}; }
  friend constexpr Quantity operator*(Quantity a, Rep k) { return Quantity{a.v_ * k}; }
  friend constexpr Quantity operator*(Rep k, Quantity a) { return Quantity{a.v_ * k}; }
  friend constexpr Quantity operator/(Quantity a, Rep k) { return Quantity{a.v_ / k}; }
  template <class T>
    requires(std::is_floating_point_v<T> && std::is_integral_v<Rep>)
  friend Quantity operator*(Quantity, T) = delete;
  template <class T>
    requires(std::is_floating_point_v<T> && std::is_integral_v<Rep>)
  friend Quantity operator*(T, Quantity) = delete;
  // The ratio of two quantities of one dimension is a plain number.
  friend constexpr double operator/(Quantity a, Quantity b) {
    return static_cast<double>(a.v_) / static_cast<double>(b.v_);
  }
  friend constexpr auto operator<=>(Quantity, Quantity) = default;
  friend constexpr bool operator==(Quantity, Quantity) = default;

 private:
  Rep v_{};
};

struct BytesTag {};
struct BandwidthTag {};
struct FlopsTag {};
struct FlopRateTag {};
struct PowerTag {};
struct EnergyTag {};
struct MoneyTag {};

using Bytes = Quantity<BytesTag, std::int64_t>;
using Bandwidth = Quantity<BandwidthTag, double>;  // bytes per second
using Flops = Quantity<FlopsTag, double>;
using FlopRate = Quantity<FlopRateTag, double>;  // FLOP per second
using Power = Quantity<PowerTag, double>;        // watts
using Energy = Quantity<EnergyTag, double>;      // joules
using Money = Quantity<MoneyTag, double>;        // US dollars (prices as published, not inflation-adjusted)

constexpr Bytes bytes(std::int64_t n) { return Bytes{n}; }
constexpr Bytes kibibytes(std::int64_t n) { return Bytes{n << 10}; }
constexpr Bytes mebibytes(std::int64_t n) { return Bytes{n << 20}; }
constexpr Bytes gibibytes(std::int64_t n) { return Bytes{n << 30}; }
constexpr Bandwidth bytes_per_second(double v) { return Bandwidth{v}; }
constexpr Bandwidth gigabytes_per_second(double v) { return Bandwidth{v * 1e9}; }
constexpr Bandwidth gigabits_per_second(double v) { return Bandwidth{v * 1e9 / 8.0}; }
constexpr Flops flops(double v) { return Flops{v}; }
constexpr FlopRate teraflops_per_second(double v) { return FlopRate{v * 1e12}; }
constexpr Power watts(double v) { return Power{v}; }
constexpr Power kilowatts(double v) { return Power{v * 1e3}; }
constexpr Energy joules(double v) { return Energy{v}; }
constexpr Energy kilowatt_hours(double v) { return Energy{v * 3.6e6}; }
constexpr Money dollars(double v) { return Money{v}; }
constexpr double to_kilowatt_hours(Energy e) { return e.value() / 3.6e6; }

// A byte count scaled by a real factor, rounded to the nearest byte.
Bytes scale(Bytes b, double factor);
// A bandwidth scaled by a plain efficiency factor.
constexpr Bandwidth scale(Bandwidth b, double factor) { return Bandwidth{b.value() * factor}; }

// ---- cross-unit functions (the only place dimensions meet) ----------------------------------
// Time to move `b` at rate `bw`, rounded up to the next picosecond. bw must be positive.
Duration transfer_time(Bytes b, Bandwidth bw);
// The same rule for a fractional byte count (fluid models track remaining bytes as a real).
Duration drain_time(double bytes, Bandwidth bw);
// Time to execute `f` at rate `r`, rounded up to the next picosecond. r must be positive.
Duration compute_time(Flops f, FlopRate r);
// Average rate of `b` over `d` (d > 0).
Bandwidth average_rate(Bytes b, Duration d);
// Average FLOP rate of `f` over `d` (d > 0).
FlopRate average_rate(Flops f, Duration d);
// Energy of a constant power `p` drawn for `d`.
constexpr Energy energy_over(Power p, Duration d) { return Energy{p.value() * to_seconds(d)}; }
// The same for a duration in seconds that may exceed kMaxDuration (years of operation).
constexpr Energy energy_over_seconds(Power p, double seconds) { return Energy{p.value() * seconds}; }
// Average power of `e` over `d` (d > 0).
constexpr Power average_power(Energy e, Duration d) { return Power{e.value() / to_seconds(d)}; }

// ---- text for people ------------------------------------------------------------------------
std::string format_bytes(Bytes b);          // "1.50 GiB", "512 B"
std::string format_duration(Duration d);    // "1.50 us", "12.3 ms"
std::string format_bandwidth(Bandwidth bw); // "50.0 GB/s"
std::string format_flop_rate(FlopRate r);   // "989 TFLOP/s"

}  // namespace cs
