#include "drivers/request_stream.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/errors.h"
#include "core/limits.h"
#include "core/random.h"

namespace cs::drv {
namespace {

// Gamma with shape k and scale 1 (Marsaglia and Tsang; k < 1 boosted by U^(1/k)).
double gamma(Rng& rng, double k) {
  if (k < 1) return gamma(rng, k + 1) * std::pow(1.0 - rng.uniform(), 1.0 / k);
  const double d = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = draw_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

std::int64_t draw_length(const LengthDistribution& d, Rng& rng) {
  switch (d.kind) {
    case LengthDistribution::Kind::kConstant:
      return d.constant;
    case LengthDistribution::Kind::kUniform:
      return d.lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(d.hi - d.lo + 1)));
    case LengthDistribution::Kind::kLognormal: {
      const double v = std::round(d.median * std::exp(d.sigma * draw_normal(rng)));
      return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(v, 1e15)), 1, d.max);
    }
  }
  return d.constant;
}

// Days from 1970-01-01 of a civil date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

// A timestamp: whole seconds since 1970 and the picoseconds past them.
struct Timestamp {
  std::int64_t seconds = -1;
  std::int64_t picoseconds = 0;
};

// "YYYY-MM-DD HH:MM:SS[.fffffff]", or seconds -1.
Timestamp parse_timestamp(std::string_view s) {
  const Timestamp bad;
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') return bad;
  std::int64_t y, mo, d, h, mi, se;
  if (!parse_int(s.substr(0, 4), y) || !parse_int(s.substr(5, 2), mo) || !parse_int(s.substr(8, 2), d) ||
      !parse_int(s.substr(11, 2), h) || !parse_int(s.substr(14, 2), mi) || !parse_int(s.substr(17, 2), se))
    return bad;
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60) return bad;
  Timestamp t;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20 || s.size() > 32) return bad;
    std::int64_t scale = 100000000000;  // first fractional digit in ps
    for (char c : s.substr(20)) {
      if (c < '0' || c > '9') return bad;
      t.picoseconds += (c - '0') * scale;
      scale /= 10;
    }
  }
  t.seconds = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + se;
  if (t.seconds < 0) return bad;
  return t;
}

}  // namespace

std::vector<ServingRequest> read_azure_trace(const std::string& path, double time_scale, std::int64_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot read the trace file");
  const auto fail = [&](std::int64_t line, const std::string& msg) -> void {
    throw InputError(path, "line " + std::to_string(line), msg);
  };
  std::string text;
  std::int64_t line = 0;
  std::vector<ServingRequest> out;
  Timestamp first, previous;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (line == 1) {
      if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
      if (text != "TIMESTAMP,ContextTokens,GeneratedTokens")
        fail(1, "expected the header \"TIMESTAMP,ContextTokens,GeneratedTokens\" (the Azure LLM inference trace format)");
      continue;
    }
    if (text.empty()) continue;
    const std::size_t a = text.find(','), b = a == std::string::npos ? a : text.find(',', a + 1);
    if (b == std::string::npos || text.find(',', b + 1) != std::string::npos) fail(line, "expected three comma-separated fields");
    const Timestamp ts = parse_timestamp(std::string_view(text).substr(0, a));
    if (ts.seconds < 0) fail(line, "expected a timestamp \"YYYY-MM-DD HH:MM:SS.fraction\"");
    std::int64_t prompt = 0, output = 0;
    if (!parse_int(std::string_view(text).substr(a + 1, b - a - 1), prompt) || prompt < 1 || prompt > (1 << 24))
      fail(line, "expected ContextTokens from 1 to 16777216");
    if (!parse_int(std::string_view(text).substr(b + 1), output) || output < 0 || output > (1 << 24))
      fail(line, "expected GeneratedTokens from 0 to 16777216");
    if (previous.seconds >= 0 && std::pair(ts.seconds, ts.picoseconds) < std::pair(previous.seconds, previous.picoseconds)) {
      fail(line, "timestamps go back in time");
    }
    previous = ts;
    if (first.seconds < 0) first = ts;
    // Relative to the first row, in seconds then picoseconds (a date's picoseconds since 1970
    // would overflow 64 bits).
    const double rel = (static_cast<double>(ts.seconds - first.seconds) * 1e12 +
                        static_cast<double>(ts.picoseconds - first.picoseconds)) * time_scale;
    if (rel > static_cast<double>(kMaxDuration.count())) fail(line, "the trace lasts longer than the simulated clock's range after time scaling");
    ServingRequest r;
    r.id = static_cast<std::int64_t>(out.size());
    r.arrival = kTimeZero + Duration{static_cast<std::int64_t>(std::llround(rel))};
    r.prompt = prompt;
    r.output = output;
    r.session = static_cast<std::uint64_t>(r.id);
    if (static_cast<std::int64_t>(out.size()) >= limits().requests) {
      fail(line, "more requests than the limit of " + std::to_string(limits().requests) + "; " + limit_hint("requests") +
                     " (or read fewer with \"limit\")");
    }
    out.push_back(r);
    if (limit > 0 && static_cast<std::int64_t>(out.size()) >= limit) break;
  }
  if (out.empty()) throw InputError(path, "", "the trace has no requests");
  return out;
}

std::vector<ServingRequest> make_requests(const RequestStreamSpec& spec) {
  if (!spec.trace.empty()) return read_azure_trace(spec.trace, spec.time_scale, spec.limit);
  std::vector<ServingRequest> out;
  out.reserve(static_cast<std::size_t>(spec.count));
  Rng arrivals = Rng::derive(spec.seed, 1), lengths = Rng::derive(spec.seed, 2), sessions = Rng::derive(spec.seed, 3);
  const double shape = 1.0 / (spec.cv * spec.cv);
  double t = 0;
  for (std::int64_t i = 0; i < spec.count; ++i) {
    const double gap = spec.arrival == ArrivalProcess::kPoisson ? draw_exponential(arrivals) / spec.rate
                                                                 : gamma(arrivals, shape) / (shape * spec.rate);
    t += gap;
    ServingRequest r;
    r.id = i;
    r.arrival = kTimeZero + duration_from_seconds(t);
    r.prompt = draw_length(spec.prompt, lengths);
    r.output = draw_length(spec.output, lengths);
    r.session = spec.sessions > 0 ? sessions.below(static_cast<std::uint64_t>(spec.sessions)) : static_cast<std::uint64_t>(i);
    out.push_back(r);
  }
  return out;
}

}  // namespace cs::drv
