// NVLS (in-switch reduction) all-reduce against its closed form (docs/network-model.md, "NVLS").
//
// k GPUs of one NVSwitch server, S bytes, B the usable NVLink rate of a GPU (per direction),
// R the switch's reduction rate per GPU port (bytes of input reduced per second), L the wire
// latency of one GPU <-> switch link. NCCL's kernel splits S into k slices, one per head rank:
// for its slice, head h reduces the k copies through the switch (multimem.ld_reduce: every GPU
// sends S/k to the switch, which reduces them in h's port and returns S/k to h) and stores the
// result to all k (multimem.st: h sends S/k, the switch writes S/k to every GPU). Per GPU:
//     NVLink out = k S/k (its share of every slice) + S/k (its store)   = S (k+1)/k
//     NVLink in  = S/k (its reduced slice) + k S/k (every slice)        = S (k+1)/k
//     port reduction = k inputs of S/k                                  = S
// all pipelined, so the bandwidth term is S / min(k B / (k+1), R). The latency is NCCL's NVLS
// cost: a base (0 in NCCL) plus one NVLS step (one pass through the switch per chunk) of
// s_nvls + L. On the test machines the base is 0 and s_nvls is Uniform::nvls_step. NCCL's
// pipeline adds its fill and drain, F = 2 x 16 channels x min(S, k x chunk) bytes at the same
// rate (sim/collectives/nvls_pipeline.h), with NCCL's chunk for S (src/enqueue.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "sim/collectives/collective_runner.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/network_layout.h"
#include "sim/collectives/nvls_pipeline.h"
#include "sim/collectives/schedule.h"
#include "sim/engine/simulator.h"
#include "sim/network/flow_network.h"
#include "tests/collectives/test_clusters.h"
#include "topology/router.h"

