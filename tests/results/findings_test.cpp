// The findings (results/findings.h) on stall breakdowns built by hand, so that the cause of the
// time is known: the finding must name the category that explains it, with its share, and not a
// larger one that did not grow, nor an imbalance too small to explain the idle time.
//
// Breakdowns are in milliseconds and every rank adds up to its iteration T; a share is the mean
// over ranks / T.
#include "results/findings.h"

#include <initializer_list>
#include <utility>

#include <gtest/gtest.h>

namespace cs::results {
namespace {

Duration ms(std::int64_t n) { return microseconds(1000 * n); }

// One rank's breakdown: the categories given, in ms.
RankBreakdown rank(std::initializer_list<std::pair<Stall, std::int64_t>> parts) {
  RankBreakdown b;
  for (const auto& [stall, n] : parts) b.time[static_cast<std::size_t>(stall)] += ms(n);
  return b;
}

// Every rank of a case adds up to the iteration, as attribute_stalls guarantees.
void expect_adds_up(const std::vector<RankBreakdown>& ranks, Duration iteration) {
  for (const RankBreakdown& b : ranks) EXPECT_EQ(b.total(), iteration);
}

// ---- the largest stall of a run ----------------------------------------------------------------

TEST(LargestStall, NamesTheCategoryWithTheLargestMeanShare) {
  // T = 100 ms, two pipeline stages. Means: compute (60 + 50)/2 = 55, exposed_tp (20 + 8)/2 =
  // 14, bubble (20 + 42)/2 = 31: the bubble is the largest stall, 31% of the iteration, although
  // TP ties with it on stage 0.
  const std::vector<RankBreakdown> ranks{
      rank({{Stall::kCompute, 60}, {Stall::kTp, 20}, {Stall::kBubble, 20}}),
      rank({{Stall::kCompute, 50}, {Stall::kTp, 8}, {Stall::kBubble, 42}})};
  expect_adds_up(ranks, ms(100));
  const LargestStall f = largest_stall(ranks, ms(100));
  ASSERT_TRUE(f.stall.has_value());
  EXPECT_EQ(*f.stall, Stall::kBubble);
  EXPECT_DOUBLE_EQ(f.share, 0.31);
  EXPECT_DOUBLE_EQ(f.compute_share, 0.55);
  EXPECT_EQ(f.text,
            "pipeline_bubble takes 31% of the iteration (mean over GPUs), the largest stall; "
            "compute 55%");
}

TEST(LargestStall, SmallSharesKeepADecimalAndComputeOnlyNamesNone) {
  // One rank, T = 1 s: 996 ms of compute and 4 ms of exposed DP, 0.4% of the iteration.
  const std::vector<RankBreakdown> ranks{rank({{Stall::kCompute, 996}, {Stall::kDp, 4}})};
  const LargestStall f = largest_stall(ranks, ms(1000));
  ASSERT_TRUE(f.stall.has_value());
  EXPECT_EQ(*f.stall, Stall::kDp);
  EXPECT_EQ(
      f.text,
      "exposed_dp takes 0.4% of the iteration (mean over GPUs), the largest stall; compute 99.6%");
  const LargestStall none = largest_stall({rank({{Stall::kCompute, 10}})}, ms(10));
  EXPECT_FALSE(none.stall.has_value());
  EXPECT_EQ(none.share, 0);
  EXPECT_EQ(none.text, "compute takes the whole iteration on every GPU");
}

TEST(StallShares, AddUpToOne) {
  const std::vector<RankBreakdown> ranks{
      rank({{Stall::kCompute, 70}, {Stall::kDp, 20}, {Stall::kWaitingPeers, 10}}),
      rank({{Stall::kCompute, 90}, {Stall::kDp, 10}})};
  double sum = 0;
  for (double s : stall_shares(ranks, ms(100))) sum += s;
  EXPECT_DOUBLE_EQ(sum, 1.0);
  for (double s : stall_shares({}, ms(100))) EXPECT_EQ(s, 0);
}

// ---- load imbalance ----------------------------------------------------------------------------

// Four pipeline stages, one rank each (grid rank = stage).
std::vector<RankPlace> four_stages() { return {{0, 0}, {1, 1}, {2, 2}, {3, 3}}; }

TEST(LoadImbalance, ASlightlyHeavierStageDoesNotExplainTheBubble) {
  // The case: T = 100 ms, stages 0-2 compute 57 ms and sit 43 ms in the bubble (few
  // micro-batches), the last stage computes 60 ms (5% longer, its logits). The difference,
  // d = 3 ms, is 3% of the iteration: under half of the 43 ms the idle stages do not compute.
  // The bubble is the finding; no imbalance is named (the old rule named "uneven pipeline
  // stages ... idle 43% of the iteration").
  const std::vector<RankBreakdown> ranks{rank({{Stall::kCompute, 57}, {Stall::kBubble, 43}}),
                                         rank({{Stall::kCompute, 57}, {Stall::kBubble, 43}}),
                                         rank({{Stall::kCompute, 57}, {Stall::kBubble, 43}}),
                                         rank({{Stall::kCompute, 60}, {Stall::kBubble, 40}})};
  expect_adds_up(ranks, ms(100));
  EXPECT_FALSE(load_imbalance(ranks, four_stages(), ms(100)).has_value());
  const LargestStall f = largest_stall(ranks, ms(100));
  EXPECT_EQ(f.stall, Stall::kBubble);
  EXPECT_DOUBLE_EQ(f.share, 0.4225);  // (3 x 43 + 40) / 4 / 100
}

TEST(LoadImbalance, UnevenStagesAreNamedWithTheIdleTimeTheyExplain) {
  // T = 100 ms, stage 0 computes 99 ms, stage 1 35 ms (99/35 - 1 = 183% longer): stage 1 does
  // not compute for 65 ms, of which d = 64 ms is the difference in compute, 64% of the
  // iteration and more than half of 65.
  const std::vector<RankBreakdown> ranks{rank({{Stall::kCompute, 99}, {Stall::kPp, 1}}),
                                         rank({{Stall::kCompute, 35}, {Stall::kBubble, 65}})};
  expect_adds_up(ranks, ms(100));
  const auto f = load_imbalance(ranks, {{0, 0}, {8, 1}}, ms(100));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->cause, ImbalanceCause::kUnevenStages);
  EXPECT_EQ(f->busiest.grid_rank, 0);
  EXPECT_EQ(f->idlest.grid_rank, 8);
  EXPECT_DOUBLE_EQ(f->share, 0.64);
  EXPECT_DOUBLE_EQ(f->idle_share, 0.65);
  EXPECT_NEAR(f->longer, 99.0 / 35 - 1, 1e-12);
  EXPECT_EQ(
      f->text,
      "uneven pipeline stages: rank 0 (stage 0) computes 183% longer than rank 8 (stage 1), which "
      "therefore waits 64% of the iteration more than rank 0 (65% not computing in all)");
}

TEST(LoadImbalance, AStragglerIsNamedWhenItExplainsThePeersWait) {
  // T = 80 ms, eight data-parallel ranks of one stage; rank 5 computes 75 ms, the others 50 and
  // wait 25 ms for it in the all-reduce, which then takes 5 ms for all. d = 25 ms: 31.25% of
  // the iteration and 25 of the 30 ms the others do not compute.
  std::vector<RankBreakdown> ranks(
      8, rank({{Stall::kCompute, 50}, {Stall::kWaitingPeers, 25}, {Stall::kDp, 5}}));
  ranks[5] = rank({{Stall::kCompute, 75}, {Stall::kDp, 5}});
  expect_adds_up(ranks, ms(80));
  std::vector<RankPlace> places;
  for (int r = 0; r < 8; ++r) places.push_back({r, 0});
  const auto f = load_imbalance(ranks, places, ms(80));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->cause, ImbalanceCause::kStraggler);
  EXPECT_EQ(f->busiest.grid_rank, 5);
  EXPECT_EQ(f->idlest.grid_rank, 0);  // the first of the equally idle ranks
  EXPECT_DOUBLE_EQ(f->share, 0.3125);
  EXPECT_EQ(f->text,
            "a straggler: rank 5 computes 50% longer than its peers; rank 0 therefore waits 31% of "
            "the iteration more than rank 5 (38% not computing in all)");
  EXPECT_EQ(largest_stall(ranks, ms(80)).stall, Stall::kWaitingPeers);
}

