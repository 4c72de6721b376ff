// The TaskGraph: the contract between workloads and the runtime (what Chakra execution traces
// are to ASTRA-sim), small, documented and serializable (docs/taskgraph-format.md).
//
// A graph holds, for `ranks` ranks (GPUs of one job, numbered 0..ranks-1), and optionally
// `mirrored` further ranks (numbered ranks..ranks+mirrored-1) that are identical to simulated
// ones and have no ops of their own: they take part in the transfers of the collectives whose
// groups list them, arriving with the group's simulated members (symmetry: identical
// data-parallel replicas and tensor-parallel ranks are simulated once). `symmetries` are
// permutations of all ranks under which the job is invariant, held as shifts over a rank grid
// (rank_symmetries.h): every transfer a simulated op
// makes is also made by each of its images (deduplicated), so the network carries what the full
// job would; only the bookkeeping of ops is done once:
//   - process groups: ordered rank lists that run collectives together (one per TP, DP, ... group);
//   - ops, each on one rank and one stream, with dependencies on earlier ops:
//       compute     FLOPs and memory traffic of one kernel or a fused group of kernels;
//       collective  one member's part of a collective on a process group; the members' ops
//                   share an `instance` id and the collective starts when all have arrived;
//       send, recv  a point-to-point transfer, matched by (sender, receiver, tag);
//       delay       a fixed duration (host work);
//       load        `bytes` read from the cluster's storage into the rank's GPU (a transfer on
//                   the network from a storage device, on the data stream).
// Streams behave like CUDA streams: the ops of one (rank, stream) run one at a time in the order
// they were added; different streams of a rank overlap. Sends and recvs are posted in stream
// order but asynchronously (like isend/irecv): the stream moves on once they are posted, they
// finish when their transfer does, and ops that depend on them wait for that. An op may start when it is first in its
// stream, all its dependencies have finished, and, for collectives and point-to-point ops, its
// peers have arrived too.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/collective_kind.h"
#include "core/enum_names.h"
#include "core/units.h"
#include "taskgraph/rank_symmetries.h"

namespace cs::tg {

// kHost: the CPU thread that launches work (imported traces' CPU operators).
enum class Stream : std::uint8_t { kCompute, kTp, kCp, kPp, kDp, kEp, kData, kHost };
inline constexpr int kStreamCount = 8;
enum class OpKind : std::uint8_t { kCompute, kCollective, kSend, kRecv, kDelay, kLoad };
// What a compute op is, for the compute model's efficiency.
enum class ComputeClass : std::uint8_t { kGemm, kAttention, kElementwise, kOptimizer };

inline constexpr EnumName<Stream> kStreamNames[] = {{Stream::kCompute, "compute"}, {Stream::kTp, "tp"}, {Stream::kCp, "cp"},
                                                   {Stream::kPp, "pp"},           {Stream::kDp, "dp"}, {Stream::kEp, "ep"},
                                                   {Stream::kData, "data"},       {Stream::kHost, "host"}};
inline constexpr EnumName<OpKind> kOpKindNames[] = {{OpKind::kCompute, "compute"}, {OpKind::kCollective, "collective"},
                                                   {OpKind::kSend, "send"},       {OpKind::kRecv, "recv"},
                                                   {OpKind::kDelay, "delay"},     {OpKind::kLoad, "load"}};
inline constexpr EnumName<ComputeClass> kComputeClassNames[] = {{ComputeClass::kGemm, "gemm"},
                                                               {ComputeClass::kAttention, "attention"},
                                                               {ComputeClass::kElementwise, "elementwise"},
                                                               {ComputeClass::kOptimizer, "optimizer"}};
// How the ops of one (rank, stream) are issued (docs/taskgraph-format.md, "Issue order"):
//   stream_order  one at a time, in the order they were added (CUDA streams; generated graphs);
//   ready_first   one at a time, the earliest-added op whose dependencies are done first (a
//                 resource that serves whatever is ready: ASTRA-sim's replay of Chakra traces,
//                 which runs one CPU operator, one GPU kernel and one communication per rank);
//   dependencies  every op as soon as its dependencies are done (streams only label the ops;
//                 the replay's time is then the graph's critical path).
enum class IssueOrder : std::uint8_t { kStreamOrder, kReadyFirst, kDependencies };
inline constexpr EnumName<IssueOrder> kIssueOrderNames[] = {{IssueOrder::kStreamOrder, "stream_order"},
                                                           {IssueOrder::kReadyFirst, "ready_first"},
                                                           {IssueOrder::kDependencies, "dependencies"}};
inline const char* to_string(IssueOrder o) { return enum_name(kIssueOrderNames, o); }
inline const char* to_string(Stream s) { return enum_name(kStreamNames, s); }
inline const char* to_string(OpKind k) { return enum_name(kOpKindNames, k); }
inline const char* to_string(ComputeClass c) { return enum_name(kComputeClassNames, c); }

using OpId = std::uint32_t;

// A fact an op carries that the simulation does not use (an imported trace's attributes it does
// not interpret, kept for the reader of the graph): name and value as text.
struct Annotation {
  OpId op = 0;
  std::string name;
  std::string value;
  friend bool operator==(const Annotation&, const Annotation&) = default;
};

// One matrix multiply C[m x n] = A[m x k] B[k x n]: 2 m n k FLOPs.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};
// The GEMMs a compute op stands for (say, one transformer block's projections), so that a
// calibrated compute model can look their shapes up; the op's FLOPs may be any share of them.
inline constexpr std::uint32_t kNoGemmMix = UINT32_MAX;

struct ProcessGroup {
  std::string name;                 // "tp3", "dp0", ...
  Stream stream = Stream::kDp;      // the parallel dimension it serves
  std::vector<std::uint32_t> ranks; // in collective rank order
};

struct Op {
  OpKind kind = OpKind::kCompute;
  Stream stream = Stream::kCompute;
  ComputeClass compute_class = ComputeClass::kGemm;
  CollectiveOp collective = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::uint32_t rank = 0;
  std::uint32_t name = 0;           // index into TaskGraph::names()
  Flops flops{0};                   // compute
  Bytes bytes{0};                   // compute: memory traffic; collective: S; send/recv: payload
  Duration duration{0};             // delay
  std::uint32_t group = 0;          // collective: process group index
  std::uint32_t gemm_mix = kNoGemmMix;  // compute: index into TaskGraph::gemm_mixes()
  std::uint64_t instance = 0;       // collective: shared by the members' ops
  std::uint32_t peer = 0;           // send: receiver; recv: sender
  std::uint64_t tag = 0;            // send/recv matching
  std::uint32_t deps_begin = 0, deps_count = 0;
};

class TaskGraph {
 public:
  explicit TaskGraph(std::uint32_t ranks = 0, std::uint32_t mirrored = 0) : ranks_(ranks), mirrored_(mirrored) {}

