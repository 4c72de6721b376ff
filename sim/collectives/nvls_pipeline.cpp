#include "sim/collectives/nvls_pipeline.h"

#include <algorithm>

namespace cs::coll {

Bytes nvls_chunk(Bytes size, int channels, int heads, Bytes max_chunk) {
  const std::int64_t ops = static_cast<std::int64_t>(channels) * heads;  // NCCL's concurrentOps
  std::int64_t chunk = max_chunk.value();
  const std::int64_t s = size.value();
  if (s < 64 * ops * chunk && chunk > 65536) chunk = 65536;
  if (s < 8 * ops * chunk && chunk > 32768) chunk = 32768;
  if (s < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  return Bytes{chunk};
}

Bytes nvls_fill_bytes(Bytes size, int channels, int heads, Bytes max_chunk) {
  const std::int64_t per_channel = static_cast<std::int64_t>(heads) * nvls_chunk(size, channels, heads, max_chunk).value();
  return Bytes{2 * static_cast<std::int64_t>(channels) * std::min(size.value(), per_channel)};
}

}  // namespace cs::coll