TEST(LoadImbalance, ASmallStragglerOnASlowNetworkIsNotTheCause) {
  // T = 100 ms: every rank sits 58 ms in an exposed all-reduce on a slow network; rank 5
  // computes 42 ms, 5% longer than the others' 40 (they wait 2 ms for it). d = 2 ms explains 2
  // of the 60 ms they do not compute: exposed DP is the finding, no straggler is named.
  std::vector<RankBreakdown> ranks(
      4, rank({{Stall::kCompute, 40}, {Stall::kWaitingPeers, 2}, {Stall::kDp, 58}}));
  ranks[1] = rank({{Stall::kCompute, 42}, {Stall::kDp, 58}});
  expect_adds_up(ranks, ms(100));
  EXPECT_FALSE(load_imbalance(ranks, {{0, 0}, {5, 0}, {2, 0}, {3, 0}}, ms(100)).has_value());
  EXPECT_EQ(largest_stall(ranks, ms(100)).stall, Stall::kDp);
}

TEST(LoadImbalance, TheThresholdsAreTwoPercentAndHalfTheIdleTime) {
  // T = 100 ms. Compute 90 and 80: d = 10 ms, exactly half of the 20 the idle rank does not
  // compute: named.
  const std::vector<RankPlace> two{{0, 0}, {1, 1}};
  EXPECT_TRUE(load_imbalance({rank({{Stall::kCompute, 90}, {Stall::kPp, 10}}),
                              rank({{Stall::kCompute, 80}, {Stall::kBubble, 20}})},
                             two, ms(100))
                  .has_value());
  // Compute 80 and 70, both with 20 ms of exposed TP: d = 10 of the idle rank's 30, under half:
  // TP, not the imbalance, is most of its idle time.
  EXPECT_FALSE(
      load_imbalance({rank({{Stall::kCompute, 80}, {Stall::kTp, 20}}),
                      rank({{Stall::kCompute, 70}, {Stall::kTp, 20}, {Stall::kBubble, 10}})},
                     two, ms(100))
          .has_value());
  // T = 1000 ms, compute 1000 and 981: d = 19 < 2% of 1000, balanced, although d is all of the
  // idle rank's 19 ms.
  EXPECT_FALSE(load_imbalance({rank({{Stall::kCompute, 1000}}),
                               rank({{Stall::kCompute, 981}, {Stall::kWaitingPeers, 19}})},
                              {{0, 0}, {1, 0}}, ms(1000))
                   .has_value());
  // One rank, or no compute at all: nothing to compare.
  EXPECT_FALSE(load_imbalance({rank({{Stall::kCompute, 10}})}, {{0, 0}}, ms(10)).has_value());
}

