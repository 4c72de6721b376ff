#include "results/serving_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/statistics.h"
#include "results/chrome_trace.h"
#include "results/summary.h"

namespace cs::results {
namespace {

const char* status_name(RequestStatus s) {
  switch (s) {
    case RequestStatus::kCompleted: return "completed";
    case RequestStatus::kLost: return "lost";
    case RequestStatus::kRejected: return "rejected";
  }
  return "?";
}

double ttft_s(const RequestRecord& r) { return to_seconds(r.first_token - r.arrival); }
double e2e_s(const RequestRecord& r) { return to_seconds(r.finish - r.arrival); }
bool has_tpot(const RequestRecord& r) { return r.output >= 2; }
double tpot_s(const RequestRecord& r) { return to_seconds(r.finish - r.first_token) / static_cast<double>(r.output - 1); }

bool meets_slo(const ServingRun& run, const RequestRecord& r) {
  if (run.slo_ttft.count() > 0 && r.first_token - r.arrival > run.slo_ttft) return false;
  if (run.slo_tpot.count() > 0 && has_tpot(r) && tpot_s(r) > to_seconds(run.slo_tpot)) return false;
  return true;
}

nlohmann::json latency_json(const LatencyStats& l) {
  return {{"count", l.count}, {"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"max", l.max}};
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Seconds as milliseconds with three significant decimals.
std::string ms(double s) { return fmt("%.1f ms", s * 1e3); }

// Disaggregated runs: how long the KV caches took to cross, and what they put on each tier.
nlohmann::json kv_transfer_json(const ServingRun& run) {
  if (run.prefill_replicas == 0) return nullptr;
  std::vector<double> t;
  for (const RequestRecord& r : run.requests) {
    if (r.status == RequestStatus::kCompleted && r.kv_transfer.count() > 0) t.push_back(to_seconds(r.kv_transfer));
  }
  nlohmann::json tiers = nlohmann::json::object();
  for (std::size_t k = 0; k < run.transfer_bytes_by_tier.size(); ++k) {
    tiers[std::to_string(k)] = run.transfer_bytes_by_tier[k].value();
  }
  nlohmann::json j = latency_json(latency_stats(std::move(t)));
  j["bytes_by_tier"] = tiers;
  return j;
}

}  // namespace

LatencyStats latency_stats(std::vector<double> v) {
  LatencyStats l;
  l.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) return l;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  l.mean = sum / static_cast<double>(v.size());
  l.p50 = quantile(v, 0.5);
  l.p90 = quantile(v, 0.9);
  l.p99 = quantile(v, 0.99);
  l.max = v.back();
  return l;
}

ServingMetrics serving_metrics(const ServingRun& run) {
  ServingMetrics m;
  m.requests = static_cast<std::int64_t>(run.requests.size());
  std::vector<double> ttft, tpot, e2e;
  SimTime first = kTimeNever, last = kTimeZero;
  std::int64_t tokens = 0, good = 0;
  for (const RequestRecord& r : run.requests) {
    first = std::min(first, r.arrival);
    m.retried += r.retries > 0 ? 1 : 0;
    m.preemptions += r.preemptions;
    if (r.status == RequestStatus::kLost) ++m.lost;
    if (r.status == RequestStatus::kRejected) ++m.rejected;
    if (r.status != RequestStatus::kCompleted) continue;
    ++m.completed;
    last = std::max(last, r.finish);
    tokens += r.output;
    ttft.push_back(ttft_s(r));
    e2e.push_back(e2e_s(r));
    if (has_tpot(r)) tpot.push_back(tpot_s(r));
    if (meets_slo(run, r)) ++good;
  }
  m.ttft = latency_stats(std::move(ttft));
  m.tpot = latency_stats(std::move(tpot));
  m.e2e = latency_stats(std::move(e2e));
  m.span_s = m.completed > 0 ? to_seconds(last - first) : 0;
  if (m.span_s > 0) {
    m.requests_per_s = static_cast<double>(m.completed) / m.span_s;
    m.output_tokens_per_s = static_cast<double>(tokens) / m.span_s;
    m.goodput_per_s = static_cast<double>(good) / m.span_s;
  }
  m.slo_attainment = m.completed > 0 ? static_cast<double>(good) / static_cast<double>(m.completed) : 0;
  const double span = to_seconds(run.end - kTimeZero);  // the whole simulated window
  double busy = 0, down = 0, kv = 0, kv_peak = 0, done_max = 0, done_sum = 0, finishing = 0;
  for (const ReplicaStats& st : run.replica_stats) {
    busy += to_seconds(st.busy);
    down += to_seconds(st.down);
    kv += st.kv_blocks > 0 ? st.kv_block_seconds / static_cast<double>(st.kv_blocks) : 0;
    kv_peak = std::max(kv_peak, st.kv_blocks > 0 ? static_cast<double>(st.kv_peak) / static_cast<double>(st.kv_blocks) : 0);
    if (st.role != "prefill") {  // prefill replicas complete only requests of one output token
      done_max = std::max(done_max, static_cast<double>(st.completed));
      done_sum += static_cast<double>(st.completed);
      ++finishing;
    }
  }
  const double n = static_cast<double>(run.replica_stats.size());
  if (span > 0 && n > 0) {
    m.gpu_utilization = busy / (n * span);
    m.availability = 1.0 - down / (n * span);
    m.kv_occupancy_mean = kv / (n * span);
  }
  m.kv_occupancy_peak = kv_peak;
  if (done_sum > 0) m.load_imbalance = done_max / (done_sum / finishing);
  double q = 0;
  for (const ServingSample& x : run.timeline) {
    q += static_cast<double>(x.waiting);
    m.queue_max = std::max(m.queue_max, x.waiting);
  }
  if (!run.timeline.empty()) m.queue_mean = q / static_cast<double>(run.timeline.size());
  return m;
}

nlohmann::json serving_summary_json(const ServingRun& run, const ServingMetrics& m) {
  nlohmann::json replicas = nlohmann::json::array();
  const double span = m.span_s;
  for (const ReplicaStats& st : run.replica_stats) {
    replicas.push_back({{"role", st.role},
                        {"gpus", st.gpus},
                        {"completed", st.completed},
                        {"output_tokens", st.output_tokens},
                        {"prefill_tokens", st.prefill_tokens},
                        {"iterations", st.iterations},
                        {"busy_s", to_seconds(st.busy)},
                        {"down_s", to_seconds(st.down)},
                        {"failures", st.failures},
                        {"preemptions", st.preemptions},
                        {"kv_blocks", st.kv_blocks},
                        {"kv_peak_blocks", st.kv_peak},
                        {"utilization", span > 0 ? to_seconds(st.busy) / span : 0.0}});
  }
  nlohmann::json out = {
      {"schema", "clustersim-serving"},
      {"version", 1},
      {"scenario", run.scenario},
      {"cluster", run.cluster},
      {"model", run.model},
      {"gpu", run.gpu},
      {"deployment", {{"replicas", run.replicas}, {"tp", run.tp}, {"pp", run.pp},
                      {"gpus", run.replicas * run.tp * run.pp + run.prefill_replicas * run.prefill_tp},
                      {"prefill", run.prefill_replicas > 0 ? nlohmann::json{{"replicas", run.prefill_replicas}, {"tp", run.prefill_tp}}
                                                           : nlohmann::json(nullptr)},
                      {"precision", run.precision}, {"expert_parallel", run.expert_parallel}, {"router", run.router},
                      {"max_batch_tokens", run.max_batch_tokens}, {"max_batch_requests", run.max_batch_requests},
                      {"chunked_prefill", run.chunked_prefill}, {"block_tokens", run.block_tokens},
                      {"preemption", run.preemption},
                      {"weights_per_gpu_bytes", run.weights_per_gpu.value()},
                      {"kv_bytes_per_token_per_gpu", run.kv_bytes_per_token.value()}}},
      {"slo", {{"ttft_s", run.slo_ttft.count() > 0 ? nlohmann::json(to_seconds(run.slo_ttft)) : nlohmann::json(nullptr)},
               {"tpot_s", run.slo_tpot.count() > 0 ? nlohmann::json(to_seconds(run.slo_tpot)) : nlohmann::json(nullptr)}}},
      {"requests", {{"total", m.requests}, {"completed", m.completed}, {"lost", m.lost}, {"rejected", m.rejected},
                    {"retried", m.retried}, {"preemptions", m.preemptions}}},
      {"ttft_s", latency_json(m.ttft)},
      {"tpot_s", latency_json(m.tpot)},
      {"e2e_latency_s", latency_json(m.e2e)},
      {"span_s", m.span_s},
      {"throughput", {{"requests_per_s", m.requests_per_s}, {"output_tokens_per_s", m.output_tokens_per_s},
                      {"goodput_requests_per_s", m.goodput_per_s}, {"slo_attainment", m.slo_attainment}}},
      {"gpu_utilization", m.gpu_utilization},
      {"kv_cache", {{"mean_occupancy", m.kv_occupancy_mean}, {"peak_occupancy", m.kv_occupancy_peak}}},
      {"queue", {{"mean_waiting", m.queue_mean}, {"max_waiting", m.queue_max},
                 {"router_peak", run.router_peak_queue}}},
      {"availability", m.availability},
      {"load_imbalance", m.load_imbalance},
      {"kv_transfer", kv_transfer_json(run)},
      {"replicas", replicas},
      {"iterations", run.iterations_total},
      {"events", run.events},
      {"assumptions", assumptions_json(run.assumptions)}};
  list_warnings_in(out, run.warnings);
  return out;
}

std::string serving_requests_csv(const ServingRun& run) {
  std::ostringstream o;
  o << "id,arrival_s,prompt_tokens,output_tokens,replica,status,ttft_s,tpot_s,e2e_s,preemptions,retries,kv_transfer_s\n";
  o.precision(9);
  for (const RequestRecord& r : run.requests) {
    const bool ok = r.status == RequestStatus::kCompleted;
    o << r.id << ',' << to_seconds(r.arrival) << ',' << r.prompt << ',' << r.output << ',' << r.replica << ','
      << status_name(r.status) << ',';
    if (ok) o << ttft_s(r);
    o << ',';
    if (ok && has_tpot(r)) o << tpot_s(r);
    o << ',';
    if (ok) o << e2e_s(r);
    o << ',' << r.preemptions << ',' << r.retries << ',';
    if (ok && r.kv_transfer.count() > 0) o << to_seconds(r.kv_transfer);
    o << '\n';
  }
  return o.str();
}

std::string serving_timeline_csv(const ServingRun& run) {
  std::ostringstream o;
  o << "time_s,waiting,running,kv_blocks_used,replicas_up\n";
  o.precision(9);
  for (const ServingSample& x : run.timeline) {
    o << to_seconds(x.time) << ',' << x.waiting << ',' << x.running << ',' << x.kv_blocks << ',' << x.replicas_up << '\n';
  }
  return o.str();
}

std::string serving_links_csv(const ServingRun& run) {
  std::ostringstream o;
  o << "src,dst,tier,bytes\n";
  for (const auto& l : run.transfer_links) o << l.src << ',' << l.dst << ',' << l.tier << ',' << l.bytes.value() << '\n';
  return o.str();
}

std::string serving_trace_json(const ServingRun& run) {
  ChromeTrace t;
  t.name_process(1, "replicas");
  for (std::size_t r = 0; r < run.replica_stats.size(); ++r) t.name_track(1, static_cast<std::int64_t>(r), "replica " + std::to_string(r));
  for (const IterationRecord& it : run.iterations) {
    t.span(1, it.replica, "iteration", it.start, it.length, {{"sequences", it.sequences}, {"tokens", it.tokens}});
  }
  return t.dump();
}

std::string serving_table(const ServingRun& run, const ServingMetrics& m) {
  std::ostringstream o;
  o << "Serving " << run.model << " on " << run.cluster << ": ";
  if (run.prefill_replicas > 0) {
    o << run.prefill_replicas << " prefill x TP " << run.prefill_tp << " + " << run.replicas << " decode x TP " << run.tp;
  } else {
    o << run.replicas << " replica" << (run.replicas == 1 ? "" : "s") << " x TP " << run.tp;
    if (run.pp > 1) o << " x PP " << run.pp;
  }
  o << " (" << run.gpu << ", " << run.precision << "), router " << run.router << "\n";
  o << "requests      " << m.requests << " (completed " << m.completed << ", lost " << m.lost << ", rejected " << m.rejected
    << ", retried " << m.retried << ", preemptions " << m.preemptions << ")\n";
  o << "                   mean        p50        p90        p99\n";
  const auto row = [&](const char* name, const LatencyStats& l) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-12s %10.1f %10.1f %10.1f %10.1f  ms\n", name, l.mean * 1e3, l.p50 * 1e3, l.p90 * 1e3, l.p99 * 1e3);
    o << buf;
  };
  row("TTFT", m.ttft);
  row("TPOT", m.tpot);
  row("E2E", m.e2e);
  o << "throughput    " << fmt("%.2f", m.requests_per_s) << " req/s, " << fmt("%.0f", m.output_tokens_per_s) << " output tokens/s";
  if (run.slo_ttft.count() > 0 || run.slo_tpot.count() > 0) {
    o << "; goodput " << fmt("%.2f", m.goodput_per_s) << " req/s (" << fmt("%.1f", 100 * m.slo_attainment) << "% within SLO: TTFT "
      << (run.slo_ttft.count() > 0 ? ms(to_seconds(run.slo_ttft)) : std::string("-")) << ", TPOT "
      << (run.slo_tpot.count() > 0 ? ms(to_seconds(run.slo_tpot)) : std::string("-")) << ")";
  }
  o << "\n";
  if (run.prefill_replicas > 0) {
    const nlohmann::json k = kv_transfer_json(run);
    o << "KV transfer   " << k["count"].get<std::int64_t>() << " caches, mean " << ms(k["mean"].get<double>()) << ", p99 "
      << ms(k["p99"].get<double>()) << "\n";
  }
  o << "GPU busy      " << fmt("%.1f", 100 * m.gpu_utilization) << "%; KV cache " << fmt("%.1f", 100 * m.kv_occupancy_mean)
    << "% mean, " << fmt("%.1f", 100 * m.kv_occupancy_peak) << "% peak; queue " << fmt("%.1f", m.queue_mean) << " mean, "
    << m.queue_max << " max; availability " << fmt("%.4f", m.availability) << "; imbalance " << fmt("%.2f", m.load_imbalance)
    << "\n";
  return o.str();
}

}  // namespace cs::results
