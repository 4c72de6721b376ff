// Order statistics (core/statistics.h) and the enum-name tables (core/enum_names.h).
#include "core/statistics.h"

#include <gtest/gtest.h>

#include "core/collective_kind.h"
#include "core/config.h"
#include "core/enum_names.h"

namespace cs {
namespace {

TEST(Statistics, QuantileInterpolatesBetweenClosestRanks) {
  // numpy.quantile([1, 2, 3, 4], q): h = q (n - 1).
  const std::vector<double> x = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile(x, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.5), 2.5);   // h = 1.5
  EXPECT_DOUBLE_EQ(quantile(x, 0.1), 1.3);   // h = 0.3
  EXPECT_DOUBLE_EQ(quantile(x, 0.9), 3.7);   // h = 2.7
  EXPECT_DOUBLE_EQ(quantile(x, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantile(x, 7.0), 4.0);   // q clamped to [0, 1]
  EXPECT_DOUBLE_EQ(quantile({7.0}, 0.9), 7.0);
  EXPECT_THROW(quantile({}, 0.5), InternalError);
}

TEST(Statistics, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);  // = quantile 0.5
  // Integer-valued: the mean of the two middle values rounds toward zero (7 ps and 8 ps: 7 ps).
  EXPECT_EQ(median(std::vector<Duration>{Duration{8}, Duration{7}}), Duration{7});
  EXPECT_THROW(median(std::vector<double>{}), InternalError);
}

TEST(EnumNames, OneTableReadBothWays) {
  EXPECT_STREQ(to_string(CollectiveOp::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(parse_collective_op("all_to_all"), CollectiveOp::kAllToAll);
  EXPECT_FALSE(parse_collective_op("allreduce"));
  EXPECT_EQ(parse_collective_algorithm("hd"), CollectiveAlgorithm::kHalvingDoubling);
  EXPECT_EQ(enum_name_list(kCollectiveAlgorithmNames), "ring, tree, hd, direct, hierarchical, nvls, nvls_tree, collnet, auto");
  // Every table name parses back to its value.
  for (const auto& e : kCollectiveOpNames) EXPECT_EQ(parse_enum(kCollectiveOpNames, e.name), e.value) << e.name;
}

TEST(EnumNames, ConfigNodesReadATableAndListItsNamesOnError) {
  const ConfigDocument doc = ConfigDocument::parse(R"({"op": "broadcast", "bad": "gather"})", "t.json");
  EXPECT_EQ(doc.root().at("op").as_enum(kCollectiveOpNames), CollectiveOp::kBroadcast);
  try {
    doc.root().at("bad").as_enum(kCollectiveOpNames);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config error in t.json at /bad: expected one of \"all_reduce\", \"all_gather\", \"reduce_scatter\", "
              "\"all_to_all\", \"broadcast\", \"reduce\", \"send_recv\"; got the string \"gather\"");
  }
}

TEST(CollectiveKind, BusBandwidthFactorsOfNcclTests) {
  // nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all
  // (n-1)/n; broadcast, reduce, send_recv 1.
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kSendRecv, 2), 1.0);
}

}  // namespace
}  // namespace cs
