// The collective model's protocol parameters: the built-in defaults (configs/collectives), a
// cluster file's overrides, their errors, and the machine (cluster + parameters) loaded from one
// file without the parameters touching the cluster.
#include "sim/collectives/machine.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "sim/collectives/network_layout.h"
#include "topology/cluster_loader.h"

namespace cs::coll {
namespace {

const std::string kClusters = std::string(CS_SOURCE_DIR) + "/configs/clusters/";

TEST(ProtocolParams, BuiltinDefaults) {
  const ProtocolParams& p = ProtocolParams::builtin();
  EXPECT_DOUBLE_EQ(p.of(hw::LinkClass::kNvlink).efficiency, 0.80);
  // Derived: 128b/130b coding x one SKP block in 371 x a 256-byte write in 256 + 4 (STP) + 16
  // (4-DW header) + 4 (LCRC) + 2 DLLPs of 8 bytes (docs/network-model.md).
  EXPECT_NEAR(p.of(hw::LinkClass::kPcie).efficiency, 128.0 / 130 * 370 / 371 * 256 / 296, 0.0005);
  EXPECT_DOUBLE_EQ(p.of(hw::LinkClass::kNetwork).efficiency, 0.92);
  EXPECT_EQ(p.of(hw::LinkClass::kNvlink).step_latency, nanoseconds(14100));  // fitted: validate nccl --refit
  EXPECT_EQ(p.of(hw::LinkClass::kPcie).step_latency, microseconds(12));
  EXPECT_EQ(p.of(hw::LinkClass::kNetwork).step_latency, microseconds(15));
  EXPECT_EQ(p.of(hw::LinkClass::kNvlink).ll_step_latency, nanoseconds(600));
  EXPECT_LT(p.of(hw::LinkClass::kNetwork).ll_step_latency, p.of(hw::LinkClass::kNetwork).step_latency);
  EXPECT_EQ(p.launch_latency, nanoseconds(8400));
  EXPECT_DOUBLE_EQ(p.ll_wire_factor, 2.0);
  // NCCL's NVLS cost (tuning.cc): base latency 0, one NVLS step of 25 us.
  EXPECT_EQ(p.nvls_base_latency, Duration{0});
  EXPECT_EQ(p.nvls_step_latency, microseconds(25));
}

TEST(ProtocolParams, EmbedsTheCollectivesFiles) {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_protocol_documents()) names.push_back(name);
  EXPECT_EQ(names, std::vector<std::string>{"configs/collectives/nccl-protocol.json"});
}

std::string error_of(const std::string& text) {
  try {
    ProtocolParams::from_documents({{"p.json", text}});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ProtocolParams, DefaultsNeedEveryClassWithItsSources) {
  EXPECT_EQ(error_of(R"({"link_classes": {}})"), "config error in p.json at /link_classes: no parameters for the link class \"nvlink\"");
  EXPECT_EQ(error_of(R"({"link_classes": {"nvlink": {"efficiency": 0.8}}})"),
            "config error in p.json at /link_classes/nvlink/efficiency: expected an object; got the number 0.8");
}

TEST(Machine, ClusterFileOverridesReplaceTheDefaultsAndLeaveTheClusterAlone) {
  // heterogeneous.json: "link_classes": {"network": {"efficiency": 0.5, "step_latency": "20us"}},
  // "collective_model": {"launch_latency": "3us"}.
  const std::string file = std::string(CS_TEST_DATA_DIR) + "/clusters/heterogeneous.json";
  const Machine m = load_machine(file);
  EXPECT_DOUBLE_EQ(m.protocol.of(hw::LinkClass::kNetwork).efficiency, 0.5);
  EXPECT_EQ(m.protocol.of(hw::LinkClass::kNetwork).step_latency, microseconds(20));
  EXPECT_EQ(m.protocol.of(hw::LinkClass::kNetwork).ll_step_latency, ProtocolParams::builtin().of(hw::LinkClass::kNetwork).ll_step_latency);
  EXPECT_EQ(m.protocol.of(hw::LinkClass::kNvlink).step_latency, ProtocolParams::builtin().of(hw::LinkClass::kNvlink).step_latency);
  EXPECT_EQ(m.protocol.launch_latency, microseconds(3));
  // The cluster is the platform's alone: the same graph with and without the protocol sections.
  const topo::Cluster plain = topo::load_cluster(file);
  ASSERT_EQ(m.cluster.link_count(), plain.link_count());
  for (std::uint32_t i = 0; i < plain.link_count(); ++i) {
    EXPECT_EQ(m.cluster.link(topo::LinkId{i}).bandwidth, plain.link(topo::LinkId{i}).bandwidth);
    EXPECT_EQ(m.cluster.link(topo::LinkId{i}).latency, plain.link(topo::LinkId{i}).latency);
  }
  // The network layout applies the efficiency: a 400 Gb/s NIC link at 0.5 carries 25 GB/s.
  const NetworkLayout layout(m);
  const auto nic = *m.cluster.find_node("node1/nic0");
  const auto leaf = *m.cluster.find_node("leaf0");
  EXPECT_DOUBLE_EQ(layout.usable_bandwidth(*m.cluster.find_link(nic, leaf)).value(), 25e9);
}

TEST(Machine, BadProtocolValuesNameTheFileAndPath) {
  auto error = [](const std::vector<std::string>& overrides) {
    try {
      load_machine(kClusters + "dgx-h100.json", overrides);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error({"/link_classes={\"nvlink\": {\"efficiency\": 1.5}}"}).find("dgx-h100.json at /link_classes/nvlink/efficiency"),
            std::string::npos);
  EXPECT_NE(error({"/link_classes={\"nvlnk\": {}}"}).find("at /link_classes/nvlnk: unknown key"), std::string::npos);
  EXPECT_NE(error({"/collective_model={\"ll_wire_factor\": 0.5}"}).find("at /collective_model/ll_wire_factor: expected a number from 1 to 4"),
            std::string::npos);
  // The wire latency of a class is the topology's and is accepted here.
  EXPECT_EQ(error({"/link_classes={\"nvlink\": {\"latency\": \"1us\"}}"}), "no error");
}

}  // namespace
}  // namespace cs::coll
