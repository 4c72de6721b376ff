// Chakra execution traces (taskgraph/chakra_trace.h) and the protobuf wire reader under them
// (core/protobuf_wire.h): the MLCommons sample trace with exact counts, traces built here byte by
// byte, and malformed files naming the byte offset or the node.
#include "taskgraph/chakra_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "core/errors.h"
#include "core/protobuf_wire.h"
#include "tests/support/protobuf_writer.h"

namespace cs::tg {
namespace {

using test::pbw::field_bytes;
using test::pbw::field_varint;
using test::pbw::record;
using test::pbw::varint;

std::string packed(const std::vector<std::uint64_t>& v) {
  std::string b;
  for (std::uint64_t x : v) b += varint(x);
  return b;
}
std::string node(std::uint64_t id, std::uint64_t type, const std::vector<std::uint64_t>& ctrl, const std::vector<std::uint64_t>& data = {},
                 std::uint64_t duration = 0, const std::string& extra = "") {
  std::string n = field_varint(1, id) + field_bytes(2, "n" + std::to_string(id)) + field_varint(3, type);
  if (!ctrl.empty()) n += field_bytes(4, packed(ctrl));
  for (std::uint64_t d : data) n += field_varint(5, d);  // unpacked, as older writers do
  n += field_varint(7, duration);
  return record(n + extra);
}
const std::string kMetadata = record(field_bytes(1, "0.0.4"));

std::string error_of(const std::string& data) {
  try {
    const ChakraTrace t = parse_chakra_trace(data, "t.et");
    t.topological_order();
  } catch (const InputError& e) {
    return e.json_path() + ": " + e.message();
  }
  return "";
}

TEST(ChakraTrace, TheMlcommonsSampleImportsWithExactCounts) {
  const ChakraTrace t = read_chakra_trace(std::string(CS_SOURCE_DIR) + "/tests/data/chakra/sample.0.et");
  ASSERT_EQ(t.nodes.size(), 3664u);
  int comp = 0, coll = 0, other = 0;
  std::uint64_t ctrl = 0, data = 0;
  for (const ChakraNode& n : t.nodes) {
    (n.type == 4 ? comp : n.type == 7 ? coll : other) += 1;
    ctrl += n.ctrl_deps.size();
    data += n.data_deps.size();
  }
  EXPECT_EQ(comp, 3643);
  EXPECT_EQ(coll, 21);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(ctrl, 3664u);
  EXPECT_EQ(data, 181878u);
  EXPECT_EQ(t.dependencies(), 185542u);
  // The data dependencies form a DAG (53 of them point at nodes later in the file).
  const std::vector<std::size_t> order = t.topological_order();
  EXPECT_EQ(order.size(), 3664u);
  std::vector<std::size_t> position(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) index[t.nodes[i].id] = i;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    for (std::uint64_t d : t.nodes[i].data_deps) EXPECT_LT(position[index.at(d)], position[i]);
  }
  // Control dependencies: the PyTorch operator hierarchy, 1,277 on operators left out of the
  // trace, and cycles with the data dependencies (a node listing itself among them).
  EXPECT_EQ(t.missing_control_dependencies(), 1277u);
  EXPECT_THROW(t.topological_order(true), InputError);
  // The metadata's attributes (no version field: the schema version is an attribute).
  ASSERT_FALSE(t.metadata.empty());
  EXPECT_EQ(t.metadata[0].name, "schema");
  EXPECT_EQ(t.metadata[0].string_value, "1.0.1");
  // The first node: a COMP_NODE of 318 us with its attributes read by kind.
  const ChakraNode& first = t.nodes.front();
  EXPECT_EQ(first.id, 216u);
  EXPECT_EQ(first.name, "aten::flatten_dense_tensors(0)");
  EXPECT_EQ(first.duration_micros, 318u);
  ASSERT_NE(first.attr("is_cpu_op"), nullptr);
  EXPECT_EQ(first.attr("is_cpu_op")->kind, ChakraAttribute::Kind::kBool);
  ASSERT_NE(first.attr("seq_id"), nullptr);
  EXPECT_EQ(first.attr("seq_id")->int_value, -1);
  EXPECT_NE(first.input_shapes.find("[64]"), std::string::npos);
  // The collectives that say what they are carry comm_type and comm_size.
  int typed = 0;
  for (const ChakraNode& n : t.nodes) {
    if (n.type == 7 && n.attr("comm_type") && n.attr("comm_size")) ++typed;
  }
  EXPECT_EQ(typed, 7);
  EXPECT_EQ(t.unknown_fields, 0u);
}

TEST(ChakraTrace, ABuiltTraceReadsBackFieldByField) {
  // Attributes of several wire kinds: int64, sint64 (zigzag), double, string, a packed list.
  std::string attrs = field_bytes(10, field_bytes(1, "comm_size") + field_varint(9, 1048576));
  attrs += field_bytes(10, field_bytes(1, "delta") + field_varint(17, 5));  // zigzag 5 = -3
  std::string dbl = field_bytes(1, "scale") + varint((3 << 3) | 1);
  const double half = 0.5;
  dbl += std::string(reinterpret_cast<const char*>(&half), 8);
  attrs += field_bytes(10, dbl);
  attrs += field_bytes(10, field_bytes(1, "pg_name") + field_bytes(29, "dp0"));
  attrs += field_bytes(10, field_bytes(1, "ranks") + field_bytes(10, field_bytes(1, packed({0, 1, 2, 3}))));
  const std::string trace = kMetadata + node(1, 4, {}, {}, 100) + node(2, 7, {1}, {1}, 50, attrs) + node(3, 4, {2}, {}, 7);
  const ChakraTrace t = parse_chakra_trace(trace, "t.et");
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.version, "0.0.4");
  const ChakraNode& c = t.nodes[1];
  EXPECT_EQ(c.type, 7u);
  EXPECT_EQ(c.ctrl_deps, std::vector<std::uint64_t>{1});
  EXPECT_EQ(c.data_deps, std::vector<std::uint64_t>{1});
  EXPECT_EQ(c.attr("comm_size")->int_value, 1048576);
  EXPECT_EQ(c.attr("delta")->int_value, -3);
  EXPECT_DOUBLE_EQ(c.attr("scale")->double_value, 0.5);
  EXPECT_EQ(c.attr("pg_name")->string_value, "dp0");
  EXPECT_EQ(c.attr("ranks")->kind, ChakraAttribute::Kind::kList);
  EXPECT_EQ(c.attr("ranks")->count, 4u);
  EXPECT_EQ(t.dependencies(), 3u);
  // Node 2 lists node 1 twice (control and data): it waits for it once. Node 3 has a control
  // dependency only: ready at once by its data, yet after node 2, which has the smaller id.
  EXPECT_EQ(t.topological_order(), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(t.topological_order(true), (std::vector<std::size_t>{0, 1, 2}));
  // Out of file order: the order follows the dependencies; control ones only when asked.
  const ChakraTrace r = parse_chakra_trace(kMetadata + node(3, 4, {}, {2}) + node(2, 4, {}, {1}) + node(1, 4, {}), "r.et");
  EXPECT_EQ(r.topological_order(), (std::vector<std::size_t>{2, 1, 0}));
  const ChakraTrace k = parse_chakra_trace(kMetadata + node(1, 4, {2}) + node(2, 4, {}), "k.et");
  EXPECT_EQ(k.topological_order(), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(k.topological_order(true), (std::vector<std::size_t>{1, 0}));
}

TEST(ChakraTrace, MalformedFilesNameTheByteOrTheNode) {
  const std::string good = kMetadata + node(1, 4, {}) + node(2, 4, {1});
  EXPECT_EQ(error_of(good), "");
  // A truncated varint: the record length's continuation bit set on the last byte.
  EXPECT_EQ(error_of(good + "\x80"), "byte " + std::to_string(good.size()) + ": a truncated varint (the data ends inside it)");
  // A record longer than what is left.
  const std::string past = good + varint(50) + "abc";
  EXPECT_NE(error_of(past).find("byte " + std::to_string(good.size() + 1) + ": a record of 50 bytes runs past the end (3 left)"),
            std::string::npos)
      << error_of(past);
  // A varint of 11 bytes.
  EXPECT_NE(error_of(good + std::string(10, '\x80') + std::string(1, '\0')).find("longer than 10 bytes"), std::string::npos);
  // A dependency on a node the file does not hold; a cycle; a duplicate id.
  EXPECT_EQ(error_of(kMetadata + node(1, 4, {}) + node(2, 4, {}, {7})), "node 2: needs the data of node 7, which the trace does not hold");
  // A control dependency on a missing node is dropped (and counted).
  EXPECT_EQ(error_of(kMetadata + node(1, 4, {}) + node(2, 4, {7})), "");
  EXPECT_EQ(parse_chakra_trace(kMetadata + node(1, 4, {}) + node(2, 4, {7}), "t.et").missing_control_dependencies(), 1u);
  EXPECT_EQ(error_of(kMetadata + node(1, 4, {}, {3}) + node(2, 4, {}, {1}) + node(3, 4, {}, {2})), "node 1: is on a dependency cycle (or waits for one)");
  EXPECT_NE(error_of(kMetadata + node(1, 4, {}) + node(1, 4, {})).find("node 1: a second node with this id"), std::string::npos);
  // A node id sent as a string (wire type 2 where the schema has a varint).
  const std::string bad_id = kMetadata + record(field_bytes(1, "x"));
  EXPECT_NE(error_of(bad_id).find("a node's id (field 1) has wire type 2, not 0"), std::string::npos) << error_of(bad_id);
  // Wire type 3 (a group).
  EXPECT_NE(error_of(kMetadata + record(varint((1 << 3) | 3))).find("wire type 3"), std::string::npos);
  // An empty file.
  EXPECT_EQ(error_of(""), "byte 0: an empty trace (expected a GlobalMetadata record, then nodes)");
}

TEST(ProtobufWire, VarintsAtTheirLimits) {
  const std::string file = "v";
  for (std::uint64_t v : {std::uint64_t{0}, std::uint64_t{127}, std::uint64_t{128}, std::uint64_t{1} << 63, ~std::uint64_t{0}}) {
    const std::string b = varint(v);
    pb::Reader r(b, 0, file);
    EXPECT_EQ(r.varint(), v);
    EXPECT_TRUE(r.done());
  }
  // Ten bytes whose last carries more than the 64th bit.
  const std::string wide = std::string(9, '\xff') + "\x02";
  pb::Reader r(wide, 0, file);
  EXPECT_THROW(r.varint(), InputError);
  EXPECT_EQ(pb::zigzag(0), 0);
  EXPECT_EQ(pb::zigzag(1), -1);
  EXPECT_EQ(pb::zigzag(4), 2);
  EXPECT_EQ(pb::zigzag(~std::uint64_t{0}), std::numeric_limits<std::int64_t>::min());
}

}  // namespace
}  // namespace cs::tg
