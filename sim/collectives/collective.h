// Collective operations, algorithms and protocols, and nccl-tests' size conventions.
//
// S (the "size" of a collective) follows nccl-tests (doc/PERFORMANCE.md):
//   all_reduce, broadcast, reduce, send_recv: S = the buffer of one rank
//   all_gather:      S = the gathered output of one rank (n x the contribution)
//   reduce_scatter:  S = the input of one rank (n x the output)
//   all_to_all:      S = the buffer of one rank (S/n to each peer)
// algbw = S / t.  busbw = algbw x factor, with factor 2(n-1)/n for all_reduce, (n-1)/n for
// all_gather, reduce_scatter and all_to_all, 1 for broadcast, reduce and send_recv.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "topology/ids.h"

namespace cs::coll {

enum class Op { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kReduce, kSendRecv };
enum class Algorithm { kRing, kTree, kHalvingDoubling, kDirect, kHierarchical, kNvls, kAuto };
// NCCL's protocols as the model sees them: Simple moves data at full rate with a per-step
// latency of one pipeline chunk; LL (low latency) sends 8-byte lines carrying 4 bytes of data
// with flags, so it puts twice the bytes on the wire with a much smaller per-step latency.
enum class Protocol { kSimple, kLowLatency };

inline constexpr Op kAllOps[] = {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAllToAll,
                                 Op::kBroadcast, Op::kReduce,    Op::kSendRecv};
inline constexpr Algorithm kFixedAlgorithms[] = {Algorithm::kRing, Algorithm::kTree,
                                                 Algorithm::kHalvingDoubling, Algorithm::kDirect,
                                                 Algorithm::kHierarchical, Algorithm::kNvls};

const char* to_string(Op op);
const char* to_string(Algorithm a);
const char* to_string(Protocol p);
std::optional<Op> parse_op(std::string_view s);              // "all_reduce", ...
std::optional<Algorithm> parse_algorithm(std::string_view s);  // "ring", "tree", "hd", ...

// nccl-tests' bus-bandwidth factor for n ranks.
double busbw_factor(Op op, std::size_t ranks);

struct CollectiveSpec {
  Op op = Op::kAllReduce;
  Bytes size{0};                      // S, nccl-tests' convention above
  std::vector<topo::NodeId> ranks;    // GPUs, in rank order
  Algorithm algorithm = Algorithm::kAuto;
  std::size_t root = 0;               // broadcast/reduce root; send_recv sends ranks[0] -> ranks[1]
  std::uint64_t label = 0;            // salts ECMP hashing, so concurrent collectives differ
};

}  // namespace cs::coll
