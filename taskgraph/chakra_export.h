// A TaskGraph as Chakra execution traces (the format ASTRA-sim replays), one per rank, so that
// clustersim's generated workloads can be run side by side in other simulators
// (docs/chakra.md, "Export"). The inverse of chakra_import.h: importing the export gives back
// the graph's ops, dependencies, sizes, streams and groups.
//
// Each op is one node, its id the op's id (unique across the ranks' files), its data
// dependencies the op's dependencies (a graph's dependencies stay on their rank; sends and
// receives carry data across ranks), and as control dependency the previous op of its stream
// (CUDA stream order, for replayers that honour control dependencies):
//   compute     COMP: num_ops (FLOPs), tensor_size (bytes), no duration (timed by the replayer)
//   delay       COMP with its duration (is_cpu_op on the host stream)
//   collective  COMM_COLL: comm_type, comm_size (nccl-tests' S), pg_name (the group's name)
//   send/recv   COMM_SEND/COMM_RECV: comm_dst/comm_src, comm_size, comm_tag
//   load        MEM_LOAD: tensor_size
// and cs_* attributes for what Chakra has no field for: cs_stream, cs_class, cs_duration_ps
// (exact), cs_flops (FLOPs that are not whole), cs_gemm_mix (the GEMM shapes "m,n,k;m,n,k" a
// compute op's time is looked up by), cs_algorithm (a fixed one); the global metadata says
// cs_issue (the issue order). Annotations become string attributes. The groups' ranks go to a
// comm-group table ({"pg_name": [ranks]}, ASTRA-sim's comm-group configuration).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskgraph/task_graph.h"

namespace cs::tg {

struct ChakraExport {
  std::vector<std::string> traces;  // the file of rank r, as bytes
  nlohmann::json comm_groups;       // {"pg_name": [ranks], ...}
};

// A graph without mirrored ranks (build it without symmetry); InternalError otherwise.
ChakraExport export_chakra(const TaskGraph& graph);

}  // namespace cs::tg
