// Builds a serving scenario from JSON text for the tests (bundled cluster and model names).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "drivers/serving_config.h"

namespace cs::test {

inline drv::ServingScenario scenario(const nlohmann::json& j) {
  const ConfigDocument doc = ConfigDocument::from_json(j, "scenario.json");
  return drv::parse_serving_scenario(doc.root(), "");
}

// One Llama 3 8B replica on a DGX H100 GPU, a constant-length Poisson stream.
inline nlohmann::json small_scenario(double rate, std::int64_t count, std::int64_t prompt, std::int64_t output) {
  return {{"cluster", "dgx-h100"},
          {"model", "llama3-8b"},
          {"replicas", {{"count", 1}, {"tp", 1}}},
          {"requests", {{"arrival", "poisson"}, {"rate", rate}, {"count", count}, {"prompt_tokens", prompt},
                        {"output_tokens", output}, {"seed", 7}}}};
}

}  // namespace cs::test
