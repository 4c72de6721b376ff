// A collective as the simulator runs it: the operation, its size, its ranks and the algorithm
// (core/collective_kind.h holds the operations, the algorithms and nccl-tests' conventions),
// and NCCL's protocols.
#pragma once

#include <cstdint>
#include <vector>

#include "core/collective_kind.h"
#include "core/enum_names.h"
#include "core/ids.h"
#include "core/units.h"

namespace cs::coll {

// NCCL's protocols as the model sees them: Simple moves data at full rate with a per-step
// latency of one pipeline chunk; LL (low latency) sends 8-byte lines carrying 4 bytes of data
// with flags, so it puts twice the bytes on the wire with a much smaller per-step latency.
enum class Protocol { kSimple, kLowLatency };
inline constexpr EnumName<Protocol> kProtocolNames[] = {{Protocol::kSimple, "simple"}, {Protocol::kLowLatency, "ll"}};
inline const char* to_string(Protocol p) { return enum_name(kProtocolNames, p); }
// NCCL runs its NVLS algorithms (in-switch reduction, and NVLS-tree across servers) with the
// Simple protocol only (src/graph/tuning.cc).
inline bool simple_protocol_only(CollectiveAlgorithm a) {
  return a == CollectiveAlgorithm::kNvls || a == CollectiveAlgorithm::kNvlsTree;
}

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Bytes size{0};                      // S, nccl-tests' convention (core/collective_kind.h)
  std::vector<topo::NodeId> ranks;    // GPUs, in rank order
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::size_t root = 0;               // broadcast/reduce root; send_recv sends ranks[0] -> ranks[1] (more ranks: each to the next, a ring shift)
  std::uint64_t label = 0;            // salts ECMP hashing, so concurrent collectives differ
};

}  // namespace cs::coll
