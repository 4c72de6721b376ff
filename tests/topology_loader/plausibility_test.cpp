// Plausibility warnings of cluster files (topology/plausibility.h): each rule with a value that
// warns and a near one that does not, the 8x slip named, switches against the catalog's radix,
// NVLink domains; and none for any bundled example cluster.
#include "topology/plausibility.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/config.h"
#include "topology/cluster_loader.h"

namespace cs::topo {
namespace {

using nlohmann::json;

const std::string kClusters = std::string(CS_SOURCE_DIR) + "/configs/clusters/";

std::vector<Warning> warnings_of(const json& cluster) {
  const ConfigDocument doc = ConfigDocument::from_json(cluster, "c.json");
  const ClusterSpec spec = parse_cluster_spec(doc);
  const Cluster built = build_cluster(spec);
  return plausibility_warnings(spec, built, hw::Catalog::builtin());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Two DGX A100 servers (HDR-200G NICs) on one switch, plus a storage device cabled to node0's host.
json two_servers() {
  return {{"servers", {{{"count", 2}, {"template", "nvswitch"}, {"gpu", "A100-SXM-80GB"}, {"nic", "HDR-200G"}}}},
          {"fabric", {{"type", "star"}}},
          {"devices", {{{"name", "storage0"}, {"kind", "storage"}}}},
          {"links", {{{"from", "storage0"}, {"to", "node0/cpu"}, {"bandwidth", "200Gbps"}}}}};
}

TEST(Plausibility, TheExampleClustersWarnNothing) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kClusters)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const ConfigDocument doc = ConfigDocument::load(entry.path().string());
    const ClusterSpec spec = parse_cluster_spec(doc);
    const Cluster built = build_cluster(spec);
    for (const Warning& w : plausibility_warnings(spec, built, hw::Catalog::builtin())) ADD_FAILURE() << to_string(w);
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(Plausibility, ANetworkLinkInBytesWhereBitsWereMeantNamesTheSlip) {
  // "200GBps" = 1600 Gb/s, twice the fastest NIC (XDR-800G, 800 Gb/s = 100 GB/s) and 8 x HDR-200G.
  json c = two_servers();
  c["links"][0]["bandwidth"] = "200GBps";
  const std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].file, "c.json");
  EXPECT_EQ(w[0].json_path, "/links/0/bandwidth");
  EXPECT_TRUE(contains(w[0].message, "1600 Gb/s = 200 GB/s")) << w[0].message;
  EXPECT_TRUE(contains(w[0].message, "800GbE, XDR-800G at 800 Gb/s = 100 GB/s")) << w[0].message;
  EXPECT_TRUE(contains(w[0].message, "did you mean \"200Gbps\" (200GbE, HDR-200G)?")) << w[0].message;
  // The fastest NIC's own rate, written in bytes, is known: no warning.
  c["links"][0]["bandwidth"] = "100GB/s";
  EXPECT_TRUE(warnings_of(c).empty());
}

TEST(Plausibility, TooFastWithoutAKnownEighthNamesNoSlip) {
  // 1000 Gb/s is faster than any NIC, but 125 Gb/s is no known rate.
  json c = two_servers();
  c["links"][0]["bandwidth"] = "1000Gbps";
  const std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_FALSE(contains(w[0].message, "did you mean")) << w[0].message;
}

TEST(Plausibility, TheFabricLinkIsCheckedInItsClass) {
  json c = two_servers();
  c["fabric"]["link"] = {{"bandwidth", "400GBps"}};
  std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].json_path, "/fabric/link/bandwidth");
  EXPECT_TRUE(contains(w[0].message, "did you mean \"400Gbps\" (400GbE, NDR-400G)?")) << w[0].message;
  // The same rate is an ordinary NVLink: no warning when the fabric's class is nvlink.
  c["fabric"]["link"]["class"] = "nvlink";
  EXPECT_TRUE(warnings_of(c).empty());
}

