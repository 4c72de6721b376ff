#include "sim/network/pooled_lists.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace cs::net {
namespace {

struct Entry {
  std::uint64_t key;
  double value;
};

// Lists grown one entry at a time, interleaved (each list's growth past one entry frees its slot,
// which the next new list takes), hold what vectors given the same operations hold, through pops
// and growths into heap blocks.
TEST(PooledLists, ListsHoldWhatVectorsHoldThroughInterleavedGrowthAndReuse) {
  PooledLists<Entry> pool;
  constexpr int kLists = 7;
  std::vector<PooledLists<Entry>::List> lists(kLists);
  std::vector<std::vector<Entry>> expected(kLists);
  std::uint64_t next = 1;
  // List k gets 3^k entries at most (up to 729), popped at every 5th push; every 50 rounds a
  // list of one entry more starts (its slot one that a growing list left, after the first).
  std::vector<PooledLists<Entry>::List> singles;
  for (int round = 0; round < 800; ++round) {
    if (round % 50 == 0) {
      singles.emplace_back();
      pool.push_back(singles.back(), Entry{1'000'000u + static_cast<unsigned>(round), 0.5});
    }
    for (int k = 0; k < kLists; ++k) {
      int cap = 1;
      for (int j = 0; j < k; ++j) cap *= 3;
      if (static_cast<int>(expected[k].size()) >= cap) continue;
      const Entry e{next, static_cast<double>(next) / 2};
      ++next;
      pool.push_back(lists[k], e);
      expected[k].push_back(e);
      if (next % 5 == 0) {
        lists[k].pop_back();
        expected[k].pop_back();
      }
    }
  }
  for (int k = 0; k < kLists; ++k) {
    ASSERT_EQ(lists[k].size(), expected[k].size()) << "list " << k;
    EXPECT_EQ(lists[k].empty(), expected[k].empty());
    std::size_t i = 0;
    for (const Entry& e : lists[k]) {
      EXPECT_EQ(e.key, expected[k][i].key) << "list " << k << " entry " << i;
      EXPECT_EQ(e.value, expected[k][i].value);
      ++i;
    }
    if (!expected[k].empty()) {
      EXPECT_EQ(lists[k].back().key, expected[k].back().key);
    }
  }
  for (std::size_t i = 0; i < singles.size(); ++i) {
    ASSERT_EQ(singles[i].size(), 1u);
    EXPECT_EQ(singles[i][0].key, 1'000'000u + 50 * i);
  }
  for (auto& list : lists) pool.release(list);
  for (auto& list : singles) pool.release(list);
  EXPECT_TRUE(lists[kLists - 1].empty());
}

// A list of 100,000 entries and lists of one past a chunk of slots (64 KiB: 4,096 slots of 16
// bytes) keep every entry; after release and clear() a fresh list starts over from an empty pool.
TEST(PooledLists, AListPastAChunkKeepsItsEntriesAndClearStartsOver) {
  PooledLists<Entry> pool;
  PooledLists<Entry>::List big, small;
  std::vector<PooledLists<Entry>::List> ones(10'000);
  constexpr std::uint64_t kEntries = 100'000;
  for (std::uint64_t i = 0; i < kEntries; ++i) {
    pool.push_back(big, Entry{i, 0});
    if (i % 1000 == 0) pool.push_back(small, Entry{i, 1});
    if (i < ones.size()) pool.push_back(ones[i], Entry{i, 2});
  }
  ASSERT_EQ(big.size(), kEntries);
  ASSERT_EQ(small.size(), 100u);
  for (std::uint64_t i = 0; i < kEntries; ++i) ASSERT_EQ(big[i].key, i);
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_EQ(small[i].key, 1000 * i);
  for (std::uint64_t i = 0; i < ones.size(); ++i) ASSERT_EQ(ones[i][0].key, i);
  pool.release(big);
  pool.release(small);
  EXPECT_TRUE(big.empty());
  pool.clear();
  PooledLists<Entry>::List fresh;
  EXPECT_TRUE(fresh.empty());
  pool.push_back(fresh, Entry{42, 4.2});
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].key, 42u);
}

// The slot a list leaves when it grows past one entry is the next one given: the lists of links
// whose flows arrive one by one reuse the slots instead of growing the pool.
TEST(PooledLists, TheSlotAGrowingListLeavesIsTheNextOneGiven) {
  PooledLists<Entry> pool;
  PooledLists<Entry>::List a, b, c;
  pool.push_back(a, Entry{1, 0});
  const Entry* slot = &a[0];
  pool.push_back(a, Entry{2, 0});  // into a heap block: the slot is free
  EXPECT_NE(&a[0], slot);
  pool.push_back(b, Entry{3, 0});
  EXPECT_EQ(&b[0], slot);
  pool.push_back(c, Entry{4, 0});  // no free slot left: a new one
  EXPECT_NE(&c[0], slot);
  EXPECT_EQ(a[0].key, 1u);
  EXPECT_EQ(a[1].key, 2u);
  EXPECT_EQ(b[0].key, 3u);
  EXPECT_EQ(c[0].key, 4u);
  pool.release(a);
}

// reserve() gives a list one block for what it will hold: no move while it fills to that, the
// entries kept when a list of one slot or of a block moves, and the slot it leaves given next.
TEST(PooledLists, ReserveTakesOneBlockForWhatTheListWillHold) {
  PooledLists<Entry> pool;
  PooledLists<Entry>::List a, b, c, d;
  pool.reserve(a, 5);
  const Entry* block = a.begin();
  for (std::uint64_t i = 0; i < 5; ++i) pool.push_back(a, Entry{i, 0});
  EXPECT_EQ(a.begin(), block);
  pool.reserve(a, 3);  // fewer than it holds: nothing
  EXPECT_EQ(a.begin(), block);
  pool.reserve(a, 12);  // from a block to a larger one
  for (std::uint64_t i = 5; i < 12; ++i) pool.push_back(a, Entry{i, 0});
  ASSERT_EQ(a.size(), 12u);
  for (std::uint64_t i = 0; i < 12; ++i) EXPECT_EQ(a[i].key, i);
  pool.reserve(b, 1);  // one entry: a slot
  pool.push_back(b, Entry{7, 0});
  const Entry* slot = b.begin();
  pool.reserve(b, 3);  // from the slot to a block, which frees the slot
  pool.push_back(b, Entry{8, 0});
  pool.push_back(b, Entry{9, 0});
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].key, 7u);
  EXPECT_EQ(b[2].key, 9u);
  pool.push_back(c, Entry{10, 0});
  EXPECT_EQ(c.begin(), slot);
  pool.reserve(d, 0);
  EXPECT_TRUE(d.empty());
  pool.release(a);
  pool.release(b);
}

}  // namespace
}  // namespace cs::net
