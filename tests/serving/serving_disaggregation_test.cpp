// Prefill/decode disaggregation: the KV cache crosses the simulated network as NCCL send/receives
// on the shared flow network, so a lone request's timeline is prefill + transfer + decode exactly;
// an oversubscribed fabric slows the transfers; failures during a transfer lose nothing and leak
// no KV block; separating prefill from decode removes prefill interference from TPOT.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "drivers/serving_sim.h"
#include "drivers/serving_step_time.h"
#include "results/serving_report.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "tests/serving/scenario.h"
#include "workloads/inference_cost.h"
#include "workloads/model.h"

namespace cs::drv {
namespace {

nlohmann::json disaggregated(const char* cluster, int decode, int prefill, int tp) {
  return {{"cluster", cluster},
          {"model", "llama3-70b"},
          {"replicas", {{"count", decode}, {"tp", tp}}},
          {"disaggregation", {{"prefill", {{"count", prefill}, {"tp", tp}}}}},
          {"requests", {{"arrival", "poisson"}, {"rate", 1}, {"count", 1}, {"prompt_tokens", 2000}, {"output_tokens", 2}}}};
}

void expect_no_leak(const results::ServingRun& run) {
  for (std::size_t r = 0; r < run.replica_stats.size(); ++r) EXPECT_EQ(run.replica_stats[r].kv_in_use_at_end, 0) << r;
}

TEST(ServingDisaggregation, LoneRequestIsPrefillThenTransferThenDecode) {
  // Decode replica on GPUs 0-3 (server 0), prefill replica on 4-7... of the same server would
  // cross NVLink; put it on server 1 (GPUs 8-11) so the cache crosses the rail fabric.
  nlohmann::json j = disaggregated("h100-rail-512", 1, 1, 4);
  j["disaggregation"]["prefill"]["first_gpu"] = 8;
  const ServingScenario s = test::scenario(j);
  const results::ServingRun run = simulate_serving(s);
  ASSERT_EQ(run.requests.size(), 1u);
  const results::RequestRecord& r = run.requests[0];
  ASSERT_EQ(r.status, results::RequestStatus::kCompleted);

  const coll::Machine machine = coll::load_machine(s.cluster);
  const wl::Model model = wl::load_model("llama3-70b");
  const auto g = machine.cluster.gpus();
  ServingStepTime prefill(machine, model, {4}, {{g[8], g[9], g[10], g[11]}}, nullptr);
  ServingStepTime decode(machine, model, {4}, {{g[0], g[1], g[2], g[3]}}, nullptr);
  wl::InferenceBatch p;
  p.add(2000, 0, true);
  EXPECT_EQ(r.first_token - r.arrival, prefill.step(0, p).total());

  // Four transfers GPU 8+i -> GPU i of a quarter of the cache each, on four rails: each as long
  // as the same send/receive alone.
  const Bytes part{2000 * wl::kv_bytes_per_token(model.transformer, {1}).value() / 4};
  coll::CollectiveSimulator alone(machine);
  Duration longest{0};
  for (int i = 0; i < 4; ++i) {
    coll::CollectiveSpec spec;
    spec.op = CollectiveOp::kSendRecv;
    spec.size = part;
    spec.ranks = {g[static_cast<std::size_t>(8 + i)], g[static_cast<std::size_t>(i)]};
    spec.algorithm = CollectiveAlgorithm::kDirect;
    longest = std::max(longest, alone.run(spec).time);
  }
  EXPECT_EQ(r.kv_transfer, longest);
  wl::InferenceBatch d;
  d.add(1, 2000, true);
  EXPECT_EQ(r.finish - r.first_token, r.kv_transfer + decode.step(0, d).total());
  EXPECT_EQ(run.replica_stats[0].role, "decode");
  EXPECT_EQ(run.replica_stats[1].role, "prefill");
  expect_no_leak(run);
}

nlohmann::json across_leaves(double oversubscription) {
  // 4 prefill replicas of TP 8 on leaf 0's servers, 4 decode replicas on leaf 1's: every cache
  // crosses the spines. 8,000-token prompts (2.6 GB of cache each) at 8 requests/s.
  nlohmann::json j = disaggregated("h100-leafspine-2to1", 4, 4, 8);
  j["cluster_overrides"] = {"/fabric/oversubscription=" + std::to_string(static_cast<int>(oversubscription))};
  j["requests"] = {{"arrival", "poisson"}, {"rate", 8}, {"count", 400}, {"prompt_tokens", 8000}, {"output_tokens", 64}};
  return j;
}

TEST(ServingDisaggregation, AnOversubscribedFabricSlowsTheTransfers) {
  const results::ServingRun slow = simulate_serving(test::scenario(across_leaves(2)));
  const results::ServingRun fast = simulate_serving(test::scenario(across_leaves(1)));
  const auto ms = results::serving_metrics(slow), mf = results::serving_metrics(fast);
  ASSERT_EQ(ms.completed, 400);
  ASSERT_EQ(mf.completed, 400);
  double ts = 0, tf = 0;
  for (std::size_t i = 0; i < 400; ++i) {
    ts += to_seconds(slow.requests[i].kv_transfer);
    tf += to_seconds(fast.requests[i].kv_transfer);
  }
  EXPECT_GT(ts / tf, 1.5) << ts / 400 << " s vs " << tf / 400 << " s per cache";
  EXPECT_GT(ms.e2e.mean, mf.e2e.mean);
  // Conservation: every cache (8,000 tokens x 327,680 bytes) crosses two NIC-leaf links and two
  // leaf-spine links, whatever the oversubscription.
  const std::int64_t cache = 8000LL * 327680;
  for (const results::ServingRun* run : {&slow, &fast}) {
    ASSERT_GE(run->transfer_bytes_by_tier.size(), 3u);
    EXPECT_EQ(run->transfer_bytes_by_tier[1].value(), 2 * 400 * cache);
    EXPECT_EQ(run->transfer_bytes_by_tier[2].value(), 2 * 400 * cache);
    expect_no_leak(*run);
  }
}

TEST(ServingDisaggregation, FailuresDuringTransfersLoseNothing) {
  nlohmann::json j = across_leaves(2);
  j["failures"] = {{"events", {{{"replica", 1}, {"at", "10s"}, {"until", "20s"}},   // a decode replica
                               {{"replica", 5}, {"at", "15s"}, {"until", "30s"}}}}};  // a prefill replica
  const results::ServingRun run = simulate_serving(test::scenario(j));
  const auto m = results::serving_metrics(run);
  EXPECT_EQ(m.completed, 400);
  EXPECT_GT(m.retried, 0);
  expect_no_leak(run);
  j["failures"]["policy"] = "drop";
  const results::ServingRun dropped = simulate_serving(test::scenario(j));
  const auto md = results::serving_metrics(dropped);
  EXPECT_GT(md.lost, 0);
  EXPECT_EQ(md.lost + md.completed, 400);
  expect_no_leak(dropped);
}

Bytes link_bytes(const results::ServingRun& run, const std::string& src, const std::string& dst) {
  for (const auto& l : run.transfer_links) {
    if (l.src == src && l.dst == dst) return l.bytes;
  }
  return Bytes{0};
}

TEST(ServingDisaggregation, AFailedSpineLinkMovesTrafficToTheOthers) {
  // The caches go from the prefill pool on leaf 1 to the decode pool on leaf 0, down a spine's
  // cable to leaf 0. Leaf 0's cable to spine 3 fails before the first transfer: the caches cross
  // the other 15 spines; every byte still crosses, none on that cable while it is down.
  nlohmann::json j = across_leaves(2);
  const results::ServingRun healthy = simulate_serving(test::scenario(j));
  ASSERT_GT(link_bytes(healthy, "spine3", "leaf0").value(), 0);
  j["failures"] = {{"events", {{{"link", {"leaf0", "spine3"}}, {"at", "0s"}}}}};
  const results::ServingRun cut = simulate_serving(test::scenario(j));
  EXPECT_EQ(results::serving_metrics(cut).completed, 400);
  EXPECT_EQ(link_bytes(cut, "leaf0", "spine3").value(), 0);
  EXPECT_EQ(link_bytes(cut, "spine3", "leaf0").value(), 0);
  ASSERT_GE(cut.transfer_bytes_by_tier.size(), 3u);
  EXPECT_EQ(cut.transfer_bytes_by_tier[2], healthy.transfer_bytes_by_tier[2]);
  Bytes others{0}, before{0};
  for (int k = 0; k < 16; ++k) {
    if (k == 3) continue;
    others += link_bytes(cut, "spine" + std::to_string(k), "leaf0");
    before += link_bytes(healthy, "spine" + std::to_string(k), "leaf0");
  }
  EXPECT_EQ(others, before + link_bytes(healthy, "spine3", "leaf0"));
  // Back up at 30 s: later transfers use it again.
  j["failures"]["events"][0]["until"] = "30s";
  const results::ServingRun back = simulate_serving(test::scenario(j));
  EXPECT_GT(link_bytes(back, "spine3", "leaf0").value(), 0);
  EXPECT_LT(link_bytes(back, "spine3", "leaf0"), link_bytes(healthy, "spine3", "leaf0"));
}

TEST(ServingDisaggregation, AFailedSpineSwitchMovesTrafficToTheOthers) {
  // Spine 3 down (all 64 of its links): the caches cross the other 15 spines.
  nlohmann::json j = across_leaves(2);
  const results::ServingRun healthy = simulate_serving(test::scenario(j));
  j["failures"] = {{"events", {{{"switch", "spine3"}, {"at", "0s"}}}}};
  const results::ServingRun cut = simulate_serving(test::scenario(j));
  EXPECT_EQ(results::serving_metrics(cut).completed, 400);
  for (const auto& l : cut.transfer_links) EXPECT_TRUE(l.src != "spine3" && l.dst != "spine3") << l.src << " -> " << l.dst;
  EXPECT_EQ(cut.transfer_bytes_by_tier[2], healthy.transfer_bytes_by_tier[2]);
  // A leaf cannot fail this way (its servers would be cut off).
  j["failures"]["events"][0]["switch"] = "leaf0";
  try {
    simulate_serving(test::scenario(j));
    ADD_FAILURE() << "a leaf failure was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/failures/events/0/switch");
  }
}

TEST(ServingDisaggregation, SeparatingPrefillRemovesItsInterferenceFromTpot) {
  // Long prompts: in a mixed replica every prompt chunk lengthens the iterations of the decodes
  // batched with it (Splitwise, DistServe); a decode pool runs decodes only.
  nlohmann::json d = disaggregated("h100-rail-512", 2, 2, 4);
  d["requests"] = {{"arrival", "poisson"}, {"rate", 4}, {"count", 600}, {"prompt_tokens", 6000}, {"output_tokens", 200}};
  nlohmann::json m = d;
  m.erase("disaggregation");
  m["replicas"]["count"] = 4;
  const auto dis = results::serving_metrics(simulate_serving(test::scenario(d)));
  const auto mix = results::serving_metrics(simulate_serving(test::scenario(m)));
  EXPECT_LT(dis.tpot.p99, 0.8 * mix.tpot.p99) << dis.tpot.p99 << " s vs " << mix.tpot.p99 << " s";
}

}  // namespace
}  // namespace cs::drv
