#include "sim/engine/callback.h"

#include <array>
#include <memory>
#include <numeric>
#include <utility>

#include <gtest/gtest.h>

namespace cs::sim {
namespace {

TEST(EngineCallback, SmallLambdaRuns) {
  int hits = 0;
  Callback cb([&hits] { ++hits; });
  ASSERT_TRUE(cb);
  cb();
  cb();
  EXPECT_EQ(hits, 2);
  EXPECT_FALSE(Callback{});
}

TEST(EngineCallback, LargeCaptureGoesToTheHeapAndKeepsItsData) {
  std::array<long, 32> data{};  // 256 bytes: more than the 48-byte inline buffer
  std::iota(data.begin(), data.end(), 1);
  static_assert(sizeof(data) > Callback::kInlineBytes);
  long sum = 0;
  Callback cb([data, &sum] { sum = std::accumulate(data.begin(), data.end(), 0L); });
  Callback moved = std::move(cb);
  EXPECT_FALSE(cb);  // NOLINT(bugprone-use-after-move): a moved-from callback is empty
  moved();
  EXPECT_EQ(sum, 32 * 33 / 2);
}

TEST(EngineCallback, MoveOnlyCapture) {
  auto p = std::make_unique<int>(41);
  int seen = 0;
  Callback cb([p = std::move(p), &seen] { seen = *p + 1; });
  Callback other;
  other = std::move(cb);
  other();
  EXPECT_EQ(seen, 42);
}

TEST(EngineCallback, DestroysItsCaptureExactlyOnce) {
  // shared_ptr use counts show that inline and heap callables are destroyed on reset, on
  // move-assignment over them, and on destruction, and never twice.
  auto token = std::make_shared<int>(0);
  {
    Callback small([token] {});
    std::array<char, 100> pad{};
    Callback big([token, pad] { (void)pad; });
    EXPECT_EQ(token.use_count(), 3);
    Callback moved = std::move(big);
    EXPECT_EQ(token.use_count(), 3);
    small.reset();
    EXPECT_EQ(token.use_count(), 2);
    moved = Callback([] {});
    EXPECT_EQ(token.use_count(), 1);
    Callback again([token] {});
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

}  // namespace
}  // namespace cs::sim
