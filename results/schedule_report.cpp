#include "results/schedule_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "results/report_input.h"

namespace cs::results {
namespace {

std::string num(double v, int digits = 6) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

double span_start(const ScheduleRun& run) { return run.jobs.empty() ? 0.0 : to_seconds(run.jobs.front().arrival); }

std::vector<const ScheduleLink*> by_sharing(const ScheduleRun& run) {
  std::vector<const ScheduleLink*> out;
  for (const ScheduleLink& l : run.links) out.push_back(&l);
  std::stable_sort(out.begin(), out.end(), [](const ScheduleLink* a, const ScheduleLink* b) {
    if (a->busy_shared.value() != b->busy_shared.value()) return a->busy_shared.value() > b->busy_shared.value();
    return a->bytes > b->bytes;
  });
  return out;
}

nlohmann::json stats_json(const LatencyStats& l) {
  return {{"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"max", l.max}};
}

}  // namespace

ScheduleMetrics schedule_metrics(const ScheduleRun& run) {
  ScheduleMetrics m;
  m.jobs = static_cast<std::int64_t>(run.jobs.size());
  std::vector<double> jct, wait, slowdown;
  double last = span_start(run), gpu_seconds = 0, lost = 0;
  m.user_share.assign(run.users.size(), 0);
  for (const JobRecord& j : run.jobs) {
    m.preemptions += j.preemptions;
    m.failures += j.failures;
    if (j.status == JobStatus::kRejected) {
      ++m.rejected;
      continue;
    }
    ++m.completed;
    jct.push_back(to_seconds(j.jct()));
    wait.push_back(to_seconds(j.wait()));
    if (j.ideal.value() > 0) slowdown.push_back(to_seconds(j.jct()) / to_seconds(j.ideal));
    last = std::max(last, to_seconds(j.finish));
    gpu_seconds += j.gpu_seconds;
    lost += to_seconds(j.lost) * j.gpus * j.gpu_milli / 1000.0;
    const auto u = std::find(run.users.begin(), run.users.end(), j.user);
    if (u != run.users.end()) m.user_share[static_cast<std::size_t>(u - run.users.begin())] += j.gpu_seconds;
  }
  for (double& s : m.user_share) s = gpu_seconds > 0 ? s / gpu_seconds : 0;
  m.jct = latency_stats(std::move(jct));
  m.wait = latency_stats(std::move(wait));
  m.slowdown = latency_stats(std::move(slowdown));
  m.makespan_s = last - span_start(run);
  m.lost_gpu_hours = lost / 3600;
  // Time averages over the timeline: each sample holds until the next.
  double allocated = 0, fragmented = 0, waiting_time = 0;
  for (std::size_t i = 0; i + 1 < run.timeline.size(); ++i) {
    const ScheduleSample& a = run.timeline[i];
    const double dt = to_seconds(run.timeline[i + 1].time) - to_seconds(a.time);
    allocated += dt * static_cast<double>(a.allocated_milli) / 1000.0;
    if (a.waiting > 0) {
      fragmented += dt * a.fragmented;
      waiting_time += dt;
    }
  }
  if (m.makespan_s > 0 && run.gpus > 0) m.gpu_utilization = allocated / (m.makespan_s * run.gpus);
  if (waiting_time > 0) m.fragmentation = fragmented / waiting_time;
  std::vector<int> tier_links;
  for (const ScheduleLink& l : run.links) {
    const auto t = static_cast<std::size_t>(l.tier);
    if (m.tier_bytes.size() <= t) {
      m.tier_bytes.resize(t + 1, 0);
      m.tier_utilization.resize(t + 1, 0);
      tier_links.resize(t + 1, 0);
    }
    m.tier_bytes[t] += l.bytes;
    if (m.makespan_s > 0 && l.capacity.value() > 0) m.tier_utilization[t] += l.bytes / (l.capacity.value() * m.makespan_s);
    ++tier_links[t];
  }
  for (std::size_t t = 0; t < tier_links.size(); ++t) {
    if (tier_links[t] > 0) m.tier_utilization[t] /= tier_links[t];
  }
  return m;
}

nlohmann::json schedule_summary_json(const ScheduleRun& run, const ScheduleMetrics& m) {
  nlohmann::json users = nlohmann::json::array();
  for (std::size_t u = 0; u < run.users.size(); ++u) users.push_back({{"user", run.users[u]}, {"gpu_share", m.user_share[u]}});
  nlohmann::json tiers = nlohmann::json::array();
  for (std::size_t t = 0; t < m.tier_bytes.size(); ++t) {
    if (t == 0) continue;
    tiers.push_back({{"tier", t}, {"bytes", m.tier_bytes[t]}, {"mean_utilization", m.tier_utilization[t]}});
  }
  nlohmann::json shared = nlohmann::json::array();
  for (const ScheduleLink* l : by_sharing(run)) {
    if (shared.size() >= 10 || l->busy_shared.value() <= 0) break;
    shared.push_back({{"src", l->src}, {"dst", l->dst}, {"tier", l->tier}, {"shared_s", to_seconds(l->busy_shared)},
                      {"max_jobs", l->max_jobs}, {"bytes", l->bytes}});
  }
  nlohmann::json warnings = nlohmann::json::array();
  for (const Warning& w : run.warnings) warnings.push_back(to_string(w));
  return {{"schema", "clustersim-schedule"},
          {"version", 1},
          {"scenario", run.scenario},
          {"cluster", run.cluster},
          {"gpus", run.gpus},
          {"servers", run.servers},
          {"leaf_groups", run.leaf_groups},
          {"policy", run.policy},
          {"placement", run.placement},
          {"preemption", run.preemption},
          {"interference", run.interference},
          {"jobs", {{"total", m.jobs}, {"completed", m.completed}, {"rejected", m.rejected}, {"skipped_rows", run.skipped}}},
          {"jct_s", stats_json(m.jct)},
          {"wait_s", stats_json(m.wait)},
          {"slowdown", stats_json(m.slowdown)},
          {"makespan_s", m.makespan_s},
          {"gpu_utilization", m.gpu_utilization},
          {"fragmented_gpus_mean", m.fragmentation},
          {"preemptions", m.preemptions},
          {"failures", m.failures},
          {"lost_gpu_hours", m.lost_gpu_hours},
          {"users", users},
          {"network_tiers", tiers},
          {"most_shared_links", shared},
          {"joint_network_runs", run.joint_runs},
          {"assumptions", run.assumptions},
          {"warnings", warnings}};
}

std::string schedule_jobs_csv(const ScheduleRun& run) {
  std::ostringstream o;
  o << "id,name,class,user,priority,gpus,gpu_milli,status,arrival_s,start_s,finish_s,wait_s,jct_s,ideal_s,alone_s,slowdown,"
       "servers,leaf_groups,first_gpu,starts,preemptions,failures,lost_s,gpu_seconds,reason\n";
  for (const JobRecord& j : run.jobs) {
    const bool done = j.status == JobStatus::kCompleted;
    o << j.id << ',' << csv_quoted(j.name) << ',' << csv_quoted(j.job_class) << ',' << csv_quoted(j.user) << ',' << j.priority << ',' << j.gpus << ','
      << j.gpu_milli << ',' << (done ? "completed" : "rejected") << ',' << num(to_seconds(j.arrival), 12) << ',';
    if (done) {
      o << num(to_seconds(j.first_start), 12) << ',' << num(to_seconds(j.finish), 12) << ',' << num(to_seconds(j.wait()), 9) << ','
        << num(to_seconds(j.jct()), 9) << ',' << num(to_seconds(j.ideal), 9) << ',' << num(to_seconds(j.alone), 9) << ','
        << (j.ideal.value() > 0 ? num(to_seconds(j.jct()) / to_seconds(j.ideal), 6) : std::string()) << ',' << j.servers << ','
        << j.leaf_groups << ',' << j.first_gpu << ',';
    } else {
      o << ",,,,,,,,,,";
    }
    o << j.starts << ',' << j.preemptions << ',' << j.failures << ',' << num(to_seconds(j.lost), 9) << ',' << num(j.gpu_seconds, 9)
      << ',' << csv_quoted(j.reason) << '\n';
  }
  return o.str();
}

std::string schedule_timeline_csv(const ScheduleRun& run) {
  std::ostringstream o;
  o << "time_s,running,waiting,allocated_gpus,down_gpus,fragmented_gpus\n";
  for (const ScheduleSample& s : run.timeline) {
    o << num(to_seconds(s.time), 12) << ',' << s.running << ',' << s.waiting << ',' << num(static_cast<double>(s.allocated_milli) / 1000.0, 9)
      << ',' << s.down << ',' << s.fragmented << '\n';
  }
  return o.str();
}

std::string schedule_links_csv(const ScheduleRun& run, const ScheduleMetrics& m) {
  std::ostringstream o;
  o << "src,dst,tier,bytes,utilization,shared_s,max_jobs\n";
  for (const ScheduleLink* l : by_sharing(run)) {
    const double util = m.makespan_s > 0 && l->capacity.value() > 0 ? l->bytes / (l->capacity.value() * m.makespan_s) : 0;
    o << csv_quoted(l->src) << ',' << csv_quoted(l->dst) << ',' << l->tier << ',' << num(l->bytes, 12) << ',' << num(util, 6) << ','
      << num(to_seconds(l->busy_shared), 9) << ',' << l->max_jobs << '\n';
  }
  return o.str();
}

std::string schedule_trace_json(const ScheduleRun& run) {
  // Microsecond timestamps as numbers (traces span months, beyond the simulated clock's spans).
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "jobs by first GPU"}}}});
  events.push_back({{"ph", "M"}, {"pid", 2}, {"name", "process_name"}, {"args", {{"name", "cluster"}}}});
  const double t0 = span_start(run);
  for (const JobRecord& j : run.jobs) {
    if (j.status != JobStatus::kCompleted) continue;
    events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", j.first_gpu}, {"name", j.name},
                      {"ts", (to_seconds(j.first_start) - t0) * 1e6}, {"dur", (to_seconds(j.finish) - to_seconds(j.first_start)) * 1e6},
                      {"args", {{"gpus", j.gpus}, {"class", j.job_class}, {"user", j.user}, {"wait_s", to_seconds(j.wait())},
                                {"servers", j.servers}, {"leaf_groups", j.leaf_groups}, {"preemptions", j.preemptions}}}});
  }
  for (const ScheduleSample& s : run.timeline) {
    events.push_back({{"ph", "C"}, {"pid", 2}, {"name", "jobs"}, {"ts", (to_seconds(s.time) - t0) * 1e6},
                      {"args", {{"running", s.running}, {"waiting", s.waiting}}}});
    events.push_back({{"ph", "C"}, {"pid", 2}, {"name", "GPUs"}, {"ts", (to_seconds(s.time) - t0) * 1e6},
                      {"args", {{"allocated", static_cast<double>(s.allocated_milli) / 1000.0}, {"down", s.down}, {"fragmented", s.fragmented}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

std::string schedule_table(const ScheduleRun& run, const ScheduleMetrics& m) {
  std::ostringstream o;
  o << "Scheduling " << m.jobs << " jobs on " << run.cluster << " (" << run.gpus << " GPUs, " << run.servers << " servers, "
    << run.leaf_groups << " leaf group" << (run.leaf_groups == 1 ? "" : "s") << "): policy " << run.policy << (run.preemption ? " with preemption" : "")
    << ", placement " << run.placement << ", interference " << (run.interference ? "on" : "off") << "\n";
  o << "jobs          " << m.completed << " completed, " << m.rejected << " rejected";
  if (run.skipped > 0) o << " (" << run.skipped << " trace rows skipped: no GPU or never ran)";
  o << "; preemptions " << m.preemptions << ", failures " << m.failures << "\n";
  o << "                     mean          p50          p99\n";
  const auto row = [&](const char* name, const LatencyStats& l, const char* unit, int decimals) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-12s %12.*f %12.*f %12.*f  %s\n", name, decimals, l.mean, decimals, l.p50, decimals, l.p99, unit);
    o << buf;
  };
  row("JCT", m.jct, "s", 1);
  row("wait", m.wait, "s", 1);
  row("slowdown", m.slowdown, "x ideal", 3);
  o << "makespan      " << fixed(m.makespan_s, 1) << " s (" << fixed(m.makespan_s / 3600, 2) << " h); GPU utilization "
    << fixed(100 * m.gpu_utilization, 1) << "%; fragmented " << fixed(m.fragmentation, 1) << " GPUs on average while jobs wait\n";
  if (m.lost_gpu_hours > 0) o << "lost          " << fixed(m.lost_gpu_hours, 1) << " GPU-hours to preemptions, failures and restarts\n";
  for (std::size_t t = 1; t < m.tier_bytes.size(); ++t) {
    o << "tier " << t << "        " << num(m.tier_bytes[t] / 1e12, 4) << " TB, mean utilization " << fixed(100 * m.tier_utilization[t], 2)
      << "% of the links used\n";
  }
  int shown = 0;
  for (const ScheduleLink* l : by_sharing(run)) {
    if (shown == 3 || l->busy_shared.value() <= 0) break;
    if (shown++ == 0) o << "most shared links (time with two or more jobs' traffic):\n";
    o << "  " << l->src << " -> " << l->dst << " (tier " << l->tier << "): " << fixed(to_seconds(l->busy_shared), 1) << " s, up to "
      << l->max_jobs << " jobs\n";
  }
  for (const std::string& a : run.assumptions) o << "assumed: " << a << "\n";
  return o.str();
}

}  // namespace cs::results
