#include "results/graph_trace.h"

#include "results/chrome_trace.h"

namespace cs::results {

std::string graph_trace_json(const tg::TaskGraph& g, const tg::Timeline& timeline, std::span<const std::string> process_names) {
  ChromeTrace trace;
  for (std::uint32_t r = 0; r < g.ranks(); ++r) {
    trace.name_process(static_cast<int>(r), process_names[r]);
    for (int k = 0; k < tg::kStreamCount; ++k) trace.name_track(static_cast<int>(r), k, tg::to_string(static_cast<tg::Stream>(k)));
  }
  for (tg::OpId id = 0; id < g.size(); ++id) {
    const tg::Op& op = g.op(id);
    const tg::OpRecord& rec = timeline[id];
    if (rec.end <= rec.start) continue;
    nlohmann::json args = {{"kind", tg::to_string(op.kind)}};
    if (op.kind == tg::OpKind::kCompute) args["flops"] = op.flops.value();
    if (op.bytes.value() > 0) args["bytes"] = op.bytes.value();
    if (op.kind == tg::OpKind::kCollective) args["waited_for_peers_us"] = to_seconds(rec.start - rec.arrival) * 1e6;
    trace.span(static_cast<int>(op.rank), static_cast<int>(op.stream), g.name_of(id), rec.start, rec.end - rec.start, std::move(args));
  }
  return trace.dump();
}

}  // namespace cs::results
