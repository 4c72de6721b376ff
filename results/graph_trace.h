// The timeline of a TaskGraph run as a Chrome/Perfetto trace (results/chrome_trace.h): one
// process per simulated rank, one track per stream, one span per op that took time.
#pragma once

#include <span>
#include <string>

#include "taskgraph/task_graph.h"
#include "taskgraph/timeline.h"

namespace cs::results {

// `process_names[r]` names simulated rank r's process ("rank 3 node0/gpu3").
std::string graph_trace_json(const tg::TaskGraph& graph, const tg::Timeline& timeline, std::span<const std::string> process_names);

}  // namespace cs::results
