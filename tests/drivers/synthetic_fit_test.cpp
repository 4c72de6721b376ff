// A synthetic profile refits to the parameters that generated it (docs/calibration.md, "The
// network model").
//
// drv::synthetic_profile times every collective with the simulator on the catalog's server and
// coll::ProtocolParams::builtin(); cal::fit_models inverts the simulator's ring all-reduce,
//   t = launch + 2(n-1) (step + path) + 2(n-1)/n S / (efficiency x nominal)
// (calibration/fit.h), with the catalog's wire latencies as `path`. So the fit must give back
// builtin()'s NVLink efficiency, Simple and LL step latencies and launch latency, for every GPU of
// the catalog:
//   * without noise, up to what the picosecond rounding of the simulated times can move them;
//   * with the generator's +-1% noise, within the worst case that +-1% on every point can move
//     them. Both bounds are  sum_i |d theta / d t_i| (noise t_i + 1 ps)  over the points the fit
//     uses, with the sensitivities d theta / d t_i taken by central differences of the fit itself
//     (a linear least-squares solve where no bound binds: the checks below make sure none does).
// The step latency and the launch latency are extrapolations (to the latency of one step, to
// zero steps), so their bounds are wider than the noise itself; the test prints them.
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibration/fit.h"
#include "calibration/nominal.h"
#include "core/config.h"
#include "drivers/inventory_machine.h"
#include "drivers/synthetic_profile.h"
#include "hardware/catalog.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/protocol_params.h"
#include "topology/router.h"

