// A serving scenario, read from JSON (docs/serving.md, "The scenario file"): a cluster, a model,
// replicas and how they are sharded, a router, each replica's scheduler, the request stream,
// SLOs and failures. drivers/serving_sim.h simulates it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/enum_names.h"
#include "core/long_duration.h"
#include "core/units.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

enum class RouterPolicy { kRoundRobin, kLeastOutstanding, kLeastKv, kPowerOfTwo, kSessionAffinity };
inline constexpr EnumName<RouterPolicy> kRouterPolicyNames[] = {
    {RouterPolicy::kRoundRobin, "round_robin"},
    {RouterPolicy::kLeastOutstanding, "least_outstanding"},
    {RouterPolicy::kLeastKv, "least_kv"},
    {RouterPolicy::kPowerOfTwo, "power_of_two"},
    {RouterPolicy::kSessionAffinity, "session_affinity"}};

enum class Preemption { kRecompute, kSwap };
inline constexpr EnumName<Preemption> kPreemptionNames[] = {{Preemption::kRecompute, "recompute"},
                                                            {Preemption::kSwap, "swap"}};

// How a replica admits a request into its KV cache: the blocks it needs now, growing as it
// decodes and preempting when they run out (vLLM), or every block its prompt and output will
// need, reserved at admission so that nothing is ever preempted (TensorRT-LLM's capacity
// scheduler policy GUARANTEED_NO_EVICT).
enum class KvAdmission { kOnDemand, kReserve };
inline constexpr EnumName<KvAdmission> kKvAdmissionNames[] = {{KvAdmission::kOnDemand, "on_demand"},
                                                              {KvAdmission::kReserve, "reserve"}};

enum class ArrivalProcess { kPoisson, kGamma };
inline constexpr EnumName<ArrivalProcess> kArrivalProcessNames[] = {{ArrivalProcess::kPoisson, "poisson"},
                                                                    {ArrivalProcess::kGamma, "gamma"}};

// What happens to a failed replica's requests.
enum class FailurePolicy { kRetry, kDrop };
inline constexpr EnumName<FailurePolicy> kFailurePolicyNames[] = {{FailurePolicy::kRetry, "retry"},
                                                                  {FailurePolicy::kDrop, "drop"}};

// A token-count distribution: constant, uniform integers in [lo, hi], or lognormal with the given
// median (exp of the underlying normal's mean) and sigma of the underlying normal, rounded and
// clamped to [1, max].
struct LengthDistribution {
  enum class Kind { kConstant, kUniform, kLognormal } kind = Kind::kConstant;
  std::int64_t constant = 0;
  std::int64_t lo = 0, hi = 0;
  double median = 0, sigma = 0;
  std::int64_t max = 0;
};

struct RequestStreamSpec {
  // Synthetic: arrivals at `rate` requests/s (gamma: coefficient of variation `cv`, 1 = Poisson).
  ArrivalProcess arrival = ArrivalProcess::kPoisson;
  double rate = 0;
  double cv = 1;
  std::int64_t count = 0;
  LengthDistribution prompt, output;
  std::int64_t sessions = 0;  // 0: every request its own session
  std::uint64_t seed = 1;
  // A trace (Azure LLM inference trace CSV: TIMESTAMP, ContextTokens, GeneratedTokens).
  std::string trace;           // resolved path; empty for synthetic
  double time_scale = 1;       // inter-arrival times multiplied by this (0.5: twice the rate)
  std::int64_t limit = 0;      // first N requests of the trace (0: all)
  std::string where;           // JSON path of "requests"
};

struct SchedulerSpec {
  std::int64_t max_batch_tokens = 8192;  // vLLM max_num_batched_tokens
  std::int64_t max_batch_requests = 256; // vLLM max_num_seqs (1: batching off)
  bool chunked_prefill = true;
  std::int64_t block_tokens = 16;        // paged KV block (vLLM block_size)
  double memory_fraction = 0.9;          // of HBM the replica may use (vLLM gpu_memory_utilization)
  Preemption preemption = Preemption::kRecompute;
  KvAdmission admission = KvAdmission::kOnDemand;
};

// One of replica, gpu (cluster GPU index), server (cluster server index), link or switch is set:
// the replicas holding that GPU or server go down; a link (the cable between two named devices,
// both directions) fails in the network the KV transfers cross.
struct FailureEvent {
  int replica = -1;
  int gpu = -1;
  int server = -1;
  std::vector<std::string> link;  // two device names
  std::string device;             // a switch: inside a server, that server's replicas go down; a
                                  // spine or core switch, its links in the network of the transfers
  SimTime at = kTimeZero;
  std::optional<SimTime> until;  // back up then; never when empty
  std::string where;
};

struct FailureSpec {
  std::vector<FailureEvent> events;
  // A failure process: each GPU fails after an exponential time with this mean (none when
  // empty); a replica is down for `repair` after any of its GPUs fails.
  std::optional<LongDuration> mtbf_per_gpu;
  Duration repair{0};
  std::uint64_t seed = 1;
  FailurePolicy policy = FailurePolicy::kRetry;
};

struct Slo {
  Duration ttft{0};   // 0: no bound
  Duration tpot{0};
};

// Prefill/decode disaggregation (Splitwise, DistServe): a pool of prefill replicas takes every
// new request; when its prompt is done (and its first token sampled) its KV cache crosses the
// network to a replica of the decode pool (the scenario's "replicas"), which generates the rest.
struct PrefillPool {
  int count = 0;
  int tp = 1;
  std::optional<int> first_gpu;  // default: right after the decode pool's GPUs
};

struct ServingScenario {
  std::string file;
  std::string name;
  std::string cluster;
  std::vector<std::string> cluster_overrides;
  std::string model;
  wl::Precision precision = wl::Precision::kBf16;
  wl::Precision kv_precision = wl::Precision::kBf16;
  bool expert_parallel = false;  // a mixture's experts spread whole over each replica's tp GPUs
  int replicas = 1;
  int tp = 1;
  int pp = 1;  // pipeline stages per replica: a replica has tp x pp GPUs
  int first_gpu = 0;  // replicas take consecutive GPUs from here
  std::string profile;
  RouterPolicy router = RouterPolicy::kLeastOutstanding;
  SchedulerSpec scheduler;
  RequestStreamSpec requests;
  Slo slo;
  FailureSpec failures;
  std::optional<PrefillPool> prefill;  // disaggregated when set
  int gpus() const { return replicas * tp * pp + (prefill ? prefill->count * prefill->tp : 0); }
};

// Parses a scenario document; relative paths resolve beside `base_dir`. Errors name the file and
// the JSON path (InputError, exit 2).
ServingScenario parse_serving_scenario(const ConfigNode& root, const std::string& base_dir);
// Reads a file and applies "--set /json/pointer=value" overrides.
ServingScenario load_serving_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace cs::drv
