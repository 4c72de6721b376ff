// Chakra traces onto the TaskGraph (taskgraph/chakra_import.h): the MLCommons sample with exact
// counts, collectives matched across ranks by process group, replication to more ranks,
// re-timing from FLOPs and shapes, unknown node types, and traces that cannot be replayed.
#include "taskgraph/chakra_import.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "tests/support/protobuf_writer.h"

namespace cs::tg {
namespace {

using test::pbw::field_bytes;
using test::pbw::field_varint;
using test::pbw::record;

std::string attr_int(const std::string& name, std::int64_t v) {
  return field_bytes(10, field_bytes(1, name) + field_varint(9, static_cast<std::uint64_t>(v)));
}
std::string attr_bool(const std::string& name, bool v) { return field_bytes(10, field_bytes(1, name) + field_varint(27, v)); }
std::string attr_string(const std::string& name, const std::string& v) {
  return field_bytes(10, field_bytes(1, name) + field_bytes(29, v));
}
std::string node(std::uint64_t id, std::uint64_t type, const std::vector<std::uint64_t>& data, std::uint64_t duration,
                 const std::string& extra = "", const std::string& name = "") {
  std::string n = field_varint(1, id) + field_bytes(2, name.empty() ? "n" + std::to_string(id) : name) + field_varint(3, type);
  for (std::uint64_t d : data) n += field_varint(5, d);
  n += field_varint(7, duration);
  return record(n + extra);
}
const std::string kMetadata = record(field_bytes(1, "0.0.4"));

std::string all_reduce(std::int64_t bytes, const std::string& pg = "") {
  return attr_bool("is_cpu_op", false) + attr_int("comm_type", 0) + attr_int("comm_size", bytes) + (pg.empty() ? "" : attr_string("pg_name", pg));
}

TEST(ChakraImport, TheSampleImportsWithExactCounts) {
  const ChakraTrace t = read_chakra_trace(std::string(CS_SOURCE_DIR) + "/tests/data/chakra/sample.0.et");
  const ChakraImport imp = import_chakra(std::span(&t, 1), {});
  const ChakraImportReport& r = imp.report;
  EXPECT_EQ(r.nodes, 3'664u);
  EXPECT_EQ(r.by_type[4], 3'643u);
  EXPECT_EQ(r.by_type[7], 21u);
  EXPECT_EQ(r.data_dependencies + r.control_dependencies, 185'542u);  // as the file lists them
  EXPECT_EQ(r.control_dependencies, 3'664u);
  // Every node is an op: 2,434 CPU operators and 14 host-side c10d calls on the host stream,
  // 1,209 kernels as recorded, 7 NCCL kernels as collectives on the one rank's world group.
  EXPECT_EQ(imp.graph.size(), 3'664u);
  EXPECT_EQ(r.host_ops, 2'448u);
  EXPECT_EQ(r.kernels_recorded, 1'209u);
  EXPECT_EQ(r.collectives, 7u);
  EXPECT_EQ(r.skipped, 0u);
  EXPECT_EQ(imp.graph.issue_order(), IssueOrder::kReadyFirst);
  // Dependencies: the distinct data dependencies of each node, counted from the file here.
  std::uint64_t distinct = 0;
  for (const ChakraNode& n : t.nodes) distinct += std::set<std::uint64_t>(n.data_deps.begin(), n.data_deps.end()).size();
  std::uint64_t kept = 0;
  for (OpId id = 0; id < imp.graph.size(); ++id) kept += imp.graph.deps(id).size();
  EXPECT_EQ(kept, distinct);
  // Attributes the mapping does not read are annotations: 7 per CPU operator (fw_parent, fw_tid,
  // op_schema, rf_id, scope, seq_id, tid), tid on each kernel, tid and involved_dim on the NCCL
  // kernels.
  EXPECT_EQ(r.annotations, 2'448u * 7 + 1'209u + 7u * 2);
  EXPECT_EQ(imp.graph.annotations()[0].name, "fw_parent");
}

TEST(ChakraImport, CollectivesMatchAcrossRanksByProcessGroup) {
  // Two ranks: each computes, then two all-reduces on "dp" and one on "tp".
  std::vector<ChakraTrace> traces;
  for (int r = 0; r < 2; ++r) {
    const std::string t = kMetadata + node(1, 4, {}, 10, attr_bool("is_cpu_op", false)) + node(2, 7, {1}, 5, all_reduce(1 << 20, "dp")) +
                          node(3, 7, {2}, 5, all_reduce(1 << 10, "tp")) + node(4, 7, {3}, 5, all_reduce(1 << 21, "dp"));
    traces.push_back(parse_chakra_trace(t, "t." + std::to_string(r) + ".et"));
  }
  const ChakraImport imp = import_chakra(traces, {});
  ASSERT_EQ(imp.graph.groups().size(), 2u);
  EXPECT_EQ(imp.graph.groups()[0].name, "dp");
  EXPECT_EQ(imp.graph.groups()[0].ranks, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(imp.report.collectives, 6u);
  // The ranks' ops interleave by node id; the k-th dp collective of each rank shares an instance.
  std::set<std::uint64_t> instances;
  for (const Op& op : imp.graph.ops()) {
    if (op.kind == OpKind::kCollective) instances.insert(op.instance);
  }
  EXPECT_EQ(instances.size(), 3u);
  EXPECT_EQ(imp.graph.op(2).rank, 0u);  // node 2 of rank 0, then of rank 1
  EXPECT_EQ(imp.graph.op(3).rank, 1u);
  EXPECT_EQ(imp.graph.op(2).instance, imp.graph.op(3).instance);
  EXPECT_EQ(imp.report.groups[0], "dp: ranks 0-1 (inferred: the ranks whose traces use it), 4 collective ops");

  // A comm-group table that leaves a user of the group out is an error naming the file.
  ChakraImportOptions o;
  o.comm_groups = {{"dp", {0}}, {"tp", {0, 1}}};
  try {
    import_chakra(traces, o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.1.et");
  }
  // A rank that runs one collective fewer on a group: named, with the counts.
  const std::string short_trace = kMetadata + node(1, 4, {}, 10) + node(2, 7, {1}, 5, all_reduce(1 << 20, "dp")) +
                                  node(3, 7, {2}, 5, all_reduce(1 << 10, "tp"));
  traces[1] = parse_chakra_trace(short_trace, "t.1.et");
  try {
    import_chakra(traces, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.1.et");
    EXPECT_NE(std::string(e.what()).find("runs 1 collectives on process group dp but rank 0 runs 2"), std::string::npos) << e.what();
  }
  // Sizes that disagree: named by the node.
  traces[1] = parse_chakra_trace(kMetadata + node(1, 4, {}, 10) + node(2, 7, {1}, 5, all_reduce(1 << 19, "dp")) +
                                     node(3, 7, {2}, 5, all_reduce(1 << 10, "tp")) + node(4, 7, {3}, 5, all_reduce(1 << 21, "dp")),
                                 "t.1.et");
  try {
    import_chakra(traces, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "node 2");
  }
}

TEST(ChakraImport, OneRanksTraceReplicatesToTheWorld) {
  const ChakraTrace t = parse_chakra_trace(kMetadata + node(1, 4, {}, 10) + node(2, 7, {1}, 5, all_reduce(1 << 20, "dp")), "one.0.et");
  ChakraImportOptions o;
  o.world = 8;
  const ChakraImport imp = import_chakra(std::span(&t, 1), o);
  EXPECT_EQ(imp.graph.ranks(), 1u);
  EXPECT_EQ(imp.graph.mirrored(), 7u);
  EXPECT_EQ(imp.graph.symmetries().size(), 7u);
  EXPECT_EQ(imp.graph.symmetries().image(2, 0), 3u);
  ASSERT_EQ(imp.graph.groups().size(), 1u);
  EXPECT_EQ(imp.graph.groups()[0].ranks.size(), 8u);
  // Sends cannot be replicated: their peers' traces are missing.
  const ChakraTrace p = parse_chakra_trace(
      kMetadata + node(1, 5, {}, 5, attr_bool("is_cpu_op", false) + attr_int("comm_dst", 1) + attr_int("comm_size", 64)), "p.0.et");
  EXPECT_THROW(import_chakra(std::span(&p, 1), o), InputError);
}

TEST(ChakraImport, RetimingUsesFlopsOrGemmShapes) {
  const std::string gemm = attr_bool("is_cpu_op", false);
  const std::string t = kMetadata +
                        node(1, 4, {}, 99, gemm, "maxwell_sgemm_128x32_tn") +  // addmm's shapes below
                        node(2, 4, {1}, 7, gemm + attr_int("num_ops", 4'000'000) + attr_int("tensor_size", 8'000)) +
                        node(3, 4, {2}, 3, gemm, "void at::native::vectorized_elementwise_kernel");
  ChakraTrace tr = parse_chakra_trace(t, "r.0.et");
  tr.nodes[0].input_shapes = "[[1000], [32, 2048], [2048, 1000], [], []]";
  tr.nodes[0].input_types = "['Tensor(float)', 'Tensor(float)', 'Tensor(float)', 'Int', 'Int']";
  // As recorded unless asked.
  EXPECT_EQ(import_chakra(std::span(&tr, 1), {}).report.kernels_recorded, 3u);
  ChakraImportOptions o;
  o.retime = true;
  const ChakraImport imp = import_chakra(std::span(&tr, 1), o);
  EXPECT_EQ(imp.report.kernels_computed, 2u);
  EXPECT_EQ(imp.report.kernels_recorded, 1u);
  const Op& mm = imp.graph.op(0);
  EXPECT_EQ(mm.kind, OpKind::kCompute);
  EXPECT_EQ(mm.compute_class, ComputeClass::kGemm);
  EXPECT_DOUBLE_EQ(mm.flops.value(), 2.0 * 32 * 1000 * 2048);
  EXPECT_EQ(mm.bytes.value(), 4 * (32 * 2048 + 2048 * 1000 + 32 * 1000));
  EXPECT_EQ(imp.graph.gemm_mix_of(mm)[0], (GemmShape{32, 1000, 2048}));
  EXPECT_DOUBLE_EQ(imp.graph.op(1).flops.value(), 4e6);
  EXPECT_EQ(imp.graph.op(1).compute_class, ComputeClass::kGemm);  // timed on the roofline
  EXPECT_EQ(imp.graph.op(1).bytes.value(), 8'000);
  EXPECT_EQ(imp.graph.op(2).kind, OpKind::kDelay);
  EXPECT_EQ(imp.graph.op(2).duration, microseconds(3));
}

TEST(ChakraImport, SendsMatchReceivesOrTheNodeIsNamed) {
  const std::string cpu = attr_bool("is_cpu_op", false);
  auto send = [&](std::uint64_t id, int to, int tag) {
    return node(id, 5, {}, 5, cpu + attr_int("comm_dst", to) + attr_int("comm_size", 4096) + attr_int("comm_tag", tag));
  };
  auto recv = [&](std::uint64_t id, int from, int tag) {
    return node(id, 6, {}, 5, cpu + attr_int("comm_src", from) + attr_int("comm_size", 4096) + attr_int("comm_tag", tag));
  };
  std::vector<ChakraTrace> traces{parse_chakra_trace(kMetadata + send(1, 1, 7), "p.0.et"), parse_chakra_trace(kMetadata + recv(1, 0, 7), "p.1.et")};
  const ChakraImport imp = import_chakra(traces, {});
  EXPECT_EQ(imp.report.point_to_point, 2u);
  EXPECT_EQ(imp.graph.op(0).kind, OpKind::kSend);
  EXPECT_EQ(imp.graph.op(0).stream, Stream::kPp);
  EXPECT_EQ(imp.graph.op(1).peer, 0u);
  // The receive's tag differs: the send is unmatched, named by its node.
  traces[1] = parse_chakra_trace(kMetadata + recv(1, 0, 8), "p.1.et");
  try {
    import_chakra(traces, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "p.0.et");
    EXPECT_EQ(e.json_path(), "node 1");
  }
  // To itself.
  traces[1] = parse_chakra_trace(kMetadata + send(1, 1, 7), "p.1.et");
  EXPECT_THROW(import_chakra(traces, {}), InputError);
}

TEST(ChakraImport, ControlDependenciesOnlyWhenAsked) {
  // Node 2 lists node 1 and itself as control dependencies, node 3 one the trace does not hold.
  auto ctrl = [](std::initializer_list<std::uint64_t> ids) {
    std::string b;
    for (std::uint64_t d : ids) b += field_varint(4, d);
    return b;
  };
  const ChakraTrace t = parse_chakra_trace(kMetadata + node(1, 4, {}, 10) + node(2, 4, {}, 10, ctrl({1, 2})) + node(3, 4, {}, 10, ctrl({99})), "c.0.et");
  EXPECT_EQ(import_chakra(std::span(&t, 1), {}).graph.deps(1).size(), 0u);
  ChakraImportOptions o;
  o.control_dependencies = true;
  const ChakraImport imp = import_chakra(std::span(&t, 1), o);
  ASSERT_EQ(imp.graph.deps(1).size(), 1u);
  EXPECT_EQ(imp.graph.deps(1)[0], 0u);
  EXPECT_EQ(imp.graph.deps(2).size(), 0u);
  EXPECT_TRUE(imp.report.control_enforced);
  // The sample's control dependencies close cycles with its data dependencies.
  const ChakraTrace sample = read_chakra_trace(std::string(CS_SOURCE_DIR) + "/tests/data/chakra/sample.0.et");
  EXPECT_THROW(import_chakra(std::span(&sample, 1), o), InputError);
}

TEST(ChakraImport, UnknownTypesAreCountedAndPassTheirDependenciesOn) {
  // Node 2 is of a type beyond the schema and node 3 METADATA: no ops; node 4 waits for node 1
  // through them.
  const ChakraTrace t = parse_chakra_trace(kMetadata + node(1, 4, {}, 10) + node(2, 42, {1}, 0) + node(3, 1, {2}, 0) + node(4, 4, {3}, 10), "u.0.et");
  const ChakraImport imp = import_chakra(std::span(&t, 1), {});
  EXPECT_EQ(imp.graph.size(), 2u);
  EXPECT_EQ(imp.report.skipped, 2u);
  EXPECT_EQ(imp.report.unknown_types.at(42), 1u);
  EXPECT_EQ(imp.report.by_type[1], 1u);
  ASSERT_EQ(imp.graph.deps(1).size(), 1u);
  EXPECT_EQ(imp.graph.deps(1)[0], 0u);
}

}  // namespace
}  // namespace cs::tg