namespace cs::drv {
namespace {

const std::vector<std::string> kGpus = {"A100-SXM-80GB", "H100-SXM", "H200-SXM", "B200"};
constexpr const char* kNames[] = {"link efficiency", "step latency (s)", "LL step latency (s)", "launch latency (s)"};

// The NVLink efficiency, Simple and LL step latencies and launch latency of a profile's models.
using Params = std::array<double, 4>;

Params params_of(const cal::Models& m) {
  Params out{-1, -1, -1, -1};
  for (const cal::NetworkClassModel& n : m.network) {
    if (n.link_class != "nvlink") continue;
    out[0] = n.link_efficiency;
    out[1] = to_seconds(n.step_latency);
    out[2] = n.ll_step_latency ? to_seconds(*n.ll_step_latency) : -1;
  }
  if (m.collective_launch) out[3] = to_seconds(m.collective_launch->latency);
  return out;
}

Params refit(const cal::Profile& p) { return params_of(cal::fit_models(p, cal::nominal_from_catalog(p.inventory))); }

Params truth() {
  const coll::ProtocolParams& b = coll::ProtocolParams::builtin();
  const coll::LinkClassProtocol& nv = b.of(hw::LinkClass::kNvlink);
  return {nv.efficiency, to_seconds(nv.step_latency), to_seconds(nv.ll_step_latency), to_seconds(b.launch_latency)};
}

// The profile's ring all-reduce points (forced ring, or NCCL's choice ring): all the network fit
// reads, so refitting them alone gives the same network models, faster.
cal::Profile ring_points(const cal::Profile& p) {
  cal::Profile q;
  q.inventory = p.inventory;
  for (const cal::CollectivePoint& c : p.collectives) {
    const std::string& algorithm = c.algorithm != "auto" ? c.algorithm : c.nccl_choice.algorithm;
    if (c.op == "all_reduce" && algorithm == "ring") q.collectives.push_back(c);
  }
  return q;
}

// sum_i |d theta / d t_i| (noise t_i + 1 ps) over the points of q, and, for the printout, the
// standard deviation of theta under noise uniform in +-noise: sqrt(sum_i (d theta / d t_i)^2
// (noise t_i)^2 / 3).
struct Spread {
  Params bound{}, sigma{};
};

Spread deviation_bound(const cal::Profile& q, double noise) {
  Spread out;
  constexpr double kStep = 1e-3;  // relative perturbation of one time
  for (std::size_t i = 0; i < q.collectives.size(); ++i) {
    const double t = to_seconds(q.collectives[i].timing->median);
    cal::Profile up = q, down = q;
    up.collectives[i].timing->median = duration_from_seconds(t * (1 + kStep));
    down.collectives[i].timing->median = duration_from_seconds(t * (1 - kStep));
    const double dt = to_seconds(up.collectives[i].timing->median) - to_seconds(down.collectives[i].timing->median);
    const Params a = refit(up), b = refit(down);
    for (std::size_t j = 0; j < a.size(); ++j) {
      const double d = (a[j] - b[j]) / dt;
      out.bound[j] += std::fabs(d) * (noise * t + 1e-12);
      out.sigma[j] += d * d * (noise * t) * (noise * t) / 3;
    }
  }
  for (double& s : out.sigma) s = std::sqrt(s);
  return out;
}

void expect_refits(const std::string& gpu, double noise) {
  SCOPED_TRACE(gpu + (noise > 0 ? ", +-1% noise" : ", no noise"));
  const cal::Profile p = synthetic_profile(gpu, 8, "test", "gpu", noise);
  const Params fitted = params_of(p.models);
  const cal::Profile q = ring_points(p);
  ASSERT_EQ(refit(q), fitted) << "the ring all-reduce points alone give the same network models";
  ASSERT_TRUE(p.models.collective_launch.has_value());
  EXPECT_EQ(p.models.collective_launch->status, "fitted");
  const Params want = truth();
  const Spread spread = deviation_bound(q, noise);
  for (std::size_t j = 0; j < want.size(); ++j) {
    ASSERT_GT(fitted[j], 0) << kNames[j] << ": no bound of the fit binds";
    EXPECT_LE(std::fabs(fitted[j] - want[j]), spread.bound[j])
        << kNames[j] << ": fitted " << fitted[j] << ", generated with " << want[j] << ", bound " << spread.bound[j];
    std::printf("  %-14s %-20s fitted %.7g, generated with %.7g: %+.2e relative; bound %.2e, sigma %.2e\n", gpu.c_str(),
                kNames[j], fitted[j], want[j], fitted[j] / want[j] - 1, spread.bound[j] / want[j], spread.sigma[j] / want[j]);
  }
}

TEST(SyntheticProfileFit, WithoutNoiseTheFitGivesBackTheGeneratingParameters) {
  for (const std::string& gpu : kGpus) expect_refits(gpu, 0.0);
}

TEST(SyntheticProfileFit, WithTheGeneratorsNoiseTheFitIsWithinWhatTheNoiseCanMove) {
  for (const std::string& gpu : kGpus) expect_refits(gpu, kSyntheticNoise);
}

// The latency the fit takes out of a ring step (calibration/nominal.h) is the latency the
// simulator adds: the wires of the route between two neighbouring GPUs of the rebuilt machine.
Duration route_latency(const coll::Machine& m, topo::NodeId a, topo::NodeId b) {
  topo::Router router(m.cluster);
  Duration sum{0};
  for (topo::LinkId l : router.route(a, b)) sum += m.cluster.link(l).latency;
  return sum;
}

TEST(SyntheticProfileFit, ThePathTheFitTakesOutIsThePathTheSimulatorAdds) {
  for (const std::string& gpu : kGpus) {
    SCOPED_TRACE(gpu);
    cal::Inventory inv;
    inv.gpus.resize(1);
    inv.gpus[0].catalog_gpu = gpu;
    const cal::NominalBandwidths nominal = cal::nominal_from_catalog(inv, std::string("NDR-400G"));
    const coll::Machine one = inventory_machine(gpu, 8, 1, "NDR-400G", "", "");
    EXPECT_EQ(route_latency(one, one.cluster.gpus()[0], one.cluster.gpus()[1]), nominal.ring_step_path_latency.at("nvlink"));
    // Two servers: GPU 0 of one to GPU 0 of the other, through the NICs and the switch.
    const coll::Machine two = inventory_machine(gpu, 8, 2, "NDR-400G", "", "");
    EXPECT_EQ(route_latency(two, two.cluster.gpus()[0], two.cluster.gpus()[8]), nominal.ring_step_path_latency.at("network"));
  }
  // A PCIe server (two GPUs per PCIe switch): a ring of more than two GPUs has a step between
  // switches, through the host.
  const nlohmann::json doc = {
      {"name", "pcie-8"},
      {"servers", nlohmann::json::array({{{"count", 1}, {"name", "node"}, {"template", "pcie"}, {"gpu", "A100-SXM-80GB"}, {"gpus", 8}}})},
      {"fabric", {{"type", "none"}}}};
  const coll::Machine pcie = coll::build_machine(ConfigDocument::from_json(doc, "pcie-8"));
  cal::Inventory inv;
  inv.gpus.resize(1);
  inv.gpus[0].catalog_gpu = "A100-SXM-80GB";
  EXPECT_EQ(route_latency(pcie, pcie.cluster.gpus()[1], pcie.cluster.gpus()[2]),
            cal::nominal_from_catalog(inv).ring_step_path_latency.at("pcie"));
}

}  // namespace
}  // namespace cs::drv
