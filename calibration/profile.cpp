// The values a profile derives from its measurements (spread, rates, bandwidths, slowdown, the
// bus factor) and its timestamps. Reading and writing the file: calibration/profile_io.cpp.
#include "calibration/profile.h"

#include <ctime>

#include <cstddef>
#include <string>

#include "core/collective_kind.h"

namespace cs::cal {

// ---- derived values ------------------------------------------------------------------------

double Timing::spread() const {
  if (median.count() == 0) return 0;
  return static_cast<double>((p90 - p10).count()) / static_cast<double>(median.count());
}

namespace {
bool timed(const PointBase& p) {
  return p.status == PointStatus::kOk && p.timing && p.timing->median.count() > 0;
}
}  // namespace

FlopRate GemmPoint::rate() const {
  if (!timed(*this)) return FlopRate{0};
  return average_rate(shape.flops(), timing->median);
}

Bandwidth MemoryPoint::bandwidth() const {
  if (!timed(*this)) return Bandwidth{0};
  return average_rate(bytes, timing->median);
}

Bandwidth LinkPoint::bandwidth() const {
  if (!timed(*this)) return Bandwidth{0};
  return average_rate(bytes, timing->median);
}

double OverlapPoint::slowdown() const {
  if (alone.count() <= 0) return 0;
  return static_cast<double>(beside.count()) / static_cast<double>(alone.count());
}

Bandwidth CollectivePoint::algbw() const {
  if (!timed(*this)) return Bandwidth{0};
  return average_rate(bytes, timing->median);
}

Bandwidth CollectivePoint::busbw() const { return scale(algbw(), bus_factor(op, ranks)); }

double bus_factor(const std::string& op, int ranks) {
  const auto kind = parse_collective_op(op);
  if (ranks < 1) return 0;
  return kind ? busbw_factor(*kind, static_cast<std::size_t>(ranks)) : 1.0;
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cs::cal
