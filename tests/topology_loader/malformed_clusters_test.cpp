// Every file in tests/data/clusters/malformed must fail with an InputError (ConfigError or
// TopologyError) whose message names the file and the JSON path of the mistake.
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "topology/cluster_loader.h"

namespace cs::topo {
namespace {

const std::string kDir = std::string(CS_TEST_DATA_DIR) + "/clusters/malformed/";

struct Case {
  const char* file;
  const char* path;      // the JSON path the error must name
  const char* contains;  // and a piece of its message
  bool topology;         // TopologyError rather than ConfigError
};

const Case kCases[] = {
    {"bare-number-bandwidth.json", "/fabric/link/bandwidth", "got the number 400", false},
    {"negative-bandwidth.json", "/links/0/bandwidth", "negative", false},
    {"unknown-key.json", "/servers/0/gpu_count", "unknown key \"gpu_count\"", false},
    {"missing-servers.json", "/servers", "missing required key \"servers\"", false},
    {"wrong-type.json", "/servers/0/gpus", "got the string \"8\"", false},
    {"unknown-template.json", "/servers/0/template", "\"nvswitch\", \"pcie\", \"single\"", false},
    {"link-to-unknown-device.json", "/links/1/to", "unknown device \"leaf7\"", true},
    {"torus-dims-mismatch.json", "/fabric/dims", "16 positions but the servers have 12 endpoints", false},
    {"gpu-without-path.json", "/servers/1", "GPU other1/gpu0", true},
    {"broken-json.json", "/", "invalid JSON at line 3", false},
    {"zero-count.json", "/servers/0/count", "from 1 to", false},
    {"oversubscription-below-one.json", "/fabric/oversubscription", "from 1 to 1024", false},
    {"unknown-gpu.json", "/servers/0/gpu", "known: A100-SXM-40GB, A100-SXM-80GB, B200, GB200, H100-PCIe, H100-SXM, H20, H200-SXM, H800-SXM, MI300X, V100-SXM2-32GB", false},
    {"unknown-nic.json", "/servers/0/nic", "unknown NIC \"NDR-4000G\"", false},
    {"fat-tree-too-small.json", "/fabric/radix", "at most 4 leaves", false},
    {"override-missing-link.json", "/link_overrides/1", "no link from \"node0/nic0\" to \"node1/nic0\"", true},
    {"duplicate-device.json", "/devices/0/name", "already taken", true},
    {"empty-servers.json", "/servers", "at least one server group", false},
    {"gpus-without-nic-need-bandwidth.json", "/fabric/link/bandwidth", "has no NIC", false},
    {"bad-server-name.json", "/servers/0/name", "does not end in a digit", false},
    {"single-with-two-gpus.json", "/servers/0/gpus", "exactly one GPU", false},
    {"wrong-fabric-key.json", "/fabric/spines", "allowed: type, link", false},
    {"mesh-gpu-out-of-range.json", "/servers/0/mesh/2/gpus/1", "GPU index 4 is outside 0..3", false},
    {"mesh-pair-twice.json", "/servers/0/mesh/3/gpus", "GPUs 1 and 0 are paired twice", false},
    {"mesh-too-many-links.json", "/servers/0/mesh/2/links", "GPU 0 would have 7 links, more than the 6 a GPU has on NVLink2", false},
    {"mesh-self-pair.json", "/servers/0/mesh/1/gpus/1", "two different GPUs", false},
    {"mesh-unknown-layout.json", "/servers/0/mesh", "unknown mesh layout \"dgx1\"", false},
    {"mesh-missing.json", "/servers/0/mesh", "the mesh template needs \"mesh\"", false},
    {"mesh-full-too-many-gpus.json", "/servers/0/mesh", "GPU 0 would have 8 links, more than the 7 a GPU has on xGMI-MI300X", false},
    {"mesh-pair-three-gpus.json", "/servers/0/mesh/1/gpus", "two GPU indices, [a, b]", false},
    {"mesh-on-nvswitch.json", "/servers/0/mesh", "only the mesh template has a mesh", false},
    {"unknown-routing.json", "/fabric/routing", "expected one of \"ecmp\", \"adaptive\"; got", false},
};

TEST(MalformedClusters, EachErrorNamesFileAndPath) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.file);
    const std::string file = kDir + c.file;
    try {
      load_cluster(file);
      ADD_FAILURE() << "loaded without an error";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find(" at " + std::string(c.path)), std::string::npos) << what;
      EXPECT_NE(what.find(c.contains), std::string::npos) << what;
      EXPECT_EQ(dynamic_cast<const TopologyError*>(&e) != nullptr, c.topology) << what;
      EXPECT_EQ(e.file(), file);
    }
  }
}

TEST(MalformedClusters, EveryFileHasACase) {
  std::set<std::string> listed;
  for (const Case& c : kCases) listed.insert(c.file);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    ++files;
    EXPECT_TRUE(listed.count(entry.path().filename().string())) << entry.path();
  }
  EXPECT_EQ(files, static_cast<int>(std::size(kCases)));
  EXPECT_GE(files, 12);
}

TEST(MalformedClusters, ExactMessages) {
  try {
    load_cluster(kDir + "unknown-gpu.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config error in " + kDir +
                  "unknown-gpu.json at /servers/0/gpu: unknown GPU \"H300-SXM\" (known: "
                  "A100-SXM-40GB, A100-SXM-80GB, B200, GB200, H100-PCIe, H100-SXM, H20, H200-SXM, H800-SXM, "
                  "MI300X, V100-SXM2-32GB)");
  }
  try {
    load_cluster(kDir + "torus-dims-mismatch.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config error in " + kDir +
                  "torus-dims-mismatch.json at /fabric/dims: the torus 4 x 4 has 16 positions but "
                  "the servers have 12 endpoints (NICs, or GPUs of servers without NICs)");
  }
}

}  // namespace
}  // namespace cs::topo
