// Simulates a serving scenario (drivers/serving_config.h) on the discrete-event engine: requests
// arrive, a router sends each to a replica, every replica runs iteration-level (continuous)
// batching over a paged KV cache, and failures take replicas down (docs/serving.md).
//
// A replica's scheduler, as vLLM's V1 scheduler does it (vllm/v1/core/sched/scheduler.py):
// each iteration first gives its running requests their next tokens (1 when decoding, a chunk of
// the prompt when prefilling, up to the token budget `max_batch_tokens`), then admits waiting
// requests in arrival order while the budget, `max_batch_requests` and free KV blocks allow.
// Without chunked prefill a prompt must fit the budget whole. When a running request needs a
// KV block and none is free, the most recently admitted running request is preempted: its blocks
// are freed and it returns to the head of the queue, to recompute its prompt and the tokens it
// already generated (`recompute`), or with its cache copied to host memory over PCIe and back
// when resumed (`swap`, host memory assumed large enough). A request's first token is sampled
// at the end of the iteration that completes its prompt; each later iteration adds one token.
//
// KV capacity per GPU: HBM x memory_fraction - weights / t - the activations of one iteration
// of max_batch_tokens (the peak of one block's intermediate tensors, 2 bytes each), in blocks of
// block_tokens tokens (kv bytes per token from workloads/inference_cost.h).
//
// Routers: round_robin (over the replicas that are up), least_outstanding (fewest requests
// queued or running; ties in round-robin order), least_kv (fewest KV blocks in use or needed by
// its queue), power_of_two (two replicas drawn at random, the less loaded one; Mitzenmacher
// 2001), session_affinity (a session's requests to one replica, hash of the session modulo the
// replicas up). With no replica up, requests wait at the router.
//
// Failures: a replica goes down at its events' times (or, with a failure process, after an
// exponential time with mean MTBF_gpu / GPUs per replica, for the repair time); its iteration
// in flight is lost, and its requests go back to the router (`retry`, restarting from the prompt;
// their latency still counts from the first arrival) or are lost (`drop`).
#pragma once

#include "drivers/serving_config.h"
#include "results/serving_run.h"

namespace cs::drv {

results::ServingRun simulate_serving(const ServingScenario& s);

}  // namespace cs::drv