// ---- scaling studies ---------------------------------------------------------------------------

// A point of a 1 s iteration whose one simulated rank spends `percent` (percent of the
// iteration per category) and computes the rest.
ScalingPoint point(int gpus, double samples_per_s,
                   std::initializer_list<std::pair<Stall, std::int64_t>> percent) {
  const Duration t = ms(1000);
  RankBreakdown b;
  std::int64_t rest = 100;
  for (const auto& [stall, p] : percent) {
    b.time[static_cast<std::size_t>(stall)] = ms(10 * p);
    rest -= p;
  }
  b.time[static_cast<std::size_t>(Stall::kCompute)] = ms(10 * rest);
  return {gpus, t, samples_per_s, {b}};
}

// The finding compares point `at` with point `against` and names `grew` with its two shares.
void expect_finding(const ScalingFinding& f, ScalingVerdict verdict, std::size_t at,
                    std::size_t against, Stall grew, double share_against, double share_at,
                    const std::string& text) {
  EXPECT_EQ(f.verdict, verdict);
  EXPECT_EQ(f.at, at);
  EXPECT_EQ(f.against, against);
  EXPECT_EQ(f.grew, grew);
  EXPECT_DOUBLE_EQ(f.share_against, share_against);
  EXPECT_DOUBLE_EQ(f.share_at, share_at);
  EXPECT_EQ(f.text, text);
}