namespace cs::coll {
namespace {

using testing::Uniform;

double secs(Duration d) { return to_seconds(d); }

CollectiveSpec all_reduce(const Machine& m, Bytes size, std::size_t first, std::size_t k) {
  CollectiveSpec s;
  s.op = CollectiveOp::kAllReduce;
  s.size = size;
  const auto g = m.cluster.gpus();
  s.ranks.assign(g.begin() + static_cast<std::ptrdiff_t>(first),
                 g.begin() + static_cast<std::ptrdiff_t>(first + k));
  return s;
}

double nvls_alone(const Machine& m, const CollectiveSpec& s) {
  CollectiveSimulator sim(m);
  std::string why;
  auto r = sim.run_fixed(s, CollectiveAlgorithm::kNvls, Protocol::kSimple, &why);
  EXPECT_TRUE(r.has_value()) << why;
  return r ? secs(r->time) : -1;
}

// Runs NVLS all-reduces that all start at time 0 on one network; their durations in seconds.
std::vector<double> nvls_together(const Machine& m, const std::vector<CollectiveSpec>& specs) {
  const NetworkLayout layout(m);
  topo::Router router(m.cluster);
  sim::Simulator sim;
  net::FlowNetwork net(sim, layout.capacities());
  CollectiveRunner runner(sim, net, router, layout);
  std::vector<double> took(specs.size(), -1);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::string why;
    auto schedule = build_schedule(layout.schedules(), specs[i], CollectiveAlgorithm::kNvls, &why);
    EXPECT_TRUE(schedule.has_value()) << why;
    if (!schedule) return took;
    runner.start(specs[i], std::make_shared<const Schedule>(std::move(*schedule)), CollectiveAlgorithm::kNvls, Protocol::kSimple,
                 [&took, i](const CollectiveOutcome& o) { took[i] = secs(o.end - o.start); });
  }
  sim.run();
  return took;
}

// S divisible by every k in 2..8 (840 = lcm), so every slice is a whole number of bytes.
const Bytes kS = mebibytes(840);

// NCCL's pipeline fill for 840 MiB over k heads and 16 channels: a loop is 16 k chunks; the
// 128 KiB chunk drops to 64 KiB when S < 64 loops = 128 k MiB, i.e. for k >= 7; then
// F = 2 x 16 x k x chunk (S is more than one channel's k chunks).
double fill_840mib(std::size_t k) {
  const double chunk = 840.0 < 128.0 * static_cast<double>(k) ? 64 * 1024 : 128 * 1024;
  return 2 * 16 * static_cast<double>(k) * chunk;
}

TEST(NvlsClosedForm, AllReduceOverTwoToEightGpusOfAnEightGpuServer) {
  // B = 100 GB/s, R = 80 GB/s: k B / (k+1) is 66.7 and 75 GB/s for k = 2, 3 (the GPUs' links
  // bound), 80 for k = 4 (both), 83.3 ... 88.9 for k = 5..8 (the reduction ports bound). The
  // other GPUs of the server take no part and add no capacity.
  const Uniform u;
  const Bandwidth R = gigabytes_per_second(80);
  const Machine m = testing::uniform_star(8, u, R);
  const double B = u.bandwidth.value(), S = static_cast<double>(kS.value());
  for (std::size_t k = 2; k <= 8; ++k) {
    const double kd = static_cast<double>(k);
    const double expected =
        secs(u.nvls_step + u.latency) + (S + fill_840mib(k)) / std::min(kd * B / (kd + 1), R.value());
    EXPECT_NEAR(nvls_alone(m, all_reduce(m, kS, 0, k)), expected, 1e-9) << "k=" << k;
    // Any k GPUs of the server: the same time.
    EXPECT_NEAR(nvls_alone(m, all_reduce(m, kS, 8 - k, k)), expected, 1e-9)
        << "k=" << k << " (last GPUs)";
  }
}

TEST(NvlsClosedForm, ConcurrentAllReducesShareOnlyThePortsTheyUse) {
  // B = 100 GB/s, R = 60 GB/s, k = 4: alone, t = a + (S + F) / min(4B/5, R) = a + (S + F)/R.
  // Two 4-GPU groups of one 8-GPU server (two TP groups) use disjoint GPUs, links and reduction
  // ports: each runs as if alone; neither gets the other's ports.
  // Two all-reduces on the same 4 GPUs (two communicators) share those GPUs' links and ports:
  // per port 2 k members of rate r: 2 k r <= R and 2 (k+1) r <= B, so r = min(B/10, R/8) = R/8
  // and each takes a + (S/k) / r = a + 2 S / R, plus the fill F at the idle rate R (the fill is
  // taken at the rate the pipeline has alone: an approximation under contention).
  const Uniform u;
  const Bandwidth R = gigabytes_per_second(60);
  const Machine m = testing::uniform_star(8, u, R);
  const double S = static_cast<double>(kS.value());
  const double a = secs(u.nvls_step + u.latency);
  const double F = fill_840mib(4);
  const double alone = a + (S + F) / R.value();
  EXPECT_NEAR(nvls_alone(m, all_reduce(m, kS, 0, 4)), alone, 1e-9);
  const auto disjoint = nvls_together(m, {all_reduce(m, kS, 0, 4), all_reduce(m, kS, 4, 4)});
  ASSERT_EQ(disjoint.size(), 2u);
  EXPECT_NEAR(disjoint[0], alone, 1e-9);
  EXPECT_NEAR(disjoint[1], alone, 1e-9);
  const auto same = nvls_together(m, {all_reduce(m, kS, 0, 4), all_reduce(m, kS, 0, 4)});
  ASSERT_EQ(same.size(), 2u);
  EXPECT_NEAR(same[0], a + (2 * S + F) / R.value(), 1e-9);
  EXPECT_NEAR(same[1], a + (2 * S + F) / R.value(), 1e-9);
}

TEST(NvlsClosedForm, DgxH100SmallMessagesTakeNcclsNvlsLatency) {
  // The bundled DGX H100 with the built-in parameters, 8 GPUs:
  //   latency: NCCL's NVLS base latency, 0 (tuning.cc baseLatencies, NVLS, Simple), plus one
  //            NVLS step of 25 us (tuning.cc hwLatencies, NVLINK, NVLS, Simple) and the 0.5 us
  //            wire latency of one GPU <-> NVSwitch link (configs/hardware/link-classes.json);
  //   bandwidth: B = 450 GB/s x 0.8 (NVLink4 per direction, nvlink efficiency) = 360 GB/s,
  //            R = 276 GB/s (switch_reduction_per_gpu): min(8 x 360 / 9, 276) = 276 GB/s;
  //   fill: under 2 loops of 16 x 8 x 32 KiB (8 MiB) the chunk is 16 KiB, so
  //            F = 2 x 16 x min(S, 8 x 16 KiB).
  // Before issue 9 the model charged 4 Simple NVLink steps and the launch latency here:
  // 8.4 + 4 x 12.5 = 58.4 us, about twice NCCL's 25 us.
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  for (Bytes S : {kibibytes(1), kibibytes(8), kibibytes(64), mebibytes(1)}) {
    const double s = static_cast<double>(S.value());
    const double F = 2 * 16 * std::min(s, 8 * 16 * 1024.0);
    const double expected = 25.5e-6 + (s + F) / 276e9;
    EXPECT_NEAR(nvls_alone(m, all_reduce(m, S, 0, 8)), expected, 1e-9) << S.value();
  }
}

TEST(NvlsClosedForm, DgxH100PipelineFillFollowsNcclsChunkSizes) {
  // 8 GPUs, 16 channels: a loop is 128 chunks. The chunk is 16 KiB under 2 loops of 32 KiB
  // (8 MiB), 32 KiB under 8 loops of 64 KiB (64 MiB), 64 KiB under 64 loops of 128 KiB (1 GiB),
  // else 128 KiB; F = 2 x 16 x 8 x chunk once S exceeds one channel's 8 chunks.
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  const std::vector<std::pair<Bytes, double>> cases = {
      {mebibytes(8) - Bytes{1024}, 16 * 1024.0}, {mebibytes(8), 32 * 1024.0},
      {mebibytes(64), 64 * 1024.0},             {mebibytes(256), 64 * 1024.0},
      {gibibytes(1), 128 * 1024.0},             {gibibytes(8), 128 * 1024.0}};
  for (const auto& [S, chunk] : cases) {
    const double s = static_cast<double>(S.value());
    const double expected = 25.5e-6 + (s + 2 * 16 * 8 * chunk) / 276e9;
    // Within the picosecond rounding of the fill and of the flow's end (core/units.h).
    EXPECT_NEAR(nvls_alone(m, all_reduce(m, S, 0, 8)), expected, 2e-12 + expected * 1e-9) << S.value();
  }
}

TEST(NvlsClosedForm, AClusterFileSetsNvlsLatencies) {
  // "collective_model": {"nvls_base_latency": "2us", "nvls_step_latency": "10us"}: at 1 KiB,
  // t = 2 + (10 + 0.5) us + (1024 B + F) / 276 GB/s, F = 2 x 16 x 1024 B.
  const Machine m = load_machine(
      std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json",
      {"/collective_model={\"nvls_base_latency\": \"2us\", \"nvls_step_latency\": \"10us\"}"});
  EXPECT_NEAR(nvls_alone(m, all_reduce(m, kibibytes(1), 0, 8)), 12.5e-6 + (1024 + 2 * 16 * 1024) / 276e9, 1e-9);
}

TEST(NvlsClosedForm, DgxH100OverTwoToEightGpus) {
  // As above, k GPUs of the DGX H100: k x 360 / (k+1) GB/s is 240 and 270 for k = 2, 3 (below
  // R = 276: the NVLinks bound), 288 ... 320 for k = 4..8 (the reduction ports bound).
  const Machine m = load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  const double S = static_cast<double>(kS.value());
  for (std::size_t k = 2; k <= 8; ++k) {
    const double kd = static_cast<double>(k);
    const double expected = 25.5e-6 + (S + fill_840mib(k)) / std::min(kd * 360e9 / (kd + 1), 276e9);
    EXPECT_NEAR(nvls_alone(m, all_reduce(m, kS, 0, k)), expected, expected * 1e-9) << "k=" << k;
  }
}

TEST(NvlsPipeline, ChunkAndFillFollowNcclsRuleForAnyChannelsAndHeads) {
  // 24 channels (NCCL on single-node Blackwell), 4 heads: 96 concurrent chunks. From 128 KiB:
  // 64 KiB under 64 x 96 x 128 KiB = 768 MiB, 32 KiB under 8 x 96 x 64 KiB = 48 MiB, 16 KiB under
  // 2 x 96 x 32 KiB = 6 MiB.
  const Bytes max = kibibytes(128);
  EXPECT_EQ(nvls_chunk(mebibytes(768), 24, 4, max), kibibytes(128));
  EXPECT_EQ(nvls_chunk(mebibytes(768) - Bytes{1}, 24, 4, max), kibibytes(64));
  EXPECT_EQ(nvls_chunk(mebibytes(48), 24, 4, max), kibibytes(64));
  EXPECT_EQ(nvls_chunk(mebibytes(48) - Bytes{1}, 24, 4, max), kibibytes(32));
  EXPECT_EQ(nvls_chunk(mebibytes(6), 24, 4, max), kibibytes(32));
  EXPECT_EQ(nvls_chunk(mebibytes(6) - Bytes{1}, 24, 4, max), kibibytes(16));
  // A smaller largest chunk is never raised.
  EXPECT_EQ(nvls_chunk(gibibytes(8), 24, 4, kibibytes(32)), kibibytes(32));
  // Fill: two stage times of the busiest channel, 2 x 24 x min(S, 4 x chunk).
  EXPECT_EQ(nvls_fill_bytes(kibibytes(8), 24, 4, max), Bytes{2 * 24 * 8 * 1024});
  EXPECT_EQ(nvls_fill_bytes(gibibytes(1), 24, 4, max), Bytes{2 * 24 * 4 * 128 * 1024});
}

TEST(Nvls, NeedsTwoRanksInOneServerAndTheSimpleProtocol) {
  const Machine m = testing::uniform_star(8, Uniform{}, gigabytes_per_second(80));
  CollectiveSimulator sim(m);
  std::string why;
  EXPECT_FALSE(sim.run_fixed(all_reduce(m, kS, 0, 8), CollectiveAlgorithm::kNvls,
                             Protocol::kLowLatency, &why));
  EXPECT_EQ(why, "nvls runs the Simple protocol only");
  EXPECT_FALSE(
      sim.run_fixed(all_reduce(m, kS, 0, 1), CollectiveAlgorithm::kNvls, Protocol::kSimple, &why));
  EXPECT_EQ(why, "nvls needs at least two ranks");
}

}  // namespace
}  // namespace cs::coll
