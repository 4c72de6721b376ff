// RankSymmetries: images of the grid form against hand-computed permutations, its checks, and
// the JSON of both forms inside a TaskGraph (schema 2 and schema 1's dense permutations).
#include "taskgraph/rank_symmetries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/errors.h"
#include "taskgraph/task_graph.h"

namespace cs::tg {
namespace {

std::vector<std::uint32_t> permutation(const RankSymmetries& s, std::size_t k, std::uint32_t n) {
  std::vector<std::uint32_t> p;
  for (std::uint32_t r = 0; r < n; ++r) p.push_back(s.image(k, r));
  return p;
}

TEST(RankSymmetries, ShiftsMoveTheirDigitsCyclically) {
  // A 2 x 3 x 2 grid (g = a + 2 b + 6 c), axes a (radix 2, stride 1) and c (radix 2, stride 6);
  // b is never shifted. Ranks are the grid indices reversed: rank r has grid index 11 - r.
  std::vector<std::uint32_t> grid_index;
  for (std::uint32_t r = 0; r < 12; ++r) grid_index.push_back(11 - r);
  RankSymmetries s({{2, 1}, {2, 6}}, grid_index);
  s.add_shift({1, 0});  // a + 1 mod 2: g -> g ^ 1
  s.add_shift({1, 1});  // and c + 1 mod 2: g -> (g ^ 1) +- 6
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.check(12).message.empty());
  // Rank r = 11 - g. Shift 0 maps g = 11 - r to g ^ 1, so rank r to 11 - ((11 - r) ^ 1):
  // 0 (g 11) -> g 10 = rank 1, 1 -> 0, 2 (g 9) -> g 8 = rank 3, ...
  EXPECT_EQ(permutation(s, 0, 12), (std::vector<std::uint32_t>{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10}));
  // Shift 1 also moves c: g 11 (a 1, b 2, c 1) -> a 0, b 2, c 0 = g 4 = rank 7; g 0 -> g 7 = rank 4.
  EXPECT_EQ(permutation(s, 1, 12), (std::vector<std::uint32_t>{7, 6, 9, 8, 11, 10, 1, 0, 3, 2, 5, 4}));
}

// The image sets of a rank set under the representatives are its image sets under every
// symmetry, first occurrences in the same order. Grid g = dp + 4 pp + 8 tp (radices 4, 2, 2),
// ranks a permutation of the grid, every non-identity shift listed.
TEST(RankSymmetries, SetImageRepresentativesGiveEveryImageOfTheSet) {
  std::vector<std::uint32_t> grid_index(16);
  for (std::uint32_t r = 0; r < 16; ++r) grid_index[r] = (r * 7 + 3) % 16;  // 7 is odd: a permutation
  RankSymmetries s({{4, 1}, {2, 4}, {2, 8}}, grid_index);
  for (std::uint32_t d = 0; d < 4; ++d) {
    for (std::uint32_t p = 0; p < 2; ++p) {
      for (std::uint32_t t = 0; t < 2; ++t) {
        if (d + p + t > 0) s.add_shift({d, p, t});
      }
    }
  }
  ASSERT_TRUE(s.check(16).message.empty());
  std::vector<std::uint32_t> rank_at(16);
  for (std::uint32_t r = 0; r < 16; ++r) rank_at[grid_index[r]] = r;
  const auto ranks_of = [&](std::initializer_list<std::uint32_t> grid) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t g : grid) out.push_back(rank_at[g]);
    return out;
  };
  // The set and its distinct images, as sorted sets, in order of their first symmetry among
  // `asked` (as the executor replays them).
  const auto images = [&](const std::vector<std::uint32_t>& set, const std::vector<std::size_t>& asked) {
    std::vector<std::vector<std::uint32_t>> out{set};
    std::sort(out[0].begin(), out[0].end());
    for (std::size_t k : asked) {
      std::vector<std::uint32_t> image;
      for (std::uint32_t r : set) image.push_back(s.image(k, r));
      std::sort(image.begin(), image.end());
      if (std::find(out.begin(), out.end(), image) == out.end()) out.push_back(image);
    }
    return out;
  };
  std::vector<std::size_t> all(s.size());
  for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
  struct Case {
    std::vector<std::uint32_t> set;
    std::size_t representatives;
  };
  const Case cases[] = {
      {ranks_of({4, 5, 6, 7}), 3},    // a dp group (pp 1): invariant along dp; 3 other (pp, tp)
      {ranks_of({1, 9}), 7},          // a tp group: invariant along tp; 4 x 2 - 1 others
      {ranks_of({0, 1, 2, 3, 8, 9, 10, 11}), 1},  // dp x tp: only the pp shift moves it
      {ranks_of({0, 2}), 15},         // dp 0 and 2: a shift by 2 fixes it, a unit shift does not
      {ranks_of({0, 5, 14}), 15},     // no structure
      {ranks_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}), 0},  // every rank
  };
  for (const Case& c : cases) {
    const std::vector<std::size_t> asked = s.set_image_representatives(c.set);
    EXPECT_EQ(asked.size(), c.representatives);
    EXPECT_TRUE(std::is_sorted(asked.begin(), asked.end()));
    EXPECT_EQ(images(c.set, asked), images(c.set, all));
  }
}

