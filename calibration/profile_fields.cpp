// The codecs of the profile's scalar values (calibration/profile_fields.h).
//
// Durations are written as seconds: d.count() / 1e12 is the double nearest the exact value,
// nlohmann writes doubles so that they read back to the same double, and the reader rounds
// seconds x 1e12 to the nearest picosecond, so any duration below 2^51 ps (about 37 minutes) comes
// back exactly; kMaxProfileSeconds keeps every value of a profile below 2^50 ps.
#include "calibration/profile_fields.h"

#include <cmath>

#include "calibration/profile.h"
#include "core/errors.h"

namespace cs::cal::fields {

namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

// [low, high]: two numbers, 0 <= low <= high.
std::pair<double, double> read_interval(const ConfigNode& n) {
  if (!n.is_array() || n.size() != 2) n.fail_expected("an interval [low, high]");
  const double lo = n.at(std::size_t{0}).as_number(), hi = n.at(std::size_t{1}).as_number();
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo < 0 || hi < lo) {
    n.fail_expected("an interval [low, high] with 0 <= low <= high");
  }
  return {lo, hi};
}

}  // namespace

double finite(double v) {
  if (!std::isfinite(v)) throw InternalError("calibration profile: a non-finite number to write");
  return v;
}

Duration Seconds::read(const ConfigNode& n) {
  const double s = n.as_number();
  if (!std::isfinite(s) || s < 0) n.fail_expected("a time in seconds >= 0");
  if (s > kMaxProfileSeconds) n.fail_expected("a time in seconds up to 1000");
  return duration_from_seconds(s);
}

// The double nearest d in seconds (one correctly rounded division; see the file comment).
Json Seconds::write(Duration d) { return static_cast<double>(d.count()) / 1e12; }

std::int64_t Extent::read(const ConfigNode& n) { return n.as_int(1, std::int64_t{1} << 31); }

double Efficiency::read(const ConfigNode& n) {
  const double v = n.as_number();
  if (!(v >= 0.01 && v <= 1)) n.fail_expected("a link efficiency from 0.01 to 1");
  return v;
}

double Slowdown::read(const ConfigNode& n) {
  const double v = n.as_number();
  if (!(v >= 1 && v <= 10)) n.fail_expected("a slowdown factor from 1 to 10");
  return v;
}

Bytes ByteCount::read(const ConfigNode& n) { return Bytes{n.as_int(0, kMaxInt)}; }

double NonNegative::read(const ConfigNode& n) {
  const double v = n.as_number();
  if (!std::isfinite(v) || v < 0) n.fail_expected("a number >= 0");
  return v;
}

SecondsInterval::Value SecondsInterval::read(const ConfigNode& n) {
  const auto [lo, hi] = read_interval(n);
  if (lo > kMaxProfileSeconds || hi > kMaxProfileSeconds) n.fail_expected("times in seconds up to 1000");
  return {duration_from_seconds(lo), duration_from_seconds(hi)};
}

Json SecondsInterval::write(const Value& v) {
  return Json::array({Seconds::write(v.first), Seconds::write(v.second)});
}

NonNegativeInterval::Value NonNegativeInterval::read(const ConfigNode& n) { return read_interval(n); }

Json NonNegativeInterval::write(const Value& v) { return Json::array({finite(v.first), finite(v.second)}); }

std::string NonEmptyText::read(const ConfigNode& n) {
  std::string s = n.as_string();
  if (s.empty()) n.fail_expected("a non-empty string");
  return s;
}

Json FreeObject::read(const ConfigNode& n) {
  if (!n.is_object()) n.fail_expected("an object");
  return n.json();
}

TextMap::Value TextMap::read(const ConfigNode& n) {
  Value out;
  for (const auto& [key, value] : n.members()) out[key] = value.as_string();
  return out;
}

}  // namespace cs::cal::fields
