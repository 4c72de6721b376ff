// What a serving simulation produced (drivers/serving_sim.h): one record per request, per-replica
// statistics, a sampled timeline and the iterations for the trace. The writers are in
// results/serving_report.h; docs/serving.md documents every field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sourced_value.h"
#include "core/units.h"
#include "core/warning.h"

namespace cs::results {

enum class RequestStatus : std::uint8_t { kCompleted, kLost, kRejected };

struct RequestRecord {
  std::int64_t id = 0;
  SimTime arrival = kTimeZero;
  SimTime first_token = kTimeNever;  // of the attempt that completed (kTimeNever: none)
  SimTime finish = kTimeNever;
  std::int64_t prompt = 0, output = 0;
  int replica = -1;         // the replica that served (or last held) it
  int preemptions = 0;
  int retries = 0;          // times a failure sent it back to the router
  Duration kv_transfer{0};  // disaggregated: its KV cache's journey from prefill to decode replica
  RequestStatus status = RequestStatus::kCompleted;
};

struct ReplicaStats {
  std::string role = "mixed";      // mixed (prefill and decode), prefill or decode (disaggregated)
  std::vector<int> gpus;           // GPU indices (rank order of the cluster)
  Duration busy{0};                // time running iterations
  Duration down{0};                // time failed
  std::int64_t iterations = 0;
  std::int64_t completed = 0;
  std::int64_t output_tokens = 0;
  std::int64_t prefill_tokens = 0;
  std::int64_t preemptions = 0;
  std::int64_t failures = 0;
  std::int64_t kv_blocks = 0;      // capacity
  double kv_block_seconds = 0;     // integral of blocks in use over time
  std::int64_t kv_peak = 0;        // most blocks in use at once
  std::int64_t kv_in_use_at_end = 0;  // 0 when every request gave its blocks back (conservation)
};

// One sample of the whole deployment's state.
struct ServingSample {
  SimTime time = kTimeZero;
  std::int64_t waiting = 0;    // queued at replicas and at the router
  std::int64_t running = 0;    // in a replica's running batch
  std::int64_t kv_blocks = 0;  // in use, all replicas
  int replicas_up = 0;
};

// One iteration of one replica (for the Perfetto trace).
struct IterationRecord {
  int replica = 0;
  SimTime start = kTimeZero;
  Duration length{0};
  std::int32_t sequences = 0;
  std::int32_t tokens = 0;
};

struct ServingRun {
  std::string scenario;
  std::string cluster, model, gpu;
  int replicas = 0, tp = 1, pp = 1;  // the (decode) replicas
  int prefill_replicas = 0, prefill_tp = 0;  // disaggregated: the prefill pool
  std::string precision, router;
  bool expert_parallel = false;
  std::int64_t max_batch_tokens = 0, max_batch_requests = 0, block_tokens = 0;
  bool chunked_prefill = true;
  std::string preemption;
  Bytes kv_bytes_per_token{0};      // per GPU
  Bytes weights_per_gpu{0};
  Duration slo_ttft{0}, slo_tpot{0};  // 0: none
  std::vector<RequestRecord> requests;
  std::vector<ReplicaStats> replica_stats;
  std::vector<ServingSample> timeline;
  std::vector<IterationRecord> iterations;  // the first kMaxTraceIterations
  std::int64_t iterations_total = 0;
  std::int64_t router_peak_queue = 0;
  // Disaggregated: bytes the KV transfers put on links, by tier (0 inside servers, 1 endpoint-leaf,
  // 2 leaf-spine, 3 spine-core), counted once per link traversed.
  std::vector<Bytes> transfer_bytes_by_tier;
  struct LinkBytes {
    std::string src, dst;
    int tier = 0;
    Bytes bytes{0};
  };
  std::vector<LinkBytes> transfer_links;  // every link the transfers used, in link order
  SimTime end = kTimeZero;          // the last event
  std::uint64_t events = 0;
  std::vector<SourcedFact> assumptions;
  std::vector<Warning> warnings;
};

inline constexpr std::size_t kMaxTraceIterations = 200000;

}  // namespace cs::results
