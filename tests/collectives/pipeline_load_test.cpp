// A pipeline's load under adaptive routing (collective_runner.cpp, PipelineLoad): members between
// servers of one leaf each add their leaves' shared middle once per pair of leaves, with its
// copies counted, instead of each adding its whole route. The sums are integers, so a run must
// give the same times and the same bytes on every link either way, folded onto the twin
// switches' quotient (the production path at scale) or not.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/collectives/collective_runner.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_fold.h"
#include "sim/collectives/network_layout.h"
#include "sim/network/flow_network.h"
#include "topology/router.h"
#include "topology/server_orbits.h"

namespace cs::coll {
namespace {

struct LoadRun {
  Duration time{0};
  std::vector<std::int64_t> link_bytes;  // every link of the run's network, by id
};

// An all-reduce of `size` over every GPU with `algorithm`, on a runner of its own.
LoadRun all_reduce(const Machine& m, CollectiveAlgorithm algorithm, Bytes size, bool share_middles, bool folded) {
  const NetworkLayout layout(m);
  topo::Router router(m.cluster);
  sim::Simulator sim;
  net::FlowNetwork net(sim, layout.capacities());
  const std::optional<topo::ServerOrbits> twins = topo::ServerSymmetry(m.cluster).twin_orbits();
  NetworkFold::Scratch scratch;
  std::optional<NetworkFold> fold;
  if (folded) fold.emplace(m.cluster, twins.value(), net, scratch);
  CollectiveRunner runner(sim, net, router, layout, true, fold ? &*fold : nullptr);
  runner.share_leaf_middles(share_middles);
  CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = size;
  spec.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().end());
  std::string why;
  std::optional<Schedule> schedule = build_schedule(layout.schedules(), spec, algorithm, &why);
  if (!schedule) throw std::logic_error(why);
  LoadRun out;
  runner.start(spec, std::make_shared<const Schedule>(std::move(*schedule)), algorithm, Protocol::kSimple,
               [&](const CollectiveOutcome& o) { out.time = o.end - o.start; });
  sim.run();
  if (fold && fold->broken()) throw std::logic_error("the fold broke");
  for (std::uint32_t l = 0; l < net.link_count(); ++l) out.link_bytes.push_back(net.link_stats(topo::LinkId{l}).bytes.value());
  return out;
}

TEST(PipelineLoad, MembersBetweenLeavesGiveTheLoadOfTheirWholeRoutes) {
  // Radix 16: a leaf holds 8 NICs, the 2 of each of 4 servers, a pod 8 leaves (32 servers); 40
  // servers fill one pod and part of a second. The tree's edges between servers then repeat
  // pairs of leaves (the counted middles), within one pod (middle K = 8) and across two
  // (K = 64): the sum's scale grows while middles wait to be added.
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/h100-fat-tree-3tier.json",
                                 {"/fabric/radix=16", "/servers/0/count=40", "/servers/0/gpus=2", "/servers/0/nics=2", "/servers/0/pcie_switches=1"});
  ASSERT_EQ(m.cluster.routing(), topo::Routing::kAdaptive);
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kTree, CollectiveAlgorithm::kRing}) {
    for (bool folded : {false, true}) {
      const LoadRun shared = all_reduce(m, a, mebibytes(96), true, folded);
      const LoadRun whole = all_reduce(m, a, mebibytes(96), false, folded);
      EXPECT_EQ(shared.time, whole.time) << to_string(a) << (folded ? " folded" : "");
      ASSERT_EQ(shared.link_bytes.size(), whole.link_bytes.size());
      std::int64_t total = 0;
      for (std::size_t l = 0; l < whole.link_bytes.size(); ++l) {
        EXPECT_EQ(shared.link_bytes[l], whole.link_bytes[l]) << to_string(a) << (folded ? " folded" : "") << " link " << l;
        total += whole.link_bytes[l];
      }
      EXPECT_GT(total, 0);
    }
  }
}

}  // namespace
}  // namespace cs::coll
