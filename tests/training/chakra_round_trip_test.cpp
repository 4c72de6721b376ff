// A generated Megatron-style training graph (tensor, pipeline and data parallelism, with
// recomputation-free 1F1B) exported as Chakra traces (taskgraph/chakra_export.h) and imported
// again (taskgraph/chakra_import.h) is the same graph: every op's kind, rank, stream, name, FLOPs,
// bytes, class, GEMM shapes, collective, peer, tag and duration, its dependencies (as a set: the import lists
// them by id), the collectives' groups
// (by ranks and stream) and which member ops form one collective.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "taskgraph/chakra_export.h"
#include "taskgraph/chakra_import.h"
#include "tests/support/small_gpt.h"
#include "workloads/training_graph.h"

namespace cs::wl {
namespace {

using test::small_gpt;

TEST(ChakraRoundTrip, AGeneratedGraphComesBackEqual) {
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.dp = 2;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  plan.sequence_length = 1024;
  const tg::TaskGraph original = build_training_graph(small_gpt(), plan, "test", "/plan").graph;
  ASSERT_EQ(original.mirrored(), 0u);
  const tg::ChakraExport ex = tg::export_chakra(original);
  ASSERT_EQ(ex.traces.size(), 8u);
  std::vector<tg::ChakraTrace> traces;
  for (std::size_t r = 0; r < ex.traces.size(); ++r) traces.push_back(tg::parse_chakra_trace(ex.traces[r], "w." + std::to_string(r) + ".et"));
  tg::ChakraImportOptions o;
  for (const auto& [name, ranks] : ex.comm_groups.items()) o.comm_groups[name] = ranks.get<std::vector<std::uint32_t>>();
  const tg::ChakraImport back = tg::import_chakra(traces, o);
  const tg::TaskGraph& g = back.graph;

  ASSERT_EQ(g.size(), original.size());
  EXPECT_EQ(g.ranks(), original.ranks());
  EXPECT_EQ(g.issue_order(), original.issue_order());
  EXPECT_EQ(back.report.kernels_computed + back.report.collectives + back.report.point_to_point + back.report.host_ops +
                back.report.kernels_recorded + back.report.memory_ops,
            original.size());
  std::map<std::uint64_t, std::uint64_t> instance;  // original -> imported, one to one
  std::map<std::uint64_t, std::uint64_t> reverse;
  std::size_t compute = 0, collectives = 0, p2p = 0;
  for (tg::OpId id = 0; id < g.size(); ++id) {
    const tg::Op& a = original.op(id);
    const tg::Op& b = g.op(id);
    SCOPED_TRACE("op " + std::to_string(id));
    ASSERT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(original.name_of(id), g.name_of(id));
    EXPECT_EQ(a.flops, b.flops);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.duration, b.duration);
    EXPECT_EQ(std::set<tg::OpId>(original.deps(id).begin(), original.deps(id).end()), std::set<tg::OpId>(g.deps(id).begin(), g.deps(id).end()));
    EXPECT_EQ(original.deps(id).size(), g.deps(id).size());
    switch (a.kind) {
      case tg::OpKind::kCompute:
        EXPECT_EQ(a.compute_class, b.compute_class);
        EXPECT_TRUE(std::ranges::equal(original.gemm_mix_of(a), g.gemm_mix_of(b)));
        ++compute;
        break;
      case tg::OpKind::kCollective: {
        EXPECT_EQ(a.collective, b.collective);
        EXPECT_EQ(a.algorithm, b.algorithm);
        EXPECT_EQ(original.groups()[a.group].ranks, g.groups()[b.group].ranks);
        EXPECT_EQ(original.groups()[a.group].stream, g.groups()[b.group].stream);
        EXPECT_EQ(instance.emplace(a.instance, b.instance).first->second, b.instance);
        EXPECT_EQ(reverse.emplace(b.instance, a.instance).first->second, a.instance);
        ++collectives;
        break;
      }
      case tg::OpKind::kSend:
      case tg::OpKind::kRecv:
        EXPECT_EQ(a.peer, b.peer);
        EXPECT_EQ(a.tag, b.tag);
        ++p2p;
        break;
      default:
        break;
    }
  }
  // The graph has all three kinds of parallel work.
  EXPECT_GT(compute, 0u);
  EXPECT_GT(collectives, 0u);
  EXPECT_GT(p2p, 0u);
}

}  // namespace
}  // namespace cs::wl
