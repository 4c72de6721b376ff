// TaskGraph construction, validation and the JSON round trip.
#include "taskgraph/task_graph.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs::tg {
namespace {

TaskGraph small_graph() {
  TaskGraph g(2);
  const std::uint32_t dp = g.add_group({"dp0", Stream::kDp, {0, 1}});
  for (std::uint32_t r = 0; r < 2; ++r) {
    const OpId f = g.add_compute(r, "fwd", flops(1.5e12), mebibytes(3), ComputeClass::kGemm);
    const OpId d[] = {f};
    g.add_collective(r, dp, "grads", CollectiveOp::kAllReduce, mebibytes(25), 7, d, CollectiveAlgorithm::kRing);
  }
  g.add_send(0, Stream::kPp, 1, kibibytes(4), 3, "act");
  g.add_recv(1, Stream::kPp, 0, kibibytes(4), 3, "act");
  g.add_delay(1, Stream::kData, "load", microseconds(250));
  const std::uint32_t mix = g.add_gemm_mix({{4096, 12288, 4096}, {4096, 4096, 4096}});
  EXPECT_EQ(g.add_gemm_mix({{4096, 12288, 4096}, {4096, 4096, 4096}}), mix);  // equal lists share an index
  g.set_gemm_mix(0, mix);
  return g;
}

TEST(TaskGraph, JsonRoundTripIsExact) {
  const TaskGraph g = small_graph();
  g.validate();
  const nlohmann::json j = g.to_json();
  const TaskGraph back = TaskGraph::from_json(j, "g.json");
  EXPECT_EQ(back.to_json().dump(), j.dump());
  ASSERT_EQ(back.size(), g.size());
  EXPECT_EQ(back.op(0).flops, flops(1.5e12));
  EXPECT_EQ(back.op(1).instance, 7u);
  EXPECT_EQ(back.op(1).algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(back.deps(1).size(), 1u);
  EXPECT_EQ(back.op(6).duration, microseconds(250));
  EXPECT_EQ(back.name_of(4), "act");
  ASSERT_EQ(back.gemm_mix_of(back.op(0)).size(), 2u);
  EXPECT_EQ(back.gemm_mix_of(back.op(0))[0], (GemmShape{4096, 12288, 4096}));
  EXPECT_TRUE(back.gemm_mix_of(back.op(2)).empty());
}

std::string error_of(const nlohmann::json& j) {
  try {
    TaskGraph::from_json(j, "g.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TaskGraph, BadGraphsNameTheFileAndPath) {
  const nlohmann::json good = small_graph().to_json();
  nlohmann::json j = good;
  j["ops"][1]["deps"] = {5};
  EXPECT_EQ(error_of(j), "config error in g.json at /ops/1/deps/0: expected the id of an earlier op; got the number 5");
  j = good;
  j["ops"][0]["flops"] = 12;
  EXPECT_EQ(error_of(j), "config error in g.json at /ops/0/flops: expected a FLOP count such as \"3.2PFLOP\"; got the number 12");
  j = good;
  j["ops"].erase(3);  // rank 1's all-reduce member
  for (std::size_t i = 0; i < j["ops"].size(); ++i) j["ops"][i]["id"] = i;
  EXPECT_NE(error_of(j).find("has 1 member ops but its group has 2 simulated ranks"), std::string::npos) << error_of(j);
  j = good;
  j["ops"][5]["tag"] = 4;  // the recv no longer matches the send
  EXPECT_NE(error_of(j).find("is not matched one to one"), std::string::npos);
  j = good;
  j["groups"][0]["ranks"] = {0, 2};
  EXPECT_EQ(error_of(j), "config error in g.json at /groups/0/ranks: rank 2 is not below ranks + mirrored = 2");
  j = good;
  j["ops"][0]["gemm_mix"] = 3;
  EXPECT_EQ(error_of(j), "config error in g.json at /ops/0/gemm_mix: expected a gemm_mixes index below 1; got the number 3");
  j = good;
  j["gemm_mixes"][0][1] = {4096, 4096};
  EXPECT_EQ(error_of(j), "config error in g.json at /gemm_mixes/0/1: expected a GEMM shape [m, n, k]; got an array");
  j = good;
  j["ops"][0]["colour"] = "red";
  EXPECT_NE(error_of(j).find("at /ops/0/colour: unknown key"), std::string::npos);
}

}  // namespace
}  // namespace cs::tg
