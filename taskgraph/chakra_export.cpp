#include "taskgraph/chakra_export.h"

#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/protobuf_wire.h"

namespace cs::tg {
namespace {

// Chakra's CollectiveCommType numbers (et_def.proto).
std::uint64_t comm_type(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return 0;
    case CollectiveOp::kReduce: return 1;
    case CollectiveOp::kAllGather: return 2;
    case CollectiveOp::kBroadcast: return 5;
    case CollectiveOp::kAllToAll: return 6;
    case CollectiveOp::kReduceScatter: return 7;
    case CollectiveOp::kSendRecv: break;
  }
  throw InternalError("export_chakra: a send_recv collective has no Chakra type");
}

// AttributeProto fields: name 1; uint64 13, double 3, bool 27, string 29.
void put_attr(std::string& node, std::string_view name, std::uint32_t field, std::uint64_t v) {
  std::string a;
  pb::put_bytes_field(a, 1, name);
  pb::put_varint_field(a, field, v);
  pb::put_bytes_field(node, 10, a);
}
void put_uint(std::string& node, std::string_view name, std::uint64_t v) { put_attr(node, name, 13, v); }
void put_bool(std::string& node, std::string_view name, bool v) { put_attr(node, name, 27, v ? 1 : 0); }
void put_string(std::string& node, std::string_view name, std::string_view v) {
  std::string a;
  pb::put_bytes_field(a, 1, name);
  pb::put_bytes_field(a, 29, v);
  pb::put_bytes_field(node, 10, a);
}
void put_double(std::string& node, std::string_view name, double v) {
  std::string a;
  pb::put_bytes_field(a, 1, name);
  pb::put_varint(a, (3u << 3) | 1);  // field 3, I64
  const auto bits = std::bit_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) a += static_cast<char>((bits >> (8 * i)) & 0xff);
  pb::put_bytes_field(node, 10, a);
}
void put_ids(std::string& node, std::uint32_t field, const std::vector<std::uint64_t>& ids) {
  if (ids.empty()) return;
  std::string packed;
  for (std::uint64_t id : ids) pb::put_varint(packed, id);
  pb::put_bytes_field(node, field, packed);
}

}  // namespace

ChakraExport export_chakra(const TaskGraph& g) {
  if (g.mirrored() > 0) throw InternalError("export_chakra: a graph with mirrored ranks (build it without symmetry)");
  ChakraExport out;
  // Group names, unique (pg_name keys the comm-group table).
  std::vector<std::string> pg(g.groups().size());
  std::set<std::string> taken;
  for (std::size_t i = 0; i < g.groups().size(); ++i) {
    pg[i] = g.groups()[i].name;
    if (!taken.insert(pg[i]).second) {
      pg[i] += "#" + std::to_string(i);
      taken.insert(pg[i]);
    }
  }
  out.comm_groups = nlohmann::json::object();
  std::vector<bool> used(g.groups().size(), false);
  for (const Op& op : g.ops()) {
    if (op.kind == OpKind::kCollective) used[op.group] = true;
  }
  for (std::size_t i = 0; i < g.groups().size(); ++i) {
    if (used[i]) out.comm_groups[pg[i]] = g.groups()[i].ranks;
  }
  std::multimap<OpId, const Annotation*> notes;
  for (const Annotation& a : g.annotations()) notes.emplace(a.op, &a);

  out.traces.assign(g.ranks(), {});
  for (std::uint32_t r = 0; r < g.ranks(); ++r) {
    std::string meta;
    pb::put_bytes_field(meta, 1, "0.0.4");
    {
      std::string a;
      pb::put_bytes_field(a, 1, "cs_issue");
      pb::put_bytes_field(a, 29, to_string(g.issue_order()));
      pb::put_bytes_field(meta, 2, a);
    }
    pb::put_record(out.traces[r], meta);
  }
  std::vector<std::uint64_t> last(static_cast<std::size_t>(g.ranks()) * kStreamCount, UINT64_MAX);
  std::string node;
  std::vector<std::uint64_t> deps, ctrl;
  for (OpId id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    node.clear();
    pb::put_varint_field(node, 1, id);
    pb::put_bytes_field(node, 2, g.name_of(id));
    std::uint64_t type = 4;
    switch (op.kind) {
      case OpKind::kCompute: case OpKind::kDelay: type = 4; break;
      case OpKind::kCollective: type = 7; break;
      case OpKind::kSend: type = 5; break;
      case OpKind::kRecv: type = 6; break;
      case OpKind::kLoad: type = 2; break;
    }
    pb::put_varint_field(node, 3, type);
    deps.clear();
    for (OpId d : g.deps(id)) {
      if (g.op(d).rank != op.rank) throw InternalError("export_chakra: a dependency across ranks (op " + std::to_string(id) + ")");
      deps.push_back(d);
    }
    std::uint64_t& prev = last[op.rank * kStreamCount + static_cast<std::uint32_t>(op.stream)];
    ctrl.clear();
    if (prev != UINT64_MAX) ctrl.push_back(prev);
    prev = id;
    put_ids(node, 4, ctrl);
    put_ids(node, 5, deps);
    if (op.kind == OpKind::kDelay) pb::put_varint_field(node, 7, static_cast<std::uint64_t>(std::llround(to_seconds(op.duration) * 1e6)));
    put_bool(node, "is_cpu_op", op.stream == Stream::kHost);
    put_string(node, "cs_stream", to_string(op.stream));
    switch (op.kind) {
      case OpKind::kCompute: {
        const double f = op.flops.value();
        put_uint(node, "num_ops", static_cast<std::uint64_t>(std::llround(f)));
        if (f != std::round(f)) put_double(node, "cs_flops", f);
        put_uint(node, "tensor_size", static_cast<std::uint64_t>(op.bytes.value()));
        put_string(node, "cs_class", to_string(op.compute_class));
        if (op.gemm_mix != kNoGemmMix) {
          std::string mix;
          for (const GemmShape& sh : g.gemm_mix_of(op)) {
            mix += (mix.empty() ? "" : ";") + std::to_string(sh.m) + "," + std::to_string(sh.n) + "," + std::to_string(sh.k);
          }
          put_string(node, "cs_gemm_mix", mix);
        }
        break;
      }
      case OpKind::kDelay:
        put_uint(node, "cs_duration_ps", static_cast<std::uint64_t>(op.duration.count()));
        break;
      case OpKind::kCollective:
        put_uint(node, "comm_type", comm_type(op.collective));
        put_uint(node, "comm_size", static_cast<std::uint64_t>(op.bytes.value()));
        put_string(node, "pg_name", pg[op.group]);
        if (op.algorithm != CollectiveAlgorithm::kAuto) put_string(node, "cs_algorithm", to_string(op.algorithm));
        break;
      case OpKind::kSend:
      case OpKind::kRecv:
        put_uint(node, op.kind == OpKind::kSend ? "comm_dst" : "comm_src", op.peer);
        put_uint(node, "comm_size", static_cast<std::uint64_t>(op.bytes.value()));
        put_uint(node, "comm_tag", op.tag);
        break;
      case OpKind::kLoad:
        put_uint(node, "tensor_size", static_cast<std::uint64_t>(op.bytes.value()));
        break;
    }
    for (auto [it, end] = notes.equal_range(id); it != end; ++it) put_string(node, it->second->name, it->second->value);
    pb::put_record(out.traces[op.rank], node);
  }
  return out;
}

}  // namespace cs::tg
