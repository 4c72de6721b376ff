// The requests a serving scenario sends: generated (Poisson or gamma arrivals, token-count
// distributions) or read from a trace in the Azure LLM inference trace format (docs/serving.md,
// "Request streams"). Deterministic: the same spec and seed give the same requests.
//
// Gamma inter-arrival times with mean 1/rate and coefficient of variation cv have shape 1/cv^2
// and scale cv^2/rate (cv = 1 is Poisson); sampled by Marsaglia and Tsang's method (ACM TOMS
// 26(3), 2000) on the project's own RNG, so results do not depend on the standard library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "drivers/serving_config.h"

namespace cs::drv {

struct ServingRequest {
  std::int64_t id = 0;
  SimTime arrival = kTimeZero;
  std::int64_t prompt = 0;   // tokens
  std::int64_t output = 0;   // tokens to generate (0: the prefill only)
  std::uint64_t session = 0;
};

// The scenario's requests, in arrival order.
std::vector<ServingRequest> make_requests(const RequestStreamSpec& spec);

// Reads an Azure LLM inference trace (header TIMESTAMP,ContextTokens,GeneratedTokens; timestamps
// "YYYY-MM-DD HH:MM:SS[.fraction]" in order). Arrivals are relative to the first row, times
// `time_scale`; a request with zero generated tokens runs its prefill only. Errors name the file
// and the line.
std::vector<ServingRequest> read_azure_trace(const std::string& path, double time_scale, std::int64_t limit);

}  // namespace cs::drv
