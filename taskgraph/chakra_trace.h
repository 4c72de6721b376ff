// Chakra execution traces (MLCommons; the input format of ASTRA-sim), read with the project's
// own protobuf wire reader (core/protobuf_wire.h) from the format's schema (et_def.proto,
// github.com/mlcommons/chakra, schema/protobuf/et_def.proto; field numbers below).
//
// A file (one rank's trace, PREFIX.<rank>.et) is a stream of varint-length-delimited messages:
// one GlobalMetadata (version = 1, attr = 2), then Node records:
//   id 1 (uint64), name 2, type 3 (NodeType), ctrl_deps 4 and data_deps 5 (repeated uint64,
//   packed or not), start_time_micros 6, duration_micros 7, inputs 8 and outputs 9 (IOInfo:
//   values 1, shapes 2, types 3, as text), attr 10 (AttributeProto: name 1, doc_string 2, one
//   value field 3-32).
// NodeType: 0 INVALID, 1 METADATA, 2 MEM_LOAD, 3 MEM_STORE, 4 COMP, 5 COMM_SEND, 6 COMM_RECV,
// 7 COMM_COLL. CollectiveCommType (attribute comm_type): 0 ALL_REDUCE, 1 REDUCE, 2 ALL_GATHER,
// 3 GATHER, 4 SCATTER, 5 BROADCAST, 6 ALL_TO_ALL, 7 REDUCE_SCATTER, 8 REDUCE_SCATTER_BLOCK,
// 9 BARRIER.
//
// Scalar attribute values are kept (integers of every width and sign, floating point, bool,
// string); list and bytes values are kept as their kind and element count. Unknown fields of a
// node or an attribute are skipped (newer schema versions), and counted.
//
// Dependencies. A node waits for its data dependencies, as Chakra's execution-trace feeder
// resolves them (the feeder ASTRA-sim reads traces with issues a node once its data_deps have
// completed). Control dependencies are kept and can be enforced too (topological_order(true)),
// but traces converted from PyTorch fill them with the operator hierarchy: in the MLCommons
// sample 1,277 of its 3,664 point at operators the converter left out (851 at node 3, the
// thread's root), 383 at the node itself, and they close cycles with the data dependencies.
//
// Checks (InputError, exit 2): truncated varints and lengths past the end name the byte offset;
// a wire type a field of the schema does not have names the byte offset; a duplicate node id, a
// data dependency on a node the file does not hold and a dependency cycle name the node id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cs::tg {

enum class ChakraNodeType : std::uint8_t {
  kInvalid = 0, kMetadata = 1, kMemLoad = 2, kMemStore = 3, kComp = 4, kCommSend = 5, kCommRecv = 6, kCommColl = 7
};
inline constexpr int kChakraNodeTypes = 8;
const char* chakra_node_type_name(std::uint64_t type);  // "COMP_NODE", ...; "UNKNOWN" beyond the schema

struct ChakraAttribute {
  enum class Kind : std::uint8_t { kInt, kUint, kDouble, kBool, kString, kList, kBytes } kind = Kind::kInt;
  std::string name;
  std::int64_t int_value = 0;    // kInt, kBool (0 or 1)
  std::uint64_t uint_value = 0;  // kUint
  double double_value = 0;       // kDouble
  std::string string_value;      // kString
  std::uint64_t count = 0;       // kList: elements; kBytes: bytes
};

struct ChakraNode {
  std::uint64_t id = 0;
  std::string name;
  std::uint64_t type = 0;  // ChakraNodeType when below kChakraNodeTypes
  std::vector<std::uint64_t> ctrl_deps, data_deps;
  std::uint64_t start_micros = 0, duration_micros = 0;
  std::string input_shapes, output_shapes, input_types, output_types;
  std::vector<ChakraAttribute> attrs;
  std::uint64_t offset = 0;  // byte offset of its record in the file

  // The attribute of that name, if any.
  const ChakraAttribute* attr(std::string_view name) const;
  // Its value as a non-negative integer (any integer kind, or an integral double), if it is one.
  std::optional<std::uint64_t> count_attr(std::string_view name) const;
  // Its value if it is a string.
  std::optional<std::string> string_attr(std::string_view name) const;
};

struct ChakraTrace {
  std::string file;
  std::string version;
  std::vector<ChakraAttribute> metadata;
  std::vector<ChakraNode> nodes;  // in file order
  std::uint64_t unknown_fields = 0;

  std::uint64_t dependencies() const;  // ctrl + data, as listed
  std::uint64_t missing_control_dependencies() const;  // on nodes the trace does not hold
  // Node indices in an order where every node follows its data dependencies, and with `control`
  // its control dependencies on nodes the trace holds (but itself) (Kahn's algorithm, the ready node with the
  // smallest id first, as Chakra's feeder issues them: a file listed in id order and by its
  // dependencies keeps its order).
  std::vector<std::size_t> topological_order(bool control = false) const;
};

// Node ids to positions in a trace: an array when the ids are dense enough (traces number their
// nodes from a small start), else a hash map. A duplicate id is an InputError naming it.
class ChakraNodeIndex {
 public:
  explicit ChakraNodeIndex(const ChakraTrace& t);
  // The position of a node, or kNone.
  std::size_t find(std::uint64_t id) const;
  static constexpr std::size_t kNone = SIZE_MAX;

 private:
  bool dense_ = false;
  std::vector<std::size_t> slots_;
  std::unordered_map<std::uint64_t, std::size_t> map_;
};

// Parses one rank's trace; `file` names it in errors.
ChakraTrace parse_chakra_trace(std::string_view data, const std::string& file);
// Reads and parses a file (core/input_file.h's cap applies).
ChakraTrace read_chakra_trace(const std::string& path);

}  // namespace cs::tg
