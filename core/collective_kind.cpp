#include "core/collective_kind.h"

namespace cs {

double busbw_factor(CollectiveOp op, std::size_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (op) {
    case CollectiveOp::kAllReduce: return 2 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kSendRecv: return 1;
  }
  return 1;
}

}  // namespace cs