  std::uint32_t ranks() const { return ranks_; }           // simulated ranks (they have ops)
  std::uint32_t mirrored() const { return mirrored_; }     // ranks only in collective groups
  std::uint32_t all_ranks() const { return ranks_ + mirrored_; }
  // How many of a group's ranks are simulated (the member ops a collective instance has).
  std::uint32_t simulated_members(std::uint32_t group) const;
  // The permutations of all ranks that map the job onto itself (see the header comment).
  void set_symmetries(RankSymmetries symmetries) { symmetries_ = std::move(symmetries); }
  const RankSymmetries& symmetries() const { return symmetries_; }
  IssueOrder issue_order() const { return issue_; }
  void set_issue_order(IssueOrder o) { issue_ = o; }
  std::uint32_t add_group(ProcessGroup g);
  // A list of GEMM shapes compute ops can refer to; equal lists share one index.
  std::uint32_t add_gemm_mix(std::vector<GemmShape> shapes);
  const std::vector<std::vector<GemmShape>>& gemm_mixes() const { return gemm_mixes_; }
  std::span<const GemmShape> gemm_mix_of(const Op& op) const {
    if (op.gemm_mix == kNoGemmMix) return {};
    return gemm_mixes_[op.gemm_mix];
  }
  void set_gemm_mix(OpId id, std::uint32_t mix);
  OpId add_compute(std::uint32_t rank, std::string_view name, Flops flops, Bytes memory,
                   ComputeClass cls, std::span<const OpId> deps = {});
  OpId add_delay(std::uint32_t rank, Stream stream, std::string_view name, Duration d,
                 std::span<const OpId> deps = {});
  // One member's op of a collective; every member of `group` must add one with the same instance.
  OpId add_collective(std::uint32_t rank, std::uint32_t group, std::string_view name, CollectiveOp op,
                      Bytes size, std::uint64_t instance, std::span<const OpId> deps = {},
                      CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);
  // Reads `bytes` from storage into `rank`'s GPU on the data stream.
  OpId add_load(std::uint32_t rank, std::string_view name, Bytes bytes, std::span<const OpId> deps = {});
  OpId add_send(std::uint32_t rank, Stream stream, std::uint32_t to, Bytes bytes, std::uint64_t tag,
                std::string_view name, std::span<const OpId> deps = {});
  OpId add_recv(std::uint32_t rank, Stream stream, std::uint32_t from, Bytes bytes, std::uint64_t tag,
                std::string_view name, std::span<const OpId> deps = {});

  // Room for `ops` ops and `deps` dependencies (a builder that knows its size avoids regrowth).
  void reserve(std::size_t ops, std::size_t deps) {
    ops_.reserve(ops);
    deps_.reserve(deps);
  }
  void annotate(OpId id, std::string name, std::string value);
  const std::vector<Annotation>& annotations() const { return annotations_; }  // in the order added

  std::size_t size() const { return ops_.size(); }
  const Op& op(OpId id) const { return ops_[id]; }
  std::span<const Op> ops() const { return ops_; }
  std::span<const OpId> deps(OpId id) const {
    return {deps_.data() + ops_[id].deps_begin, ops_[id].deps_count};
  }
  const std::vector<ProcessGroup>& groups() const { return groups_; }
  const std::string& name_of(OpId id) const { return names_[ops_[id].name]; }

  // Checks references (ranks, groups, deps on earlier ops, collective members) and throws
  // ConfigError naming `file` and the JSON path of the first problem.
  void validate(const std::string& file = "task graph") const;

  nlohmann::json to_json() const;
  static TaskGraph from_json(const nlohmann::json& j, const std::string& file);

 private:
  OpId push(Op op, std::string_view name, std::span<const OpId> deps);
  // A send (peer: the receiver) or a recv (peer: the sender).
  OpId add_point_to_point(OpKind kind, std::uint32_t rank, Stream stream, std::uint32_t peer, Bytes bytes,
                          std::uint64_t tag, std::string_view name, std::span<const OpId> deps);
  std::uint32_t intern(std::string_view name);

  std::uint32_t ranks_;
  std::uint32_t mirrored_;
  IssueOrder issue_ = IssueOrder::kStreamOrder;
  std::vector<Annotation> annotations_;
  RankSymmetries symmetries_;
  std::vector<ProcessGroup> groups_;
  std::vector<std::vector<GemmShape>> gemm_mixes_;
  std::vector<Op> ops_;
  std::vector<OpId> deps_;
  std::vector<std::string> names_;
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> name_index_;  // for interning
};

}  // namespace cs::tg