TEST(Plausibility, NvlinkClassLinksAgainstTheFastestGeneration) {
  // NVLink5 carries 900 GB/s per GPU per direction; 7200 GB/s is 8 x that.
  json c = two_servers();
  c["links"].push_back({{"from", "node0/gpu0"}, {"to", "node1/gpu0"}, {"bandwidth", "7200GB/s"}, {"class", "nvlink"}});
  std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].json_path, "/links/1/bandwidth");
  EXPECT_TRUE(contains(w[0].message, "NVLink5 at 900 GB/s per GPU per direction")) << w[0].message;
  EXPECT_TRUE(contains(w[0].message, "did you mean \"7200Gbps\" (900 GB/s, NVLink5)?")) << w[0].message;
  c["links"][1]["bandwidth"] = "900GB/s";
  EXPECT_TRUE(warnings_of(c).empty());
}

TEST(Plausibility, PcieBandwidthOfAServerGroup) {
  // The fastest PCIe host link of a GPU is Gen5 x16, 64 GB/s; "512GB/s" is 8 x that.
  json c = two_servers();
  c["servers"][0]["pcie_bandwidth"] = "512GB/s";
  std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].json_path, "/servers/0/pcie_bandwidth");
  EXPECT_TRUE(contains(w[0].message, "did you mean \"512Gbps\" (64.0 GB/s,")) << w[0].message;
  c["servers"][0]["pcie_bandwidth"] = "64GB/s";
  EXPECT_TRUE(warnings_of(c).empty());
}

TEST(Plausibility, LinkOverridesTakeTheClassOfTheLinkTheyChange) {
  json c = two_servers();
  // A GPU's NVLink cable to its NVSwitch at 800 GB/s is plausible (NVLink5); its NIC's cable to
  // the switch is a network link, and 800 GB/s is 6.4 Tb/s there.
  c["link_overrides"] = {{{"from", "node0/gpu0"}, {"to", "node0/nvswitch"}, {"bandwidth", "800GB/s"}},
                         {{"from", "node0/nic0"}, {"to", "leaf0"}, {"bandwidth", "800GB/s"}}};
  std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].json_path, "/link_overrides/1/bandwidth");
  EXPECT_TRUE(contains(w[0].message, "6400 Gb/s = 800 GB/s")) << w[0].message;
  EXPECT_TRUE(contains(w[0].message, "did you mean \"800Gbps\" (800GbE, XDR-800G)?")) << w[0].message;
}

// `servers` single-GPU servers with one NIC each, all on one switch (leaf0).
json star_of(int servers, const std::string& nic) {
  return {{"servers", {{{"count", servers}, {"template", "single"}, {"gpu", "H100-SXM"}, {"nic", nic}}}},
          {"fabric", {{"type", "star"}}}};
}

TEST(Plausibility, ASwitchWithMorePortsThanAnyKnownAtItsSpeed) {
  // Ports of 400 Gb/s or faster: Quantum-2 64, Tomahawk 5 128 (at 400) or 64 (at 800), SN5600 64,
  // Quantum-X800 144 (at 800 Gb/s, which a 400 Gb/s cable can use): 144 is the largest known
  // radix, so a switch of 144 cables of 400 Gb/s is plausible and one of 145 is not.
  EXPECT_TRUE(warnings_of(star_of(144, "NDR-400G")).empty());
  std::vector<Warning> w = warnings_of(star_of(145, "NDR-400G"));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].json_path, "/fabric");
  EXPECT_TRUE(contains(w[0].message, "leaf switch \"leaf0\" has 145 ports")) << w[0].message;
  EXPECT_TRUE(contains(w[0].message, "has 144 (Quantum-X800-Q3400: 144 x 800 Gb/s)")) << w[0].message;
  // At 200 Gb/s, Spectrum-4 SN5600 and Tomahawk 5 offer 256 ports; of equals, the first by name
  // is named.
  EXPECT_TRUE(warnings_of(star_of(256, "HDR-200G")).empty());
  w = warnings_of(star_of(257, "HDR-200G"));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(contains(w[0].message, "has 256 (Spectrum-4-SN5600: 256 x 200 Gb/s)")) << w[0].message;
}

