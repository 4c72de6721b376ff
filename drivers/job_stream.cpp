#include "drivers/job_stream.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/limits.h"
#include "core/random.h"
#include "drivers/trace_table.h"

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

constexpr double kMaxSeconds = 3.6e10;  // kMaxLongDuration

int intern(std::vector<std::string>& names, std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  names.emplace_back(name);
  return static_cast<int>(names.size() - 1);
}

void check_count(const TraceTable& t, std::size_t row, const JobStream& s) {
  if (static_cast<std::int64_t>(s.jobs.size()) >= limits().jobs) {
    t.fail(row, "more jobs than the limit of " + std::to_string(limits().jobs) + "; " + limit_hint("jobs") + " (or read fewer with \"limit\")");
  }
}

JobStream read_alibaba(const JobStreamSpec& spec) {
  const TraceTable t(spec.trace, {"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"});
  JobStream s;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::int64_t gpus = t.integer(i, "num_gpu", 0, 1 << 20);
    if (gpus == 0 || t.cell(i, "scheduled_time").empty()) {
      ++s.skipped;
      continue;
    }
    check_count(t, i, s);
    JobRequest j;
    j.id = static_cast<std::int64_t>(s.jobs.size());
    j.name = std::string(t.cell(i, "name"));
    j.gpus = static_cast<int>(gpus);
    j.gpu_milli = gpus == 1 ? static_cast<int>(t.integer(i, "gpu_milli", 1, 1000)) : 1000;
    const std::int64_t created = t.integer(i, "creation_time", 0, static_cast<std::int64_t>(kMaxSeconds));
    const std::int64_t scheduled = t.integer(i, "scheduled_time", created, static_cast<std::int64_t>(kMaxSeconds));
    const std::int64_t deleted = t.integer(i, "deletion_time", scheduled, static_cast<std::int64_t>(kMaxSeconds));
    j.arrival = long_seconds(static_cast<double>(created) * spec.time_scale);
    j.duration = long_seconds(static_cast<double>(deleted - scheduled));
    if (!s.jobs.empty() && j.arrival < s.jobs.back().arrival) t.fail(i, "creation_time goes back in time");
    if (t.has("gpu_spec") && !t.cell(i, "gpu_spec").empty()) {
      std::string_view models = t.cell(i, "gpu_spec");
      for (std::size_t start = 0;;) {
        const std::size_t bar = models.find('|', start);
        j.gpu_models.emplace_back(models.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start));
        if (bar == std::string_view::npos) break;
        start = bar + 1;
      }
    }
    j.user = intern(s.users, t.has("qos") && !t.cell(i, "qos").empty() ? t.cell(i, "qos") : "default");
    s.jobs.push_back(std::move(j));
    if (spec.limit > 0 && static_cast<std::int64_t>(s.jobs.size()) >= spec.limit) break;
  }
  return s;
}

JobStream read_clustersim(const JobStreamSpec& spec, const ScheduleScenario& scenario) {
  const TraceTable t(spec.trace, {"id", "arrival_s", "gpus"});
  const bool by_duration = t.has("duration_s"), by_class = t.has("class");
  if (by_class && !t.has("iterations")) throw InputError(spec.trace, "line 1", "a \"class\" column needs an \"iterations\" column");
  if (!by_duration && !by_class) throw InputError(spec.trace, "line 1", "the header needs \"duration_s\" or \"class\" and \"iterations\"");
  JobStream s;
  for (const auto& [name, c] : scenario.classes) s.classes.push_back(name);
  for (std::size_t i = 0; i < t.rows(); ++i) {
    check_count(t, i, s);
    JobRequest j;
    j.id = static_cast<std::int64_t>(s.jobs.size());
    j.name = std::string(t.cell(i, "id"));
    j.arrival = long_seconds(t.number(i, "arrival_s", 0, kMaxSeconds) * spec.time_scale);
    if (!s.jobs.empty() && j.arrival < s.jobs.back().arrival) t.fail(i, "arrival_s goes back in time (rows must be in arrival order)");
    j.gpus = static_cast<int>(t.integer(i, "gpus", 1, 1 << 20));
    if (t.has("gpu_milli") && !t.cell(i, "gpu_milli").empty()) {
      j.gpu_milli = static_cast<int>(t.integer(i, "gpu_milli", 1, 1000));
      if (j.gpu_milli < 1000 && j.gpus != 1) t.fail(i, "a share of a GPU (gpu_milli < 1000) applies to a one-GPU job");
    }
    const bool has_class = by_class && !t.cell(i, "class").empty();
    const bool has_duration = by_duration && !t.cell(i, "duration_s").empty();
    if (has_class == has_duration) t.fail(i, "expected exactly one of duration_s and class");
    if (has_duration) {
      j.duration = long_seconds(t.number(i, "duration_s", 0, kMaxSeconds));
    } else {
      const std::string name(t.cell(i, "class"));
      auto it = std::find(s.classes.begin(), s.classes.end(), name);
      if (it == s.classes.end()) t.fail(i, "no job class \"" + name + "\" in the scenario's \"classes\"");
      j.job_class = static_cast<int>(it - s.classes.begin());
      j.iterations = t.number(i, "iterations", 1, 1e12);
    }
    if (t.has("priority") && !t.cell(i, "priority").empty()) j.priority = static_cast<int>(t.integer(i, "priority", -1000000, 1000000));
    j.user = intern(s.users, t.has("user") && !t.cell(i, "user").empty() ? t.cell(i, "user") : "default");
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
