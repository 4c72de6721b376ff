#include "drivers/job_stream.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "core/errors.h"
#include "core/input_file.h"
#include "core/limits.h"
#include "core/random.h"

namespace cs::drv {
namespace {

double draw(const ValueDistribution& d, Rng& rng) {
  switch (d.kind) {
    case ValueDistribution::Kind::kConstant:
      return d.value;
    case ValueDistribution::Kind::kExponential:
      return d.value * draw_exponential(rng);
    case ValueDistribution::Kind::kLognormal:
      return d.median * std::exp(d.sigma * draw_normal(rng));
    case ValueDistribution::Kind::kChoice: {
      double total = 0;
      for (double w : d.weights) total += w;
      double u = rng.uniform() * total;
      for (std::size_t i = 0; i < d.choices.size(); ++i) {
        if (u < d.weights[i]) return d.choices[i];
        u -= d.weights[i];
      }
      return d.choices.back();
    }
  }
  return d.value;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

class CsvReader {
 public:
  CsvReader(std::string path, std::string text) : path_(std::move(path)), in_(std::move(text)) {}

  // The header's columns; `required` must all be there.
  void header(std::initializer_list<const char*> required) {
    std::string text;
    if (!std::getline(in_, text)) fail("the file is empty (expected a header line)");
    ++line_;
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const auto names = split(text);
    for (std::size_t i = 0; i < names.size(); ++i) columns_.emplace(std::string(names[i]), i);
    for (const char* r : required) {
      if (!columns_.count(r)) fail(std::string("the header has no column \"") + r + "\"");
    }
    width_ = names.size();
  }
  bool has_column(const char* name) const { return columns_.count(name) > 0; }
  // The next non-empty row; false at the end.
  bool next() {
    while (std::getline(in_, row_)) {
      ++line_;
      if (!row_.empty() && row_.back() == '\r') row_.pop_back();
      if (row_.empty()) continue;
      fields_ = split(row_);
      if (fields_.size() != width_) fail("expected " + std::to_string(width_) + " fields, got " + std::to_string(fields_.size()));
      return true;
    }
    return false;
  }
  std::string_view field(const char* name) const {
    auto it = columns_.find(name);
    return it == columns_.end() ? std::string_view{} : fields_[it->second];
  }
  std::int64_t integer(const char* name, std::int64_t lo, std::int64_t hi) const {
    const std::string_view f = field(name);
    std::int64_t v = 0;
    const auto r = std::from_chars(f.data(), f.data() + f.size(), v);
    if (f.empty() || r.ec != std::errc{} || r.ptr != f.data() + f.size() || v < lo || v > hi) {
      fail(std::string("column \"") + name + "\": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
           ", got \"" + std::string(f) + "\"");
    }
    return v;
  }
  double number(const char* name, double lo, double hi) const {
    const std::string_view f = field(name);
    double v = 0;
    const auto r = std::from_chars(f.data(), f.data() + f.size(), v);
    if (f.empty() || r.ec != std::errc{} || r.ptr != f.data() + f.size() || !(v >= lo && v <= hi)) {
      fail(std::string("column \"") + name + "\": expected a number from " + format(lo) + " to " + format(hi) + ", got \"" +
           std::string(f) + "\"");
    }
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const { throw InputError(path_, "line " + std::to_string(line_), why); }
  int line() const { return line_; }

 private:
  static std::string format(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  std::string path_;
  std::istringstream in_;
  std::string row_;
  std::vector<std::string_view> fields_;
  std::map<std::string, std::size_t> columns_;
  std::size_t width_ = 0;
  int line_ = 0;
};

constexpr double kMaxSeconds = 3.6e10;  // kMaxLongDuration

int intern(std::vector<std::string>& names, std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  names.emplace_back(name);
  return static_cast<int>(names.size() - 1);
}

void check_count(const CsvReader& r, const JobStream& s) {
  if (static_cast<std::int64_t>(s.jobs.size()) >= limits().jobs) {
    r.fail("more jobs than the limit of " + std::to_string(limits().jobs) + "; " + limit_hint("jobs") + " (or read fewer with \"limit\")");
  }
}

JobStream read_alibaba(const JobStreamSpec& spec) {
  CsvReader r(spec.trace, read_input_file(spec.trace));
  r.header({"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"});
  JobStream s;
  while (r.next()) {
    const std::int64_t gpus = r.integer("num_gpu", 0, 1 << 20);
    if (gpus == 0 || r.field("scheduled_time").empty()) {
      ++s.skipped;
      continue;
    }
    check_count(r, s);
    JobRequest j;
    j.id = static_cast<std::int64_t>(s.jobs.size());
    j.name = std::string(r.field("name"));
    j.gpus = static_cast<int>(gpus);
    j.gpu_milli = gpus == 1 ? static_cast<int>(r.integer("gpu_milli", 1, 1000)) : 1000;
    const std::int64_t created = r.integer("creation_time", 0, static_cast<std::int64_t>(kMaxSeconds));
    const std::int64_t scheduled = r.integer("scheduled_time", created, static_cast<std::int64_t>(kMaxSeconds));
    const std::int64_t deleted = r.integer("deletion_time", scheduled, static_cast<std::int64_t>(kMaxSeconds));
    j.arrival = long_seconds(static_cast<double>(created) * spec.time_scale);
    j.duration = long_seconds(static_cast<double>(deleted - scheduled));
    if (!s.jobs.empty() && j.arrival < s.jobs.back().arrival) r.fail("creation_time goes back in time");
    if (r.has_column("gpu_spec") && !r.field("gpu_spec").empty()) {
      std::string_view models = r.field("gpu_spec");
      for (std::size_t start = 0;;) {
        const std::size_t bar = models.find('|', start);
        j.gpu_models.emplace_back(models.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start));
        if (bar == std::string_view::npos) break;
        start = bar + 1;
      }
    }
    j.user = intern(s.users, r.has_column("qos") && !r.field("qos").empty() ? r.field("qos") : "default");
    s.jobs.push_back(std::move(j));
    if (spec.limit > 0 && static_cast<std::int64_t>(s.jobs.size()) >= spec.limit) break;
  }
  return s;
}

JobStream read_clustersim(const JobStreamSpec& spec, const ScheduleScenario& scenario) {
  CsvReader r(spec.trace, read_input_file(spec.trace));
  r.header({"id", "arrival_s", "gpus"});
  const bool by_duration = r.has_column("duration_s"), by_class = r.has_column("class");
  if (by_class && !r.has_column("iterations")) r.fail("a \"class\" column needs an \"iterations\" column");
  if (!by_duration && !by_class) r.fail("the header needs \"duration_s\" or \"class\" and \"iterations\"");
  JobStream s;
  for (const auto& [name, c] : scenario.classes) s.classes.push_back(name);
  while (r.next()) {
    check_count(r, s);
    JobRequest j;
    j.id = static_cast<std::int64_t>(s.jobs.size());
    j.name = std::string(r.field("id"));
    j.arrival = long_seconds(r.number("arrival_s", 0, kMaxSeconds) * spec.time_scale);
    if (!s.jobs.empty() && j.arrival < s.jobs.back().arrival) r.fail("arrival_s goes back in time (rows must be in arrival order)");
    j.gpus = static_cast<int>(r.integer("gpus", 1, 1 << 20));
    if (r.has_column("gpu_milli") && !r.field("gpu_milli").empty()) {
      j.gpu_milli = static_cast<int>(r.integer("gpu_milli", 1, 1000));
      if (j.gpu_milli < 1000 && j.gpus != 1) r.fail("a share of a GPU (gpu_milli < 1000) applies to a one-GPU job");
    }
    const bool has_class = by_class && !r.field("class").empty();
    const bool has_duration = by_duration && !r.field("duration_s").empty();
    if (has_class == has_duration) r.fail("expected exactly one of duration_s and class");
    if (has_duration) {
      j.duration = long_seconds(r.number("duration_s", 0, kMaxSeconds));
    } else {
      const std::string name(r.field("class"));
      auto it = std::find(s.classes.begin(), s.classes.end(), name);
      if (it == s.classes.end()) r.fail("no job class \"" + name + "\" in the scenario's \"classes\"");
      j.job_class = static_cast<int>(it - s.classes.begin());
      j.iterations = r.number("iterations", 1, 1e12);
    }
    if (r.has_column("priority") && !r.field("priority").empty()) j.priority = static_cast<int>(r.integer("priority", -1000000, 1000000));
    j.user = intern(s.users, r.has_column("user") && !r.field("user").empty() ? r.field("user") : "default");
    s.jobs.push_back(std::move(j));
    if (spec.limit > 0 && static_cast<std::int64_t>(s.jobs.size()) >= spec.limit) break;
  }
  return s;
}

JobStream synthesize(const SyntheticJobs& g, const ScheduleScenario& scenario) {
  JobStream s;
  for (const auto& [name, c] : scenario.classes) s.classes.push_back(name);
  for (int u = 0; u < g.users; ++u) s.users.push_back("user" + std::to_string(u));
  Rng arrivals = Rng::derive(g.seed, 1), sizes = Rng::derive(g.seed, 2), lengths = Rng::derive(g.seed, 3),
      who = Rng::derive(g.seed, 4);
  double t = 0;
  s.jobs.reserve(static_cast<std::size_t>(g.count));
  for (std::int64_t i = 0; i < g.count; ++i) {
    t += draw_exponential(arrivals) / g.rate;
    JobRequest j;
    j.id = i;
    j.name = "job" + std::to_string(i);
    j.arrival = long_seconds(t);
    j.gpus = static_cast<int>(std::clamp(std::round(draw(g.gpus, sizes)), 1.0, 1048576.0));
    if (g.duration) {
      j.duration = long_seconds(std::min(draw(*g.duration, lengths), kMaxSeconds));
    } else {
      const std::string& name = g.classes[g.classes.size() == 1 ? 0 : lengths.below(g.classes.size())];
      j.job_class = static_cast<int>(std::find(s.classes.begin(), s.classes.end(), name) - s.classes.begin());
      j.iterations = std::max(1.0, std::round(draw(*g.iterations, lengths)));
    }
    j.user = static_cast<int>(who.below(static_cast<std::uint64_t>(g.users)));
    s.jobs.push_back(std::move(j));
  }
  return s;
}

}  // namespace

JobStream make_jobs(const ScheduleScenario& scenario) {
  const JobStreamSpec& spec = scenario.jobs;
  JobStream s = spec.synthetic ? synthesize(*spec.synthetic, scenario)
                               : spec.format == TraceFormat::kAlibaba ? read_alibaba(spec) : read_clustersim(spec, scenario);
  if (s.jobs.empty()) throw InputError(spec.synthetic ? scenario.file : spec.trace, spec.synthetic ? spec.where : "", "the stream has no GPU jobs");
  if (s.users.empty()) s.users.push_back("default");
  return s;
}

}  // namespace cs::drv
