// The names of collective operations and of the algorithms that run them, shared by the task
// graph (the contract between workloads and the simulator), the collective simulator,
// calibration profiles and the command line; and nccl-tests' size and bandwidth conventions.
//
// S (the "size" of a collective) follows nccl-tests (doc/PERFORMANCE.md):
//   all_reduce, broadcast, reduce, send_recv: S = the buffer of one rank
//   all_gather:      S = the gathered output of one rank (n x the contribution)
//   reduce_scatter:  S = the input of one rank (n x the output)
//   all_to_all:      S = the buffer of one rank (S/n to each peer)
// algbw = S / t.  busbw = algbw x factor, with factor 2(n-1)/n for all_reduce, (n-1)/n for
// all_gather, reduce_scatter and all_to_all, 1 for broadcast, reduce and send_recv.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "core/enum_names.h"

namespace cs {

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kReduce, kSendRecv };
enum class CollectiveAlgorithm { kRing, kTree, kHalvingDoubling, kDirect, kHierarchical, kNvls, kNvlsTree, kCollnet, kAuto };

inline constexpr EnumName<CollectiveOp> kCollectiveOpNames[] = {
    {CollectiveOp::kAllReduce, "all_reduce"},     {CollectiveOp::kAllGather, "all_gather"},
    {CollectiveOp::kReduceScatter, "reduce_scatter"}, {CollectiveOp::kAllToAll, "all_to_all"},
    {CollectiveOp::kBroadcast, "broadcast"},       {CollectiveOp::kReduce, "reduce"},
    {CollectiveOp::kSendRecv, "send_recv"}};
// The fixed algorithms first, then "auto" (the fastest that applies, as NCCL's tuner picks).
inline constexpr EnumName<CollectiveAlgorithm> kCollectiveAlgorithmNames[] = {
    {CollectiveAlgorithm::kRing, "ring"},       {CollectiveAlgorithm::kTree, "tree"},
    {CollectiveAlgorithm::kHalvingDoubling, "hd"}, {CollectiveAlgorithm::kDirect, "direct"},
    {CollectiveAlgorithm::kHierarchical, "hierarchical"}, {CollectiveAlgorithm::kNvls, "nvls"},
    {CollectiveAlgorithm::kNvlsTree, "nvls_tree"}, {CollectiveAlgorithm::kCollnet, "collnet"},
    {CollectiveAlgorithm::kAuto, "auto"}};

inline constexpr CollectiveOp kCollectiveOps[] = {
    CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll,
    CollectiveOp::kBroadcast, CollectiveOp::kReduce,    CollectiveOp::kSendRecv};
inline constexpr CollectiveAlgorithm kFixedCollectiveAlgorithms[] = {
    CollectiveAlgorithm::kRing,   CollectiveAlgorithm::kTree,         CollectiveAlgorithm::kHalvingDoubling,
    CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kNvls,
    CollectiveAlgorithm::kNvlsTree, CollectiveAlgorithm::kCollnet};

inline const char* to_string(CollectiveOp op) { return enum_name(kCollectiveOpNames, op); }
inline const char* to_string(CollectiveAlgorithm a) { return enum_name(kCollectiveAlgorithmNames, a); }
inline std::optional<CollectiveOp> parse_collective_op(std::string_view s) { return parse_enum(kCollectiveOpNames, s); }
inline std::optional<CollectiveAlgorithm> parse_collective_algorithm(std::string_view s) {
  return parse_enum(kCollectiveAlgorithmNames, s);
}

// nccl-tests' bus-bandwidth factor for n ranks (see the top of this file).
double busbw_factor(CollectiveOp op, std::size_t ranks);

}  // namespace cs