TEST(RankSymmetries, PermutesSymmetriesWhenTheShiftsAreClosed) {
  // Every shift of a radix-4 axis: each one permutes them (with the identity). Shifts 1 and 3
  // alone are not closed: 1 + 1 = 2 is not listed, 1 + 3 = 0 is the identity, 3 + 3 = 2 is not.
  std::vector<std::uint32_t> grid_index(8);
  std::iota(grid_index.begin(), grid_index.end(), 0u);
  RankSymmetries all({{4, 1}}, grid_index);
  for (std::uint32_t d = 1; d < 4; ++d) all.add_shift({d});
  for (std::size_t k = 0; k < all.size(); ++k) EXPECT_TRUE(all.permutes_symmetries(k)) << k;
  RankSymmetries some({{4, 1}}, grid_index);
  some.add_shift({1});
  some.add_shift({3});
  EXPECT_FALSE(some.permutes_symmetries(0));
  EXPECT_FALSE(some.permutes_symmetries(1));
  RankSymmetries two({{4, 1}}, grid_index);
  two.add_shift({2});  // 2 + 2 = 0
  EXPECT_TRUE(two.permutes_symmetries(0));
  RankSymmetries dense;
  dense.add_permutation({1, 0});
  EXPECT_FALSE(dense.permutes_symmetries(0));  // the explicit form is not checked
}

TEST(RankSymmetries, AGridOfNoRankHasNoImageToAsk) {
  RankSymmetries none({{1, 1}}, {});
  EXPECT_TRUE(none.set_image_representatives({}).empty());
}

TEST(RankSymmetries, ChecksNameWhatIsWrong) {
  RankSymmetries overlapping({{4, 1}, {2, 2}}, {0, 1, 2, 3, 4, 5, 6, 7});  // digit of stride 2 inside the radix-4 one
  overlapping.add_shift({1, 0});
  EXPECT_EQ(overlapping.check(8).path, "/axes/1");
  RankSymmetries too_wide({{4, 1}, {4, 4}}, {0, 1, 2, 3, 4, 5, 6, 7});  // 4 x 4 = 16 does not divide 8
  EXPECT_EQ(too_wide.check(8).path, "/axes");
  RankSymmetries not_a_bijection({{2, 1}}, {0, 0, 1, 3});
  EXPECT_EQ(not_a_bijection.check(4).path, "/grid_index");
  RankSymmetries wrong_count({{2, 1}}, {0, 1, 2, 3});
  EXPECT_EQ(wrong_count.check(6).path, "/grid_index");
  RankSymmetries big_shift({{2, 1}}, {0, 1, 2, 3});
  big_shift.add_shift({2});
  EXPECT_EQ(big_shift.check(4).path, "/shifts/0/0");
  EXPECT_THROW(big_shift.add_shift({1, 1}), InternalError);  // one entry per axis
  RankSymmetries dense;
  dense.add_permutation({1, 0, 2});
  dense.add_permutation({1, 1, 2});
  EXPECT_EQ(dense.check(3).path, "/1");
}

// Two ranks simulated, two mirrored, on a 2 x 2 grid: the job is invariant under shifting the
// first digit (ranks 0 <-> 2, 1 <-> 3 with grid indices 0, 2, 1, 3).
TaskGraph mirrored_graph() {
  TaskGraph g(2, 2);
  const std::uint32_t dp = g.add_group({"dp0", Stream::kDp, {0, 2}});
  const std::uint32_t dp1 = g.add_group({"dp1", Stream::kDp, {1, 3}});
  g.add_collective(0, dp, "grads", CollectiveOp::kAllReduce, mebibytes(1), 1);
  g.add_collective(1, dp1, "grads", CollectiveOp::kAllReduce, mebibytes(1), 2);
  RankSymmetries s({{2, 1}}, {0, 2, 1, 3});
  s.add_shift({1});
  g.set_symmetries(std::move(s));
  return g;
}

TEST(RankSymmetries, GraphJsonRoundTripKeepsTheGrid) {
  const TaskGraph g = mirrored_graph();
  g.validate();
  const nlohmann::json j = g.to_json();
  EXPECT_EQ(j["schema"], "clustersim.taskgraph/2");
  EXPECT_EQ(j["symmetries"].dump(), R"({"axes":[{"radix":2,"stride":1}],"grid_index":[0,2,1,3],"shifts":[[1]]})");
  const TaskGraph back = TaskGraph::from_json(j, "g.json");
  EXPECT_EQ(back.to_json().dump(), j.dump());
  EXPECT_EQ(permutation(back.symmetries(), 0, 4), (std::vector<std::uint32_t>{2, 3, 0, 1}));
}

TEST(RankSymmetries, SchemaOneDensePermutationsAreStillRead) {
  nlohmann::json j = mirrored_graph().to_json();
  j["schema"] = "clustersim.taskgraph/1";
  j["symmetries"] = {{2, 3, 0, 1}};
  const TaskGraph back = TaskGraph::from_json(j, "old.json");
  ASSERT_EQ(back.symmetries().size(), 1u);
  EXPECT_TRUE(back.symmetries().explicit_form());
  EXPECT_EQ(permutation(back.symmetries(), 0, 4), (std::vector<std::uint32_t>{2, 3, 0, 1}));
  j["symmetries"] = {{2, 3, 0, 0}};
  try {
    TaskGraph::from_json(j, "old.json");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "config error in old.json at /symmetries/0: expected a permutation of the ranks 0..3");
  }
}

TEST(RankSymmetries, BadGridsInJsonNameThePath) {
  nlohmann::json j = mirrored_graph().to_json();
  j["symmetries"]["shifts"] = {{2}};
  try {
    TaskGraph::from_json(j, "g.json");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("at /symmetries/shifts/0/0"), std::string::npos) << e.what();
  }
  j = mirrored_graph().to_json();
  j["symmetries"]["grid_index"] = {0, 2, 1, 1};
  try {
    TaskGraph::from_json(j, "g.json");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "config error in g.json at /symmetries/grid_index: expected a permutation of the ranks 0..3 (each rank's grid index)");
  }
}

}  // namespace
}  // namespace cs::tg