TEST(Scaling, NamesTheStallThatGrewNotTheLargest) {
  // The case. Strong scaling with TP 8 x PP 2: exposed TP is the largest stall at 16 and
  // 32 GPUs and its share falls (38% -> 33%); the bubble grows 8% -> 13% (fewer micro-batches
  // per replica) and exposed DP 0% -> 4% (a reduction appears). Efficiency at 32 GPUs:
  // 177 / 100 / 2 = 88.5% < 90%, against 16 GPUs: the bubble grew most (+5 points against +4).
  const ScalingStudy s =
      analyze_scaling({point(16, 100, {{Stall::kTp, 38}, {Stall::kBubble, 8}}),
                       point(32, 177, {{Stall::kTp, 33}, {Stall::kBubble, 13}, {Stall::kDp, 4}}),
                       point(64, 280, {{Stall::kTp, 26}, {Stall::kBubble, 20}, {Stall::kDp, 8}})});
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[1].largest.stall, Stall::kTp);  // what the old finding named
  EXPECT_DOUBLE_EQ(s.rows[1].efficiency, 0.885);
  EXPECT_FALSE(s.stops_paying.has_value());
  EXPECT_EQ(s.efficiency_below_90pct, 1u);
  expect_finding(s.finding, ScalingVerdict::kEfficiencyFalls, 1, 0, Stall::kBubble, 0.08, 0.13,
                 "scaling efficiency falls to 88% at 32 GPUs (70% at 64): pipeline_bubble grew "
                 "most against 16 GPUs, from 8% to 13% of each iteration");
}

TEST(Scaling, StopsPayingComparesWithThePointBefore) {
  // Throughput 100, 150, 140: it stops growing at 32 GPUs, which is compared with 16 (not with
  // 8, where efficiency already fell: stopping takes precedence). From 16 to 32 exposed DP goes
  // 10% -> 30% while TP, still the largest at 38%, went from 40%: DP is named.
  const ScalingStudy s = analyze_scaling({point(8, 100, {{Stall::kTp, 40}}),
                                          point(16, 150, {{Stall::kTp, 40}, {Stall::kDp, 10}}),
                                          point(32, 140, {{Stall::kTp, 38}, {Stall::kDp, 30}})});
  EXPECT_EQ(s.efficiency_below_90pct, 1u);
  EXPECT_EQ(s.stops_paying, 2u);
  EXPECT_EQ(s.rows[2].largest.stall, Stall::kTp);
  expect_finding(s.finding, ScalingVerdict::kStopsPaying, 2, 1, Stall::kDp, 0.1, 0.3,
                 "adding GPUs stops paying at 32 GPUs (throughput no longer grows): exposed_dp "
                 "grew most against 16 GPUs, from 10% to 30% of each iteration");
}

TEST(Scaling, HoldsComparesTheLastPointWithTheFirst) {
  // Weak scaling at 95% and 92%: holds; exposed DP grew from 0% to 2%, waiting on peers to 1%.
  const ScalingStudy s =
      analyze_scaling({point(1, 100, {}), point(8, 760, {{Stall::kDp, 1}}),
                       point(32, 2944, {{Stall::kDp, 2}, {Stall::kWaitingPeers, 1}})});
  expect_finding(s.finding, ScalingVerdict::kHolds, 2, 0, Stall::kDp, 0, 0.02,
                 "scaling holds up to 32 GPUs (efficiency 92%); exposed_dp grew most against 1 "
                 "GPU, from 0% to 2% of each iteration");
  // One point: nothing to compare.
  const ScalingStudy one = analyze_scaling({point(8, 100, {{Stall::kTp, 10}})});
  EXPECT_EQ(one.finding.verdict, ScalingVerdict::kHolds);
  EXPECT_FALSE(one.finding.grew.has_value());
  EXPECT_EQ(one.finding.text, "scaling holds up to 8 GPUs (efficiency 100%)");
}

TEST(Scaling, WhenNoStallGrewTheFindingSaysSo) {
  // Twice the GPUs, 1.2 times the throughput, and every stall's share fell (TP 20% -> 15%): the
  // compute per GPU did not shrink with the work; no stall is blamed.
  const ScalingStudy s =
      analyze_scaling({point(8, 100, {{Stall::kTp, 20}}), point(16, 120, {{Stall::kTp, 15}})});
  EXPECT_EQ(s.finding.verdict, ScalingVerdict::kEfficiencyFalls);
  EXPECT_FALSE(s.finding.grew.has_value());
  EXPECT_EQ(s.finding.text,
            "scaling efficiency falls to 60% at 16 GPUs: no stall's share of the iteration grew "
            "against 8 GPUs");
}

TEST(Scaling, TiesGoToTheFirstCategory) {
  // TP and DP both grow by 10 points: exposed_tp comes first in the category order.
  const ScalingStudy s =
      analyze_scaling({point(8, 100, {}), point(16, 100, {{Stall::kTp, 10}, {Stall::kDp, 10}})});
  EXPECT_EQ(s.finding.grew, Stall::kTp);
}

}  // namespace
}  // namespace cs::results
