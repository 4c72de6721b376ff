// Batches of starts (FlowNetwork::begin_batch / end_batch): the flows join their links at the
// batch's end, each link's list grown once. The network must then be, bit for bit, the one
// attaching each flow as it starts gives: every delivery time and every link's bytes are
// compared exactly with an unbatched run of the same starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/errors.h"
#include "core/random.h"
#include "sim/network/flow_network.h"

namespace cs::net {
namespace {

constexpr std::uint32_t kLinks = 16;

struct Outcome {
  std::vector<std::int64_t> delivered;  // ps, per flow in start order
  std::vector<std::int64_t> bytes;      // per link
  bool operator==(const Outcome&) const = default;
};

// Two waves of 150 flows each over 16 links (sharing enough that lists grow well past their
// heap threshold): the first at time 0, the second from a delivery's callback, while the first
// wave's flows still hold the links. Paths, pipelines and weighted flows mixed.
Outcome run(std::uint64_t seed, bool batched) {
  sim::Simulator sim;
  std::vector<LinkCapacity> caps;
  Rng rng = Rng::derive(seed, 11);
  for (std::uint32_t l = 0; l < kLinks; ++l) caps.push_back({bytes_per_second(1e8 * static_cast<double>(1 + rng.below(8))), Duration{0}});
  FlowNetwork net(sim, caps);
  Outcome out;
  out.delivered.assign(300, -1);
  const auto path = [&] {
    std::vector<LinkId> p;
    for (std::uint64_t k = 0, n = 1 + rng.below(5); k < n; ++k) {
      const LinkId l{static_cast<std::uint32_t>(rng.below(kLinks))};
      if (std::find(p.begin(), p.end(), l) == p.end()) p.push_back(l);
    }
    return p;
  };
  bool second = false;
  std::function<void(int)> wave;
  wave = [&](int first) {
    if (batched) net.begin_batch();
    for (int f = first; f < first + 150; ++f) {
      const Bytes b = bytes(static_cast<std::int64_t>(1'000 + rng.below(2'000'000)));
      const Duration tail{static_cast<std::int64_t>(rng.below(1'000'000))};
      // The first delivery of the first wave starts the second, from its own event.
      auto done = [&out, &sim, &second, &wave, f] {
        out.delivered[static_cast<std::size_t>(f)] = sim.now().time_since_epoch().count();
        if (!second && f < 150) {
          second = true;
          wave(150);
        }
      };
      switch (f % 3) {
        case 0:
          net.start_flow(path(), b, tail, done);
          break;
        case 1: {
          const std::vector<LinkId> a = path(), c = path();
          const std::vector<std::span<const LinkId>> members{a, c};
          const std::vector<std::uint32_t> copies{1 + static_cast<std::uint32_t>(rng.below(3)), 1};
          net.start_pipeline(members, copies, b, tail, done);
          break;
        }
        default: {
          std::vector<WeightedLink> links;
          for (LinkId l : path()) links.push_back({l, 1 + static_cast<std::uint32_t>(rng.below(4))});
          net.start_weighted(links, 1 + static_cast<std::uint32_t>(rng.below(4)), b, tail, done);
        }
      }
    }
    if (batched) net.end_batch();
  };
  wave(0);
  sim.run();
  for (std::uint32_t l = 0; l < kLinks; ++l) out.bytes.push_back(net.link_stats(LinkId{l}).bytes.value());
  return out;
}

TEST(FlowNetworkBatch, ABatchOfStartsGivesExactlyWhatStartingEachAloneGives) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const Outcome plain = run(seed, false), batched = run(seed, true);
    for (std::int64_t t : plain.delivered) ASSERT_GE(t, 0);
    EXPECT_EQ(batched, plain) << "seed " << seed;
  }
}

TEST(FlowNetworkBatch, OnlyStartsMayComeInsideABatch) {
  sim::Simulator sim;
  FlowNetwork net(sim, {{bytes_per_second(1e9), Duration{0}}});
  EXPECT_THROW(net.end_batch(), InternalError);
  net.begin_batch();
  EXPECT_THROW(net.begin_batch(), InternalError);
  const std::vector<LinkId> p{LinkId{0}};
  bool done = false;
  net.start_flow(p, bytes(1'000), Duration{0}, [&] { done = true; });
  EXPECT_THROW(net.set_capacity(LinkId{0}, bytes_per_second(5e8)), InternalError);
  EXPECT_THROW((void)net.link_stats(LinkId{0}), InternalError);
  net.end_batch();
  sim.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(net.link_stats(LinkId{0}).bytes.value(), 1'000);
}

}  // namespace
}  // namespace cs::net
