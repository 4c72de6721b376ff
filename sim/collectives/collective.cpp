#include "sim/collectives/collective.h"

namespace cs::coll {

const char* to_string(Op op) {
  switch (op) {
    case Op::kAllReduce: return "all_reduce";
    case Op::kAllGather: return "all_gather";
    case Op::kReduceScatter: return "reduce_scatter";
    case Op::kAllToAll: return "all_to_all";
    case Op::kBroadcast: return "broadcast";
    case Op::kReduce: return "reduce";
    case Op::kSendRecv: return "send_recv";
  }
  return "unknown";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kHalvingDoubling: return "hd";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kHierarchical: return "hierarchical";
    case Algorithm::kNvls: return "nvls";
    case Algorithm::kAuto: return "auto";
  }
  return "unknown";
}

const char* to_string(Protocol p) { return p == Protocol::kSimple ? "simple" : "ll"; }

std::optional<Op> parse_op(std::string_view s) {
  for (Op op : kAllOps) {
    if (s == to_string(op)) return op;
  }
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  for (Algorithm a : kFixedAlgorithms) {
    if (s == to_string(a)) return a;
  }
  if (s == "auto") return Algorithm::kAuto;
  return std::nullopt;
}

double busbw_factor(Op op, std::size_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (op) {
    case Op::kAllReduce: return 2 * (n - 1) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAllToAll: return (n - 1) / n;
    case Op::kBroadcast:
    case Op::kReduce:
    case Op::kSendRecv: return 1;
  }
  return 1;
}

}  // namespace cs::coll
