// Chakra execution traces (chakra_trace.h) onto the TaskGraph (task_graph.h), so that a trace
// recorded on one machine replays on any cluster clustersim describes (docs/chakra.md).
//
// One trace file per rank, rank r = the r-th trace. Nodes become ops in an order that follows
// their data dependencies, the smallest node id first (ChakraTrace::topological_order), the
// ranks' orders merged by (node id, rank). A node's data dependencies become the op's
// dependencies; control dependencies are counted and, unless asked for, not enforced (in traces
// converted from PyTorch they are the operator hierarchy, chakra_trace.h); when enforced, those
// on nodes the trace does not hold and on the node itself are left out.
//
//   COMP, CPU operator (is_cpu_op)      delay of the recorded duration on the rank's host stream
//   COMP, GPU kernel                     delay of the recorded duration on the compute stream; a
//                                        compute op (timed by the compute model) when its FLOPs
//                                        are known (num_ops, or a GEMM's input shapes) and
//                                        re-timing is asked for, or when it has no duration
//   COMM_COLL with comm_type, comm_size  collective on its process group (the dp stream): the
//                                        k-th collective of a group on each member rank is one
//                                        collective; comm_size is taken as nccl-tests' S
//   COMM_COLL otherwise, host c10d calls delay of the recorded duration (dp stream; host stream)
//   COMM_SEND/RECV with comm_dst/comm_src send/recv (pp stream), matched by (sender, receiver,
//                 and comm_size          comm_tag)
//   MEM_LOAD with tensor_size            a load (read from storage, data stream) under the rule of
//                                        GPU kernels; otherwise, and MEM_STORE, a delay of the
//                                        recorded duration on the data stream
//   METADATA, INVALID, unknown types     no op: counted by type, dependencies pass through
//
// Process groups: the collectives' pg_name attribute names them; their ranks come from a
// comm-group table (ASTRA-sim's comm-group configuration: {"name": [ranks]}) or, without one, are
// inferred as the ranks whose traces hold collectives of that name (reported). Without pg_name a
// collective is on the group of all ranks. A trace of fewer ranks than the job (`world`, one
// file) is replicated: the other ranks are mirrored copies of rank 0 (task_graph.h), and every
// collective is on the whole world.
//
// Attributes the mapping does not read are kept as annotations. clustersim's own exports
// (chakra_export.h) carry cs_* attributes (stream, compute class, exact durations, issue order)
// that make an import give back the exported graph.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "taskgraph/chakra_trace.h"
#include "taskgraph/task_graph.h"

namespace cs::tg {

struct ChakraImportOptions {
  bool retime = false;                  // GPU kernels with known FLOPs become compute ops
  bool recorded_communication = false;  // collectives and point-to-point as delays of their recorded time
  bool control_dependencies = false;    // enforce control dependencies too
  std::optional<IssueOrder> issue;      // default: the trace's own (cs_issue), else ready_first
  std::uint32_t world = 0;              // ranks of the job; 0: one per trace
  std::map<std::string, std::vector<std::uint32_t>> comm_groups;  // pg_name -> ranks; empty: inferred
};

struct ChakraImportReport {
  std::uint32_t ranks = 0;  // traces read
  std::uint64_t nodes = 0;
  std::array<std::uint64_t, kChakraNodeTypes> by_type{};
  std::map<std::uint64_t, std::uint64_t> unknown_types;  // type number beyond the schema -> nodes
  std::uint64_t host_ops = 0;            // CPU operators and host-side communication calls, as recorded
  std::uint64_t kernels_recorded = 0;    // GPU kernels as recorded
  std::uint64_t kernels_computed = 0;    // GPU kernels timed by the compute model
  std::uint64_t collectives = 0;         // collective member ops on the network
  std::uint64_t communication_recorded = 0;  // communication as recorded (no size, unsupported, or asked)
  std::uint64_t point_to_point = 0;      // sends and receives on the network
  std::uint64_t memory_ops = 0;          // MEM_LOAD/STORE (loads from storage, or as recorded)
  std::uint64_t skipped = 0;             // METADATA, INVALID and unknown types
  std::uint64_t data_dependencies = 0;   // kept (as listed)
  std::uint64_t control_dependencies = 0;  // as listed
  bool control_enforced = false;
  std::uint64_t annotations = 0;
  std::vector<std::string> groups;       // "dp0: ranks 0-7, 12 collectives (inferred from pg_name)"
};

struct ChakraImport {
  TaskGraph graph;
  ChakraImportReport report;
};

// Traces of ranks 0..n-1 in order. Input errors (exit 2) name the trace's file and the node id.
ChakraImport import_chakra(std::span<const ChakraTrace> traces, const ChakraImportOptions& options);

// The comm-group table of a JSON file ({"name": [ranks], ...}); ConfigError at its path.
std::map<std::string, std::vector<std::uint32_t>> read_comm_groups(const std::string& path);

}  // namespace cs::tg
