// Metrics and writers of a serving run (docs/serving.md, "Results"), with vLLM's metric names
// where they exist: TTFT (time to first token), TPOT (time per output token after the first, the
// inter-token latency), end-to-end latency; throughput in requests and output tokens per second;
// goodput (requests per second that met every SLO), GPU utilization, KV-cache occupancy,
// preemptions, availability.
//
//   TTFT = first token - arrival;  TPOT = (finish - first token) / (output - 1), output >= 2;
//   E2E = finish - arrival;  throughput = completed / (last finish - first arrival)
//   utilization = sum over replicas of busy time / (replicas x window)
//   availability = 1 - sum of down time / (replicas x window)
// (window: from time zero to the last completion).
// Quantiles interpolate linearly between order statistics (core/statistics.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/serving_run.h"

namespace cs::results {

struct LatencyStats {
  std::int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;  // seconds
};

struct ServingMetrics {
  std::int64_t requests = 0, completed = 0, lost = 0, rejected = 0, retried = 0, preemptions = 0;
  double span_s = 0;  // first arrival to last completion
  LatencyStats ttft, tpot, e2e;
  double requests_per_s = 0, output_tokens_per_s = 0, goodput_per_s = 0;
  double slo_attainment = 0;  // of completed requests (1 without SLOs)
  double gpu_utilization = 0, kv_occupancy_mean = 0, kv_occupancy_peak = 0, availability = 1;
  double queue_mean = 0;
  std::int64_t queue_max = 0;
  double load_imbalance = 1;  // max over mean of requests completed per (decode or mixed) replica
};

LatencyStats latency_stats(std::vector<double> seconds);
ServingMetrics serving_metrics(const ServingRun& run);

// summary.json of `clustersim serve` (schema "clustersim-serving", version 1).
nlohmann::json serving_summary_json(const ServingRun& run, const ServingMetrics& m);
// One row per request: id, arrival_s, prompt_tokens, output_tokens, replica, status, ttft_s,
// tpot_s, e2e_s, preemptions, retries, kv_transfer_s (disaggregated).
std::string serving_requests_csv(const ServingRun& run);
// The sampled deployment state: time_s, waiting, running, kv_blocks_used, replicas_up.
std::string serving_timeline_csv(const ServingRun& run);
// Disaggregated: every link the KV transfers used: src, dst, tier, bytes.
std::string serving_links_csv(const ServingRun& run);
// Perfetto: a track per replica with its iterations (sequences and tokens in the args).
std::string serving_trace_json(const ServingRun& run);
// The table `clustersim serve` prints.
std::string serving_table(const ServingRun& run, const ServingMetrics& m);

}  // namespace cs::results
