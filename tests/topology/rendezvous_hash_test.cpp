// max_hash (topology/rendezvous_hash.h): every variant this CPU runs against a brute-force
// argmax of hash_combine, on lengths that cover the vector loops' heads, bodies and tails; and
// max_weighted_hash's shares, order independence and agreement with max_hash.
#include "topology/rendezvous_hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "core/errors.h"
#include "core/random.h"

namespace cs::topo {
namespace {

std::size_t brute_force(const std::vector<std::uint32_t>& ids, std::uint64_t seed) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (hash_combine(seed, ids[i]) > hash_combine(seed, ids[best])) best = i;
  }
  return best;
}

// n distinct ids, spread over the 32-bit range or packed near zero (vertex ids are small).
std::vector<std::uint32_t> distinct_ids(Rng& rng, std::size_t n, bool packed) {
  std::set<std::uint32_t> seen;
  std::vector<std::uint32_t> ids;
  while (ids.size() < n) {
    const auto id = static_cast<std::uint32_t>(packed ? rng.below(4 * n) : rng.next());
    if (seen.insert(id).second) ids.push_back(id);
  }
  return ids;
}

const HashIsa kAll[] = {HashIsa::kScalar, HashIsa::kAvx2, HashIsa::kAvx512};

TEST(RendezvousHash, EveryVariantIsTheArgmaxOfTheHashes) {
  int variants = 0;
  for (HashIsa isa : kAll) variants += supported(isa) ? 1 : 0;
  ASSERT_TRUE(supported(HashIsa::kScalar));
  RecordProperty("variants_run", variants);  // 1 on a CPU without AVX2: only the scalar loop
  Rng rng = Rng::derive(7, 1);
  for (std::size_t n = 1; n <= 200; ++n) {
    for (int trial = 0; trial < 6; ++trial) {
      const std::vector<std::uint32_t> ids = distinct_ids(rng, n, trial % 2 == 0);
      const std::uint64_t seed = trial < 2 ? trial : rng.next();
      const std::size_t want = brute_force(ids, seed);
      EXPECT_EQ(max_hash(ids.data(), n, seed), want) << "n " << n << " trial " << trial;
      for (HashIsa isa : kAll) {
        if (supported(isa)) {
          EXPECT_EQ(max_hash_with(isa, ids.data(), n, seed), want) << "isa " << static_cast<int>(isa) << " n " << n;
        }
      }
    }
  }
}

TEST(RendezvousHash, TheChoiceDoesNotDependOnTheOrder) {
  Rng rng = Rng::derive(7, 2);
  std::vector<std::uint32_t> ids = distinct_ids(rng, 4096, true);
  for (int trial = 0; trial < 20; ++trial) {
    const std::uint64_t seed = rng.next();
    const std::uint32_t chosen = ids[max_hash(ids.data(), ids.size(), seed)];
    std::reverse(ids.begin(), ids.end());
    std::rotate(ids.begin(), ids.begin() + trial * 37 + 1, ids.end());
    EXPECT_EQ(ids[max_hash(ids.data(), ids.size(), seed)], chosen) << trial;
  }
}

TEST(RendezvousHash, EachIdWinsAboutEquallyOften) {
  // 16 ids, 16,000 seeds: each wins 1,000 times in expectation, with a standard deviation of
  // sqrt(16,000 x 1/16 x 15/16) = 30.6; 850-1,150 is about 5 of them either side.
  const std::vector<std::uint32_t> ids = {0, 1, 2, 3, 4, 5, 6, 7, 64, 65, 66, 67, 4096, 4097, 4098, 4099};
  std::vector<int> wins(ids.size(), 0);
  for (std::uint64_t seed = 0; seed < 16000; ++seed) ++wins[max_hash(ids.data(), ids.size(), mix64(seed))];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_GE(wins[i], 850) << ids[i];
    EXPECT_LE(wins[i], 1150) << ids[i];
  }
}

TEST(RendezvousHash, RefusesNoIdsAndAMissingInstructionSet) {
  const std::uint32_t one = 5;
  EXPECT_THROW(max_hash_with(HashIsa::kScalar, &one, 0, 1), InternalError);
  EXPECT_EQ(max_hash_with(HashIsa::kScalar, &one, 1, 1), 0u);
  for (HashIsa isa : kAll) {
    if (!supported(isa)) {
      EXPECT_THROW(max_hash_with(isa, &one, 1, 1), InternalError);
    }
  }
}

TEST(RendezvousHash, WeightedChoiceWinsInProportionToTheWeights) {
  // Weights 1, 2, 3, 10 over 16,000 seeds: 1,000, 2,000, 3,000 and 10,000 wins in expectation,
  // standard deviations sqrt(16,000 p (1 - p)) = 30.6, 42.4, 50.7, 61.2; 5 of them either side.
  const std::vector<std::uint32_t> ids = {17, 4, 4096, 9};
  const std::vector<std::uint32_t> weights = {1, 2, 3, 10};
  const double expected[] = {1000, 2000, 3000, 10000}, sigma[] = {30.6, 42.4, 50.7, 61.2};
  std::vector<int> wins(ids.size(), 0);
  for (std::uint64_t seed = 0; seed < 16000; ++seed) {
    ++wins[max_weighted_hash(ids.data(), weights.data(), ids.size(), mix64(seed))];
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_NEAR(wins[i], expected[i], 5 * sigma[i]) << "weight " << weights[i];
  }
}

TEST(RendezvousHash, WeightedChoiceDoesNotDependOnTheOrder) {
  Rng rng = Rng::derive(7, 3);
  const std::vector<std::uint32_t> ids = distinct_ids(rng, 64, true);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> items;  // (id, weight)
  for (std::uint32_t id : ids) items.emplace_back(id, 1 + static_cast<std::uint32_t>(rng.below(64)));
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint64_t seed = rng.next();
    std::vector<std::uint32_t> a, w;
    for (const auto& [id, weight] : items) {
      a.push_back(id);
      w.push_back(weight);
    }
    const std::uint32_t chosen = a[max_weighted_hash(a.data(), w.data(), a.size(), seed)];
    std::rotate(items.begin(), items.begin() + trial % 7 + 1, items.end());
    std::reverse(items.begin(), items.end());
    a.clear();
    w.clear();
    for (const auto& [id, weight] : items) {
      a.push_back(id);
      w.push_back(weight);
    }
    EXPECT_EQ(a[max_weighted_hash(a.data(), w.data(), a.size(), seed)], chosen) << trial;
  }
}

TEST(RendezvousHash, EqualWeightsChooseAsMaxHashDoes) {
  // Equal weights: max_hash's answer (the scores' order is the hashes'), whatever the weight.
  Rng rng = Rng::derive(7, 4);
  for (std::size_t n = 1; n <= 100; ++n) {
    const std::vector<std::uint32_t> ids = distinct_ids(rng, n, true);
    const std::uint64_t seed = rng.next();
    for (std::uint32_t weight : {1u, 7u, 64u}) {
      const std::vector<std::uint32_t> w(n, weight);
      EXPECT_EQ(max_weighted_hash(ids.data(), w.data(), n, seed), max_hash(ids.data(), n, seed)) << n;
    }
  }
  const std::uint32_t ids[] = {3, 1, 2}, one[] = {1, 1, 1}, zero[] = {1, 0, 1};
  EXPECT_THROW(max_weighted_hash(ids, one, 0, 1), InternalError);
  EXPECT_THROW(max_weighted_hash(ids, zero, 3, 1), InternalError);
}

}  // namespace
}  // namespace cs::topo
