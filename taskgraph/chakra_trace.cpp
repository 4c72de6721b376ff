#include "taskgraph/chakra_trace.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <unordered_map>
#include <utility>

#include "core/errors.h"
#include "core/input_file.h"
#include "core/protobuf_wire.h"

namespace cs::tg {
namespace {

using pb::Field;
using pb::WireType;

[[noreturn]] void fail_at(const std::string& file, std::uint64_t offset, const std::string& why) {
  throw InputError(file, "byte " + std::to_string(offset), why);
}

void expect(const Field& f, WireType t, const char* what, const std::string& file) {
  if (f.type != t) {
    fail_at(file, f.offset, std::string(what) + " (field " + std::to_string(f.number) + ") has wire type " +
                                std::to_string(static_cast<int>(f.type)) + ", not " + std::to_string(static_cast<int>(t)));
  }
}

// The elements of a *List attribute value: field 1 repeated, packed (a LEN run) or not; strings
// and bytes are one element per field.
std::uint64_t list_count(const Field& f, std::uint32_t list_field, const std::string& file, std::uint64_t& unknown) {
  pb::Reader r(f.bytes, f.payload, file);
  std::uint64_t n = 0;
  while (!r.done()) {
    const Field e = r.next();
    if (e.number != 1) {
      ++unknown;
      continue;
    }
    if (e.type != WireType::kLen || list_field == 30 || list_field == 32) {
      ++n;
      continue;
    }
    switch (list_field) {  // a packed run
      case 4: case 22: case 26: n += e.bytes.size() / 8; break;  // double, fixed64, sfixed64
      case 6: case 20: case 24: n += e.bytes.size() / 4; break;  // float, fixed32, sfixed32
      default: n += pb::Reader::varints(e, file).size(); break;
    }
  }
  return n;
}

ChakraAttribute parse_attribute(const Field& outer, const std::string& file, std::uint64_t& unknown) {
  ChakraAttribute a;
  pb::Reader r(outer.bytes, outer.payload, file);
  while (!r.done()) {
    const Field f = r.next();
    switch (f.number) {
      case 1:
        expect(f, WireType::kLen, "an attribute's name", file);
        a.name = std::string(f.bytes);
        break;
      case 2:
        break;  // doc_string
      case 3:  // double
        expect(f, WireType::kI64, "a double attribute", file);
        a.kind = ChakraAttribute::Kind::kDouble;
        a.double_value = std::bit_cast<double>(f.value);
        break;
      case 5:  // float
        expect(f, WireType::kI32, "a float attribute", file);
        a.kind = ChakraAttribute::Kind::kDouble;
        a.double_value = std::bit_cast<float>(static_cast<std::uint32_t>(f.value));
        break;
      case 7: case 9:  // int32, int64 (negative int32 values are sign-extended to 64 bits)
        expect(f, WireType::kVarint, "an integer attribute", file);
        a.kind = ChakraAttribute::Kind::kInt;
        a.int_value = static_cast<std::int64_t>(f.value);
        break;
      case 11: case 13:  // uint32, uint64
        expect(f, WireType::kVarint, "an unsigned attribute", file);
        a.kind = ChakraAttribute::Kind::kUint;
        a.uint_value = f.value;
        break;
      case 15: case 17:  // sint32, sint64
        expect(f, WireType::kVarint, "a signed attribute", file);
        a.kind = ChakraAttribute::Kind::kInt;
        a.int_value = pb::zigzag(f.value);
        break;
      case 19:  // fixed32
        expect(f, WireType::kI32, "a fixed32 attribute", file);
        a.kind = ChakraAttribute::Kind::kUint;
        a.uint_value = f.value;
        break;
      case 21:  // fixed64
        expect(f, WireType::kI64, "a fixed64 attribute", file);
        a.kind = ChakraAttribute::Kind::kUint;
        a.uint_value = f.value;
        break;
      case 23:  // sfixed32
        expect(f, WireType::kI32, "an sfixed32 attribute", file);
        a.kind = ChakraAttribute::Kind::kInt;
        a.int_value = static_cast<std::int32_t>(static_cast<std::uint32_t>(f.value));
        break;
      case 25:  // sfixed64
        expect(f, WireType::kI64, "an sfixed64 attribute", file);
        a.kind = ChakraAttribute::Kind::kInt;
        a.int_value = static_cast<std::int64_t>(f.value);
        break;
      case 27:  // bool
        expect(f, WireType::kVarint, "a bool attribute", file);
        a.kind = ChakraAttribute::Kind::kBool;
        a.int_value = f.value != 0 ? 1 : 0;
        break;
      case 29:  // string
        expect(f, WireType::kLen, "a string attribute", file);
        a.kind = ChakraAttribute::Kind::kString;
        a.string_value = std::string(f.bytes);
        break;
      case 31:  // bytes
        expect(f, WireType::kLen, "a bytes attribute", file);
        a.kind = ChakraAttribute::Kind::kBytes;
        a.count = f.bytes.size();
        break;
      case 4: case 6: case 8: case 10: case 12: case 14: case 16: case 18: case 20: case 22: case 24: case 26: case 28: case 30:
      case 32:
        expect(f, WireType::kLen, "a list attribute", file);
        a.kind = ChakraAttribute::Kind::kList;
        a.count = list_count(f, f.number, file, unknown);
        break;
      default:
        ++unknown;
    }
  }
  return a;
}

void parse_io(const Field& outer, const std::string& file, std::string* shapes, std::string* types, std::uint64_t& unknown) {
  pb::Reader r(outer.bytes, outer.payload, file);
  while (!r.done()) {
    const Field f = r.next();
    if (f.number == 2 || f.number == 3) {
      expect(f, WireType::kLen, "a node's tensor shapes or types", file);
      *(f.number == 2 ? shapes : types) = std::string(f.bytes);
    } else if (f.number != 1) {
      ++unknown;
    }
  }
}

ChakraNode parse_node(std::string_view record, std::uint64_t offset, const std::string& file, std::uint64_t& unknown) {
  ChakraNode n;
  n.offset = offset;
  pb::Reader r(record, offset, file);
  auto deps = [&](const Field& f, std::vector<std::uint64_t>& out) {
    if (f.type != WireType::kVarint && f.type != WireType::kLen) expect(f, WireType::kLen, "a node's dependencies", file);
    const std::vector<std::uint64_t> v = pb::Reader::varints(f, file);
    out.insert(out.end(), v.begin(), v.end());
  };
  while (!r.done()) {
    const Field f = r.next();
    switch (f.number) {
      case 1: expect(f, WireType::kVarint, "a node's id", file); n.id = f.value; break;
      case 2: expect(f, WireType::kLen, "a node's name", file); n.name = std::string(f.bytes); break;
      case 3: expect(f, WireType::kVarint, "a node's type", file); n.type = f.value; break;
      case 4: deps(f, n.ctrl_deps); break;
      case 5: deps(f, n.data_deps); break;
      case 6: expect(f, WireType::kVarint, "a node's start time", file); n.start_micros = f.value; break;
      case 7: expect(f, WireType::kVarint, "a node's duration", file); n.duration_micros = f.value; break;
      case 8: expect(f, WireType::kLen, "a node's inputs", file); parse_io(f, file, &n.input_shapes, &n.input_types, unknown); break;
      case 9: expect(f, WireType::kLen, "a node's outputs", file); parse_io(f, file, &n.output_shapes, &n.output_types, unknown); break;
      case 10: expect(f, WireType::kLen, "a node's attribute", file); n.attrs.push_back(parse_attribute(f, file, unknown)); break;
      default: ++unknown;
    }
  }
  return n;
}



}  // namespace

const char* chakra_node_type_name(std::uint64_t type) {
  static constexpr const char* kNames[] = {"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
                                           "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"};
  return type < kChakraNodeTypes ? kNames[type] : "UNKNOWN";
}

const ChakraAttribute* ChakraNode::attr(std::string_view key) const {
  for (const ChakraAttribute& a : attrs) {
    if (a.name == key) return &a;
  }
  return nullptr;
}

std::uint64_t ChakraTrace::missing_control_dependencies() const {
  const ChakraNodeIndex index(*this);
  std::uint64_t missing = 0;
  for (const ChakraNode& n : nodes) {
    for (std::uint64_t d : n.ctrl_deps) missing += index.find(d) == ChakraNodeIndex::kNone ? 1 : 0;
  }
  return missing;
}

std::uint64_t ChakraTrace::dependencies() const {
  std::uint64_t n = 0;
  for (const ChakraNode& node : nodes) n += node.ctrl_deps.size() + node.data_deps.size();
  return n;
}


std::optional<std::uint64_t> ChakraNode::count_attr(std::string_view key) const {
  const ChakraAttribute* a = attr(key);
  if (!a) return std::nullopt;
  switch (a->kind) {
    case ChakraAttribute::Kind::kInt:
    case ChakraAttribute::Kind::kBool:
      if (a->int_value >= 0) return static_cast<std::uint64_t>(a->int_value);
      return std::nullopt;
    case ChakraAttribute::Kind::kUint: return a->uint_value;
    case ChakraAttribute::Kind::kDouble:
      if (a->double_value >= 0 && a->double_value < 1.8e19 && a->double_value == static_cast<double>(static_cast<std::uint64_t>(a->double_value))) {
        return static_cast<std::uint64_t>(a->double_value);
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<std::string> ChakraNode::string_attr(std::string_view key) const {
  const ChakraAttribute* a = attr(key);
  if (!a || a->kind != ChakraAttribute::Kind::kString) return std::nullopt;
  return a->string_value;
}

ChakraNodeIndex::ChakraNodeIndex(const ChakraTrace& t) {
  std::uint64_t max_id = 0;
  for (const ChakraNode& n : t.nodes) max_id = std::max(max_id, n.id);
  dense_ = max_id < 8 * static_cast<std::uint64_t>(t.nodes.size()) + 1024;
  if (dense_) {
    slots_.assign(static_cast<std::size_t>(max_id) + 1, kNone);
  } else {
    map_.reserve(t.nodes.size());
  }
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const bool fresh = dense_ ? std::exchange(slots_[static_cast<std::size_t>(t.nodes[i].id)], i) == kNone
                              : map_.emplace(t.nodes[i].id, i).second;
    if (!fresh) {
      throw InputError(t.file, "node " + std::to_string(t.nodes[i].id), "a second node with this id (byte " + std::to_string(t.nodes[i].offset) + ")");
    }
  }
}

std::size_t ChakraNodeIndex::find(std::uint64_t id) const {
  if (dense_) return id < slots_.size() ? slots_[static_cast<std::size_t>(id)] : kNone;
  auto it = map_.find(id);
  return it == map_.end() ? kNone : it->second;
}

std::vector<std::size_t> ChakraTrace::topological_order(bool control) const {
  const ChakraNodeIndex index(*this);
  // Kahn's algorithm over distinct dependencies (a node listing one twice waits for it once),
  // the ready node with the smallest id first (as Chakra's feeder issues them). The edges are
  // gathered once, then laid out by dependency (compressed rows).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // (dependency, node)
  std::vector<std::uint32_t> waiting(nodes.size(), 0);
  std::vector<std::uint32_t> deps;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    deps.clear();
    for (std::uint64_t d : nodes[i].data_deps) {
      const std::size_t k = index.find(d);
      if (k == ChakraNodeIndex::kNone) {
        throw InputError(file, "node " + std::to_string(nodes[i].id), "needs the data of node " + std::to_string(d) + ", which the trace does not hold");
      }
      deps.push_back(static_cast<std::uint32_t>(k));
    }
    if (control) {
      for (std::uint64_t d : nodes[i].ctrl_deps) {
        if (const std::size_t k = index.find(d); k != ChakraNodeIndex::kNone && k != i) deps.push_back(static_cast<std::uint32_t>(k));
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (std::uint32_t d : deps) edges.push_back({d, static_cast<std::uint32_t>(i)});
    waiting[i] = static_cast<std::uint32_t>(deps.size());
  }
  std::vector<std::uint32_t> begin(nodes.size() + 1, 0), next(edges.size());
  for (const auto& e : edges) ++begin[e.first + 1];
  for (std::size_t i = 0; i < nodes.size(); ++i) begin[i + 1] += begin[i];
  {
    std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& e : edges) next[fill[e.first]++] = e.second;
  }
  std::vector<std::size_t> order;
  order.reserve(nodes.size());
  using Ready = std::pair<std::uint64_t, std::uint32_t>;  // (id, index): a min-heap by id
  std::vector<Ready> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push_back({nodes[i].id, static_cast<std::uint32_t>(i)});
  }
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    const std::uint32_t i = ready.back().second;
    ready.pop_back();
    order.push_back(i);
    for (std::uint32_t k = begin[i]; k < begin[i + 1]; ++k) {
      if (--waiting[next[k]] == 0) {
        ready.push_back({nodes[next[k]].id, next[k]});
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  for (std::size_t i = 0; order.size() != nodes.size() && i < nodes.size(); ++i) {
    if (waiting[i] > 0) throw InputError(file, "node " + std::to_string(nodes[i].id), "is on a dependency cycle (or waits for one)");
  }
  return order;
}

ChakraTrace parse_chakra_trace(std::string_view data, const std::string& file) {
  ChakraTrace t;
  t.file = file;
  {
    // Count the records first (lengths only) so that the nodes are laid out once.
    pb::Reader count(data, 0, file);
    std::size_t records = 0;
    while (!count.done()) {
      count.take(count.varint(), "a record");
      ++records;
    }
    t.nodes.reserve(records > 0 ? records - 1 : 0);
  }
  pb::Reader stream(data, 0, file);
  bool first = true;
  while (!stream.done()) {
    const std::uint64_t length = stream.varint();
    const std::uint64_t body = stream.offset();
    const std::string_view record = stream.take(length, "a record");
    if (first) {
      first = false;
      pb::Reader r(record, body, file);
      while (!r.done()) {
        const Field f = r.next();
        if (f.number == 1) {
          expect(f, WireType::kLen, "the trace's version", file);
          t.version = std::string(f.bytes);
        } else if (f.number == 2) {
          expect(f, WireType::kLen, "a metadata attribute", file);
          t.metadata.push_back(parse_attribute(f, file, t.unknown_fields));
        } else {
          ++t.unknown_fields;
        }
      }
      continue;
    }
    t.nodes.push_back(parse_node(record, body, file, t.unknown_fields));
  }
  if (first) throw InputError(file, "byte 0", "an empty trace (expected a GlobalMetadata record, then nodes)");
  return t;
}

ChakraTrace read_chakra_trace(const std::string& path) { return parse_chakra_trace(read_input_file(path), path); }

}  // namespace cs::tg
