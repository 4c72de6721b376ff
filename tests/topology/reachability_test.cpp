#include "topology/reachability.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "tests/topology/test_clusters.h"

namespace cs::topo {
namespace {

using fixtures::add_device;

// gpu0 and gpu1 on cables to a switch, and gpu2 attached by one link in direction `to_gpu2`.
Cluster three_gpus(bool to_gpu2) {
  ClusterBuilder c("three");
  const NodeId sw = add_device(c, "sw", NodeKind::kLeafSwitch);
  const NodeId g0 = add_device(c, "node0/gpu0", NodeKind::kGpu, 0, 0);
  const NodeId g1 = add_device(c, "node0/gpu1", NodeKind::kGpu, 0, 1);
  const NodeId g2 = add_device(c, "node0/gpu2", NodeKind::kGpu, 0, 2);
  c.add_cable(g0, sw, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1);
  c.add_cable(g1, sw, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1);
  if (to_gpu2) {
    c.add_link(sw, g2, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1);
  } else {
    c.add_link(g2, sw, gigabytes_per_second(1), nanoseconds(1), hw::LinkClass::kNetwork, 1);
  }
  return std::move(c).build();
}

TEST(Reachability, ConnectedClusterPasses) {
  EXPECT_NO_THROW(check_gpus_connected(fixtures::ring(5, gigabytes_per_second(1)), "ring.json"));
  EXPECT_NO_THROW(check_gpus_connected(fixtures::star(4, gigabytes_per_second(1)), "star.json"));
}

TEST(Reachability, ZeroOrOneGpuHasNothingToCheck) {
  EXPECT_NO_THROW(check_gpus_connected(ClusterBuilder("empty").build(), "x.json"));
  ClusterBuilder one("one");
  add_device(one, "g", NodeKind::kGpu);
  add_device(one, "island", NodeKind::kLeafSwitch);  // unconnected, but not a GPU
  EXPECT_NO_THROW(check_gpus_connected(std::move(one).build(), "x.json"));
}

TEST(Reachability, GpuThatCannotSendNamesBothGpusAndItsOrigin) {
  // sw -> gpu2 only: gpu0 reaches gpu2, but gpu2 has no path back.
  try {
    check_gpus_connected(three_gpus(/*to_gpu2=*/true), "cluster.json");
    FAIL() << "expected TopologyError";
  } catch (const TopologyError& e) {
    EXPECT_EQ(e.file(), "cluster.json");
    EXPECT_EQ(e.json_path(), "/devices/node0/gpu2");
    EXPECT_EQ(e.message(), "GPU node0/gpu2 has no path to node0/gpu0");
    EXPECT_STREQ(e.what(),
                 "config error in cluster.json at /devices/node0/gpu2: GPU node0/gpu2 has no path "
                 "to node0/gpu0");
  }
}

TEST(Reachability, GpuThatCannotBeReachedNamesBothGpus) {
  // gpu2 -> sw only: nothing reaches gpu2.
  try {
    check_gpus_connected(three_gpus(/*to_gpu2=*/false), "cluster.json");
    FAIL() << "expected TopologyError";
  } catch (const TopologyError& e) {
    EXPECT_EQ(e.json_path(), "/devices/node0/gpu2");
    EXPECT_EQ(e.message(), "GPU node0/gpu2 cannot be reached from node0/gpu0");
  }
}

}  // namespace
}  // namespace cs::topo
