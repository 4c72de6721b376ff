// Validation against published NCCL all-reduce bus bandwidth on one 8-GPU node
// (tests/data/validation/nccl-single-node.json). Every published size >= 1 MiB is simulated on
// the bundled node model with `auto` and reported with its error; sizes >= 64 MiB must be within
// 10%. No per-size constants: one parameter set (configs/hardware) for both machines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"

namespace cs::coll {
namespace {

Bytes nccl_tests_size(const std::string& label) {
  // nccl-tests prints binary sizes: "1M" = 2^20 bytes.
  const char unit = label.back();
  const std::int64_t n = std::stoll(label.substr(0, label.size() - 1));
  const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
  return Bytes{n << shift};
}

void validate(const std::string& cluster_file, const std::string& system_prefix) {
  std::ifstream in(std::string(CS_TEST_DATA_DIR) + "/validation/nccl-single-node.json");
  const auto doc = nlohmann::json::parse(in);
  const Machine machine = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/" + cluster_file);
  const topo::Cluster& cluster = machine.cluster;
  CollectiveSimulator sim(machine);
  int checked = 0;
  for (const auto& rec : doc["records"]) {
    if (!rec["measured"].contains("busbw_GBps_by_size")) continue;
    if (rec["config"]["system"].get<std::string>().find(system_prefix) == std::string::npos) continue;
    std::printf("%s vs %s (%s)\n%10s %12s %12s %8s  %s\n", cluster_file.c_str(), rec["config"]["system"].get<std::string>().c_str(),
                rec["source"].get<std::string>().c_str(), "size", "published", "simulated", "error", "algorithm");
    for (const auto& [label, published] : rec["measured"]["busbw_GBps_by_size"].items()) {
      const Bytes size = nccl_tests_size(label);
      if (size < mebibytes(1)) continue;
      CollectiveSpec s;
      s.op = CollectiveOp::kAllReduce;
      s.size = size;
      s.ranks.assign(cluster.gpus().begin(), cluster.gpus().end());
      const CollectiveResult r = sim.run(s);
      const double busbw = static_cast<double>(size.value()) / to_seconds(r.time) / 1e9 * busbw_factor(s.op, 8);
      const double err = (busbw - published.get<double>()) / published.get<double>();
      std::printf("%10s %12.2f %12.2f %+7.1f%%  %s/%s\n", label.c_str(), published.get<double>(), busbw, 100 * err,
                  to_string(r.algorithm), to_string(r.protocol));
      if (size >= mebibytes(64)) {
        EXPECT_LT(std::fabs(err), 0.10) << cluster_file << " at " << label;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);
}

TEST(NcclValidation, DgxA100AllReduceBusBandwidth) { validate("dgx-a100.json", "A100"); }
TEST(NcclValidation, DgxH100AllReduceBusBandwidth) { validate("dgx-h100.json", "H100"); }

}  // namespace
}  // namespace cs::coll
