// Weighted routes and their sums (topology/weighted_route.h): closed forms for exact and
// rounded sums, and the sum built part by part (RouteSum) against the same parts at once.
#include "topology/weighted_route.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/errors.h"

namespace cs::topo {
namespace {

TEST(WeightedRoute, PathsAndSumsOfRoutes) {
  // A path crossing link 3 twice: weight 2 there, scale 1.
  const std::vector<LinkId> path{LinkId{1}, LinkId{3}, LinkId{3}};
  WeightedRoute sum = weighted_path(path);
  EXPECT_EQ(sum.scale, 1u);
  ASSERT_EQ(sum.links.size(), 2u);
  EXPECT_EQ(sum.links[1], (std::pair<LinkId, std::uint32_t>{LinkId{3}, 2}));
  // + a spread over K = 4 sharing link 3: scale lcm(1, 4) = 4; link 1: 1 x 4, link 3: 2 x 4 + 1.
  WeightedRoute spread;
  spread.scale = 4;
  spread.links = {{LinkId{3}, 1}, {LinkId{5}, 3}};
  add_route(sum, spread);
  EXPECT_EQ(sum.scale, 4u);
  EXPECT_TRUE(sum.exact);
  const std::vector<std::pair<LinkId, std::uint32_t>> expected{
      {LinkId{1}, 4}, {LinkId{3}, 9}, {LinkId{5}, 3}};
  EXPECT_EQ(sum.links, expected);
  // + a spread over K = 6: lcm(4, 6) = 12, every weight x 3, its own x 2.
  WeightedRoute six;
  six.scale = 6;
  six.links = {{LinkId{5}, 6}};
  add_route(sum, six);
  EXPECT_EQ(sum.scale, 12u);
  EXPECT_EQ(sum.links[2].second, 3u * 3 + 6 * 2);
  // Three copies of a one-link part over K = 3: 3 x 1/3 of the rate, 12/12 on link 8.
  WeightedRoute third;
  third.scale = 3;
  third.links = {{LinkId{8}, 1}};
  add_route(sum, third, 3);
  EXPECT_EQ(sum.scale, 12u);
  EXPECT_EQ(sum.links.back(), (std::pair<LinkId, std::uint32_t>{LinkId{8}, 12}));
  add_route(sum, third, 0);  // no copies: nothing
  EXPECT_EQ(sum.links.size(), 4u);
  // A scale whose lcm with 12 exceeds 2^20: 2^20 - 3 = 1,048,573 is odd and not a multiple of 3.
  // Every share is rounded up to a multiple of 1/2^20: link 1 (the whole flow) 2^20, link 5
  // 21/12 x 2^20 = 1,835,008 exactly, link 7 ceil(2^20 / (2^20 - 3)) = 2.
  WeightedRoute odd;
  odd.scale = kMaxSpreadScale - 3;
  odd.links = {{LinkId{7}, 1}};
  add_route(sum, odd);
  EXPECT_FALSE(sum.exact);
  EXPECT_EQ(sum.scale, kMaxSpreadScale);
  EXPECT_EQ(sum.links[0].second, kMaxSpreadScale);
  EXPECT_EQ(sum.links[2].second, 1'835'008u);
  EXPECT_EQ(sum.links[4].second, 2u);  // ceil(2^20 / (2^20 - 3))
}

TEST(WeightedRoute, SumOfManyPartsIsAddingThemOneByOne) {
  // sum_routes (a pipeline's members at once) equals add_route part after part: the same links
  // in the same order, the same weights, scale and exactness; with the 2^20 cap exceeded too.
  WeightedRoute a = weighted_path(std::vector<LinkId>{LinkId{1}, LinkId{3}, LinkId{3}});
  WeightedRoute b;
  b.scale = 4;
  b.links = {{LinkId{3}, 1}, {LinkId{5}, 3}};
  WeightedRoute c;
  c.scale = 6;
  c.links = {{LinkId{5}, 6}, {LinkId{9}, 1}};
  WeightedRoute odd;
  odd.scale = kMaxSpreadScale - 3;
  odd.links = {{LinkId{7}, 1}};
  for (bool with_odd : {false, true}) {
    std::vector<RoutePart> parts{{&a, 1}, {&b, 2}, {&c, 3}, {&a, 0}};
    if (with_odd) parts.push_back({&odd, 1});
    WeightedRoute one_by_one;
    for (const RoutePart& p : parts) add_route(one_by_one, *p.route, p.times);
    const WeightedRoute at_once = sum_routes(parts);
    EXPECT_EQ(at_once.links, one_by_one.links) << with_odd;
    EXPECT_EQ(at_once.scale, one_by_one.scale) << with_odd;
    EXPECT_EQ(at_once.exact, one_by_one.exact) << with_odd;
  }
}

TEST(WeightedRoute, PathPartsAndLongSumsAreAddingOneByOne) {
  // A part given as a plain path (RoutePart::path, a pipeline member without a spread) counts as
  // weighted_path(path); sums of more than a few dozen links (summed through a table, not a
  // scan) keep first-use order and add repeated links, as add_route part after part does.
  std::vector<LinkId> long_path, other_path;
  for (std::uint32_t i = 0; i < 40; ++i) long_path.push_back(LinkId{1000 + 7 * i});
  for (std::uint32_t i = 0; i < 40; ++i) other_path.push_back(LinkId{1000 + 14 * i});  // half shared
  other_path.push_back(LinkId{1000});                                                  // a link twice
  WeightedRoute spread;
  spread.scale = 3;
  for (std::uint32_t i = 0; i < 30; ++i) spread.links.push_back({LinkId{1000 + 21 * i}, 1 + i % 3});
  const std::vector<RoutePart> parts{{nullptr, 2, long_path}, {&spread, 1}, {nullptr, 3, other_path}, {nullptr, 0, long_path}};
  WeightedRoute one_by_one;
  for (const RoutePart& p : parts) add_route(one_by_one, p.route ? *p.route : weighted_path(p.path), p.times);
  const WeightedRoute at_once = sum_routes(parts);
  EXPECT_EQ(at_once.links, one_by_one.links);
  EXPECT_EQ(at_once.scale, 3u);
  EXPECT_EQ(at_once.scale, one_by_one.scale);
  EXPECT_TRUE(at_once.exact);
  // Link 1000: 2 x 3 (long path) + 1 (spread) + 3 x 2 x 3 (twice on the other path), over 3.
  ASSERT_FALSE(at_once.links.empty());
  EXPECT_EQ(at_once.links.front(), (std::pair<LinkId, std::uint32_t>{LinkId{1000}, 6 + 1 + 18}));
  EXPECT_EQ(weighted_path(other_path).links.front().second, 2u);
}

TEST(RouteSum, StreamedPartsRescaleToTheirCommonScale) {
  // A path twice (scale 1), then a spread over K = 3, then one over K = 2: the sums so far are
  // multiplied up as the scale grows, 1 -> 3 -> 6. Link 1: 2 x 6 (the path) + 1 x 2 (K = 3);
  // link 2: 2 x 6; link 3: 2 x 2 (K = 3) + 1 x 3 (K = 2), first used in that order.
  RouteSum sum;
  EXPECT_TRUE(sum.empty());
  sum.add(std::vector<LinkId>{LinkId{1}, LinkId{2}}, 2);
  WeightedRoute third;
  third.scale = 3;
  third.links = {{LinkId{1}, 1}, {LinkId{3}, 2}};
  sum.add(third);
  WeightedRoute half;
  half.scale = 2;
  half.links = {{LinkId{3}, 1}};
  sum.add(half);
  const WeightedRoute out = sum.finish();
  EXPECT_EQ(out.scale, 6u);
  EXPECT_TRUE(out.exact);
  const std::vector<std::pair<LinkId, std::uint32_t>> expected{{LinkId{1}, 14}, {LinkId{2}, 12}, {LinkId{3}, 7}};
  EXPECT_EQ(out.links, expected);
  // The same parts in one sum_routes: the same route.
  const std::vector<LinkId> path{LinkId{1}, LinkId{2}};
  const std::vector<RoutePart> parts{{nullptr, 2, path}, {&third, 1}, {&half, 1}};
  const WeightedRoute at_once = sum_routes(parts);
  EXPECT_EQ(at_once.links, out.links);
  EXPECT_EQ(at_once.scale, out.scale);
}

TEST(RouteSum, MappedLinksAddIntoTheirImage) {
  // Links mapped to a representative (a folded run's orbits: 10, 11 -> 10; 12 -> 12) add into it,
  // in the order of the images' first use; the same as summing first and merging after.
  const auto map = [](LinkId l) { return LinkId{l.value == 11 ? 10u : l.value}; };
  WeightedRoute spread;
  spread.scale = 4;
  spread.links = {{LinkId{12}, 2}, {LinkId{11}, 1}, {LinkId{10}, 1}};
  RouteSum sum;
  sum.add(spread, 3, map);
  sum.add(std::vector<LinkId>{LinkId{11}, LinkId{5}}, 1, map);
  const WeightedRoute out = sum.finish();
  EXPECT_EQ(out.scale, 4u);
  const std::vector<std::pair<LinkId, std::uint32_t>> expected{{LinkId{12}, 6}, {LinkId{10}, 3 + 3 + 4}, {LinkId{5}, 4}};
  EXPECT_EQ(out.links, expected);
}

// Thousands of links added in a scattered order, most several times: past the linear scan and
// through several table growths (from no hint and from a hint), each link's sum is the sum of
// its additions and the links come out in the order of their first addition.
TEST(LinkSums, SumsInFirstAdditionOrderThroughTheTableGrowths) {
  for (const std::size_t hint : {std::size_t{0}, std::size_t{100}}) {
    LinkSums sums(hint);
    std::vector<std::pair<LinkId, std::uint32_t>> expected;
    std::map<std::uint32_t, std::size_t> at;  // link -> index in expected
    for (std::uint32_t k = 0; k < 20'000; ++k) {
      const std::uint32_t link = (k * 7'919u) % 5'003u;  // 5,003 is prime: every link, scattered
      const std::uint32_t w = k % 5 + 1;
      sums.add(LinkId{link}, w);
      const auto [it, fresh] = at.try_emplace(link, expected.size());
      if (fresh) expected.emplace_back(LinkId{link}, 0);
      expected[it->second].second += w;
    }
    EXPECT_EQ(sums.size(), 5'003u);
    std::vector<std::pair<LinkId, std::uint32_t>> out;
    sums.write(out);
    EXPECT_EQ(out, expected);
    // A rescale multiplies every sum.
    sums.transform([](std::uint64_t w) { return 3 * w; });
    sums.write(out);
    for (auto& e : expected) e.second *= 3;
    EXPECT_EQ(out, expected);
  }
}

// The same against a plain reference in each storage and through each change between them:
// ids sparse (the table throughout), dense (the dense storage), increasing (the dense storage
// extended at its end), and dense, then one id far past them (back to a table), then dense again
// (the dense storage once more).
TEST(LinkSums, EveryStorageAndEveryChangeBetweenThemKeepTheSumsAndTheirOrder) {
  using Storage = LinkSums::Storage;
  struct Reference {
    std::vector<std::pair<LinkId, std::uint32_t>> sums;
    std::map<std::uint32_t, std::size_t> at;
    void add(std::uint32_t link, std::uint32_t w) {
      const auto [it, fresh] = at.try_emplace(link, sums.size());
      if (fresh) sums.emplace_back(LinkId{link}, 0);
      sums[it->second].second += w;
    }
  };
  const auto check = [](const LinkSums& sums, const Reference& ref) {
    std::vector<std::pair<LinkId, std::uint32_t>> out;
    sums.write(out);
    EXPECT_EQ(out, ref.sums);
    EXPECT_EQ(sums.size(), ref.sums.size());
  };
  const auto fill = [](LinkSums& sums, Reference& ref, std::uint32_t n, auto id) {
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t w = k % 7 + 1;
      sums.add(LinkId{id(k)}, w);
      ref.add(id(k), w);
    }
  };
  {
    LinkSums sums;
    Reference ref;
    fill(sums, ref, 3'000, [](std::uint32_t k) { return (k * 7'919u) % 1'009u * 1'000u; });
    EXPECT_EQ(sums.storage(), Storage::kTable);
    check(sums, ref);
  }
  {
    LinkSums sums;
    Reference ref;
    fill(sums, ref, 3'000, [](std::uint32_t k) { return (k * 7'919u) % 1'009u; });
    EXPECT_EQ(sums.storage(), Storage::kDense);
    check(sums, ref);
  }
  {
    LinkSums sums;
    Reference ref;
    fill(sums, ref, 20'000, [](std::uint32_t k) { return k / 3; });
    EXPECT_EQ(sums.storage(), Storage::kDense);
    check(sums, ref);
  }
  {
    LinkSums sums;
    Reference ref;
    fill(sums, ref, 2'000, [](std::uint32_t k) { return (k * 7'919u) % 503u; });
    EXPECT_EQ(sums.storage(), Storage::kDense);
    fill(sums, ref, 1, [](std::uint32_t) { return 4'000'000u; });
    EXPECT_EQ(sums.storage(), Storage::kTable);
    check(sums, ref);
    // Dense again once the links below the far id fill in: 600,000 ids, each several times.
    fill(sums, ref, 1'800'000, [](std::uint32_t k) { return (k * 7'919u) % 600'000u * 6u; });
    EXPECT_EQ(sums.storage(), Storage::kDense);
    check(sums, ref);
    sums.transform([](std::uint64_t w) { return 2 * w; });
    for (auto& e : ref.sums) e.second *= 2;
    check(sums, ref);
  }
}

// A sum started dense (from a like sum's dense span) gives what one started empty gives; its
// dense span is that of its storage while it holds a link per 8 ids or more, else 0, so a small
// sum started dense passes no span on.
TEST(LinkSums, AStartInTheDenseStorageGivesTheSameSumsAndItsSpanOnlyWhileDense) {
  LinkSums plain, started(0, 4'000);
  EXPECT_EQ(started.storage(), LinkSums::Storage::kDense);
  EXPECT_EQ(started.dense_span(), 0u);  // empty
  for (std::uint32_t k = 0; k < 6'000; ++k) {
    const LinkId l{(k * 7'919u) % 3'001u};
    plain.add(l, k % 3 + 1);
    started.add(l, k % 3 + 1);
  }
  std::vector<std::pair<LinkId, std::uint32_t>> a, b;
  plain.write(a);
  started.write(b);
  EXPECT_EQ(a, b);
  EXPECT_GE(plain.dense_span(), 3'001u);  // grown past its largest id
  EXPECT_EQ(started.dense_span(), 4'000u);
  LinkSums small(0, 4'000);
  for (std::uint32_t l = 0; l < 500; ++l) small.add(LinkId{l * 7}, 1);
  EXPECT_EQ(small.storage(), LinkSums::Storage::kDense);
  EXPECT_EQ(small.dense_span(), 0u);  // 500 links over 4,000 ids
  small.add(LinkId{3'999}, 1);
  EXPECT_EQ(small.dense_span(), 4'000u);  // 501 x 8 > 4,000
  LinkSums sparse;
  for (std::uint32_t l = 0; l < 500; ++l) sparse.add(LinkId{l * 1'000}, 1);
  EXPECT_EQ(sparse.storage(), LinkSums::Storage::kTable);
  EXPECT_EQ(sparse.dense_span(), 0u);
}

TEST(LinkSums, ASumBeyond32BitsThrowsInEveryStorage) {
  LinkSums few;
  few.add(LinkId{7}, UINT32_MAX);
  EXPECT_THROW(few.add(LinkId{7}, 1), InternalError);
  for (const std::uint32_t spacing : {1u, 1'000u}) {  // the dense storage, the table
    LinkSums many;
    for (std::uint32_t l = 0; l < 100; ++l) many.add(LinkId{l * spacing}, UINT32_MAX - 1);
    EXPECT_EQ(many.storage(), spacing == 1 ? LinkSums::Storage::kDense : LinkSums::Storage::kTable);
    many.add(LinkId{42 * spacing}, 1);
    EXPECT_THROW(many.add(LinkId{42 * spacing}, 1), InternalError);
    EXPECT_THROW(many.transform([](std::uint64_t w) { return 2 * w; }), InternalError);
  }
}

TEST(RouteSum, AWeightBeyond32BitsThrows) {
  // 2^31 copies of a path crossing a link twice: 2^32 > UINT32_MAX, as the second crossing adds.
  RouteSum twice;
  EXPECT_THROW(twice.add(std::vector<LinkId>{LinkId{1}, LinkId{1}}, 1u << 31), InternalError);
  // One part whose weight times its copies exceeds 2^32 throws as it is added.
  WeightedRoute heavy;
  heavy.scale = 1;
  heavy.links = {{LinkId{1}, 1u << 16}};
  RouteSum sum;
  EXPECT_THROW(sum.add(heavy, 1u << 16), InternalError);
}

}  // namespace
}  // namespace cs::topo
