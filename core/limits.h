// The largest inputs clustersim accepts (docs/cli.md, "Limits"). Each check estimates what an
// input asks for before anything is allocated and refuses beyond its limit with exit 2 and the
// JSON path or option, so that a small file cannot ask for terabytes or hours.
//
// The defaults cover the largest studies clustersim is built for (131,072 GPUs, with room); a
// user with a larger machine raises them with the environment variable
//   CLUSTERSIM_LIMITS="gpus=524288,links=67108864,connections=33554432,streamed_connections=134217728,micro_batches=65536,layer_passes=16777216,file=1GiB"
// (any subset, comma-separated). A malformed value there is an InputError naming the variable.
#pragma once

#include <cstdint>
#include <string>

#include "core/units.h"

namespace cs {

struct Limits {
  std::int64_t gpus = std::int64_t{1} << 18;         // GPUs in a cluster (262,144)
  std::int64_t links = std::int64_t{1} << 25;        // directed links of a cluster, fabric included (33.5 M)
  std::int64_t connections = std::int64_t{1} << 22;  // connections of one all-to-all held at once (4.2 M: 4,096 ranks fit)
  // Connections of one all-to-all prepared in parts (one sending server's at a time: static ECMP,
  // no trace; CollectiveSimulator::prepares_in_parts), which bound its time, not its memory
  // (33.5 M: 16,384 ranks on 2,048 servers fit, about a minute).
  std::int64_t streamed_connections = std::int64_t{1} << 25;
  Bytes file_bytes{std::int64_t{256} << 20};         // any input file (256 MiB)
  std::int64_t micro_batches = 16384;                // micro-batches per iteration of a plan
  std::int64_t layer_passes = std::int64_t{1} << 20;  // micro-batches x layers per pipeline stage (1 M: about 3 min)
  std::int64_t requests = std::int64_t{1} << 22;     // requests of a serving scenario (4.2 M: about 1 GB, 1 min)
  std::int64_t jobs = std::int64_t{1} << 21;         // jobs of a scheduling scenario (2.1 M)
};

// The limits in force: the defaults, with CLUSTERSIM_LIMITS applied (read once).
const Limits& limits();

// Parses a CLUSTERSIM_LIMITS value over the defaults (exposed for tests).
Limits parse_limits(const std::string& text);

// "…; raise it with CLUSTERSIM_LIMITS=<name>=N (docs/cli.md, "Limits")", for messages.
std::string limit_hint(const char* name);

}  // namespace cs