TEST(Plausibility, GeneratedSwitchesOfOneFabricGiveOneWarning) {
  // A 2-tier fat-tree of radix 200 on 400 endpoints: 4 leaves of 100 endpoint cables and 100
  // uplinks (one per spine, each carrying 100 x the NIC rate / 100), so 200 ports at the NIC rate;
  // 100 spines of 4 ports. At 200 Gb/s SN5600 and Tomahawk 5 have 256 ports: plausible. At 800 Gb/s the
  // largest known radix is Quantum-X800's 144: the 4 leaves exceed it and give one warning at
  // their origin; the spines do not.
  json c = {{"servers", {{{"count", 50}, {"template", "nvswitch"}, {"gpu", "H100-SXM"}, {"nic", "HDR-200G"}}}},
            {"fabric", {{"type", "fat_tree"}, {"tiers", 2}, {"radix", 200}}}};
  EXPECT_TRUE(warnings_of(c).empty());
  c["servers"][0]["nic"] = "XDR-800G";
  const std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u) << to_string(w.back());
  EXPECT_EQ(w[0].json_path, "/fabric");
  // 400 endpoints in leaves of 100: 4 leaves; leaf0 is named, the 3 others counted.
  EXPECT_TRUE(contains(w[0].message, "leaf switch \"leaf0\" has 200 ports")) << w[0].message;
  EXPECT_TRUE(contains(w[0].message, "3 other leaf switches")) << w[0].message;
}

TEST(Plausibility, AnExplicitSwitchIsNamedAtItsDevice) {
  // 150 cables of 400 Gb/s to an explicit spine; the catalog's largest radix at 400 Gb/s or
  // faster is 144.
  json c = star_of(150, "NDR-400G");
  c["fabric"] = {{"type", "none"}};
  c["devices"] = {{{"name", "big"}, {"kind", "spine_switch"}}};
  c["links"] = json::array();
  for (int i = 0; i < 150; ++i) c["links"].push_back({{"from", "node" + std::to_string(i) + "/nic0"}, {"to", "big"}, {"bandwidth", "400Gbps"}});
  const std::vector<Warning> w = warnings_of(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].json_path, "/devices/0");
  EXPECT_TRUE(contains(w[0].message, "spine switch \"big\" has 150 ports")) << w[0].message;
}

TEST(Plausibility, NvlinkDomainsAreServersAndNvlinkJoinedGpus) {
  // Two DGX servers: GPUs 0-7 in domain 0, 8-15 in domain 1. A PCIe server is one domain though
  // its GPUs have no NVLink.
  json c = two_servers();
  c["servers"].push_back({{"count", 1}, {"template", "pcie"}, {"gpu", "A100-SXM-80GB"}, {"gpus", 4}, {"nic", "HDR-200G"}});
  const Cluster built = build_cluster(parse_cluster_spec(ConfigDocument::from_json(c, "c.json")));
  const std::vector<std::uint32_t> d = nvlink_domains(built);
  ASSERT_EQ(d.size(), 20u);
  for (std::size_t g = 0; g < 20; ++g) EXPECT_EQ(d[g], g < 8 ? 0u : g < 16 ? 1u : 2u) << g;
  // An NVLink-class cable between the two DGX servers' NVSwitches joins their domains.
  c["links"].push_back({{"from", "node0/nvswitch"}, {"to", "node1/nvswitch"}, {"bandwidth", "450GB/s"}, {"class", "nvlink"}});
  const Cluster joined = build_cluster(parse_cluster_spec(ConfigDocument::from_json(c, "c.json")));
  const std::vector<std::uint32_t> dj = nvlink_domains(joined);
  for (std::size_t g = 0; g < 20; ++g) EXPECT_EQ(dj[g], g < 16 ? 0u : 1u) << g;
}

}  // namespace
}  // namespace cs::topo
