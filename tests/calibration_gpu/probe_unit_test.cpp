// The probe's pure C++ parts (label unit, no GPU): statistics and the stop rule, the NCCL TUNING
// log parser, the plans (shapes, sizes, rank counts, nccl-tests' counts), the catalog names, the
// table rows and the narrow-float decoding used by the GEMM self-check.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibration/probe/catalog_names.h"
#include "calibration/probe/host_types.h"
#include "calibration/probe/nccl_log.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/stats.h"
#include "calibration/probe/table.h"
#include "core/errors.h"

namespace cs::probe {
namespace {

constexpr std::int64_t kGiB = 1LL << 30;

// ---- statistics ----------------------------------------------------------------------------------

TEST(ProbeStats, SummaryOfUnsortedSamples) {
  // 1..11 shuffled: median 6, p10 = 2 (h = 1), p90 = 10 (h = 9), spread (10 - 2) / 6.
  const SampleSummary s = summarize({5, 3, 11, 1, 9, 7, 2, 8, 4, 10, 6});
  EXPECT_EQ(s.samples, 11);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.median_s, 6);
  EXPECT_DOUBLE_EQ(s.p10_s, 2);
  EXPECT_DOUBLE_EQ(s.p90_s, 10);
  EXPECT_DOUBLE_EQ(s.spread, 8.0 / 6.0);
  const cal::Timing t = to_timing(s, 3);
  EXPECT_EQ(t.median, duration_from_seconds(6));
  EXPECT_EQ(t.discarded_throttled, 3);
  EXPECT_EQ(t.samples, 11);
}

TEST(ProbeStats, StopRule) {
  StopRule r;  // 10 samples, 0.5%, 5 s, hard limit 50 s
  EXPECT_EQ(should_stop(r, 9, 0.0, 1.0), StopReason::kContinue) << "never below min_samples...";
  EXPECT_EQ(should_stop(r, 9, 0.0, 49.0), StopReason::kContinue) << "...until the hard limit";
  EXPECT_EQ(should_stop(r, 3, 0.0, 50.0), StopReason::kHardLimit);
  EXPECT_EQ(should_stop(r, 10, 0.004, 0.1), StopReason::kConverged);
  EXPECT_EQ(should_stop(r, 10, 0.005, 0.1), StopReason::kContinue) << "strictly below the target";
  EXPECT_EQ(should_stop(r, 500, 0.02, 5.0), StopReason::kTimeLimit);
  EXPECT_EQ(should_stop(r, r.max_samples, 0.02, 0.1), StopReason::kMaxSamples);
}

TEST(ProbeStats, SpreadIsCheckedAtGeometricIntervals) {
  StopRule r;
  EXPECT_FALSE(spread_check_due(r, 9, 0));
  EXPECT_TRUE(spread_check_due(r, 10, 0));
  EXPECT_TRUE(spread_check_due(r, 11, 10));     // +1 below 20 samples
  EXPECT_FALSE(spread_check_due(r, 1040, 1000));
  EXPECT_TRUE(spread_check_due(r, 1050, 1000));  // +5%
}

// ---- NCCL's TUNING log ---------------------------------------------------------------------------

TEST(NcclLog, ParsesTheCurrentFormat) {
  const auto t = parse_tuning_line(
      "gpu-node-3:81234:81301 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->function, "AllReduce");
  EXPECT_EQ(t->bytes, 4096);
  EXPECT_EQ(t->algorithm, "tree");
  EXPECT_EQ(t->protocol, "ll");
  EXPECT_EQ(t->channels, 2);
}

TEST(NcclLog, ParsesTheFormatWithATrailingCommunicator) {
  // Some NCCL versions append the communicator: "... channel{Lo..Hi}={0..0} comm 0x55a7a339db50".
  const auto t = parse_tuning_line("h:1:2 [0] NCCL INFO AllReduce: 4 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0} comm 0x55a7a339db50");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->bytes, 4);
  EXPECT_EQ(t->algorithm, "tree");
  EXPECT_EQ(t->protocol, "ll");
  EXPECT_EQ(t->channels, 1);
}

TEST(NcclLog, ParsesPaddingTimestampsAndOtherNames) {
  const auto a = parse_tuning_line(
      "[2026-11-29 12:00:01] host:1:2 [3] NCCL INFO AllGather:   128 Bytes -> Algo RING  proto LL128   channel{Lo..Hi}={0..15}");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->function, "AllGather");
  EXPECT_EQ(a->bytes, 128);
  EXPECT_EQ(a->algorithm, "ring");
  EXPECT_EQ(a->protocol, "ll128");
  EXPECT_EQ(a->channels, 16);
  const auto b = parse_tuning_line("h:1:2 [0] NCCL INFO ReduceScatter: 268435456 Bytes -> Algo NVLS_TREE proto SIMPLE channel{Lo..Hi}={4..7}");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->algorithm, "nvls_tree");
  EXPECT_EQ(b->protocol, "simple");
  EXPECT_EQ(b->channels, 4);
  const auto c = parse_tuning_line("h:1:2 [0] NCCL INFO Broadcast: 8 Bytes -> Algo CollNetDirect proto Simple channel{Lo..Hi}={0..0}");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->algorithm, "collnet_direct");
  EXPECT_EQ(c->protocol, "simple");
  EXPECT_EQ(c->channels, 1);
}

TEST(NcclLog, ParsesTheOldNumericFormat) {
  const auto t = parse_tuning_line("host:1:2 [0] NCCL INFO 1048576 Bytes -> Algo 1 proto 2 time 35.500000");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->function, "");
  EXPECT_EQ(t->bytes, 1048576);
  EXPECT_EQ(t->algorithm, "ring");
  EXPECT_EQ(t->protocol, "simple");
  EXPECT_EQ(t->channels, 0);
  EXPECT_EQ(normalize_algorithm("4"), "nvls");
  EXPECT_EQ(normalize_algorithm("6"), "pat");
  EXPECT_EQ(normalize_protocol("1"), "ll128");
}

TEST(NcclLog, IgnoresOtherLines) {
  EXPECT_FALSE(parse_tuning_line("host:1:2 [0] NCCL INFO Channel 00/24 : 0 1 2 3 4 5 6 7").has_value());
  EXPECT_FALSE(parse_tuning_line("host:1:2 [0] NCCL INFO NCCL_ALGO set by environment to Ring").has_value());
  EXPECT_FALSE(parse_tuning_line("NCCL version 2.28.9+cuda13.0").has_value());
  EXPECT_FALSE(parse_tuning_line("host:1:2 [0] NCCL INFO AllReduce: lots Bytes -> Algo RING proto LL").has_value());
  EXPECT_FALSE(parse_tuning_line("host:1:2 [0] NCCL INFO AllReduce: 64 Bytes -> Algo RING").has_value());
  EXPECT_FALSE(parse_tuning_line("").has_value());
}

TEST(NcclLog, ChannelsWithoutARangeAreZero) {
  const auto t = parse_tuning_line("h:1:2 [0] NCCL INFO AllReduce: 64 Bytes -> Algo RING proto LL channel{Lo..Hi}={x..y}");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->channels, 0);
}

TEST(NcclLog, DominantChoiceCountsTheMatchingFunction) {
  std::vector<TuningLine> lines = {
      {"AllReduce", 64, "ring", "ll", 2},     {"AllReduce", 64, "tree", "ll", 2}, {"AllReduce", 64, "ring", "ll", 2},
      {"AllGather", 64, "nvls", "simple", 8}, {"AllGather", 64, "nvls", "simple", 8}, {"AllGather", 64, "nvls", "simple", 8}};
  const cal::NcclChoice c = dominant_choice(lines, "AllReduce");
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.protocol, "ll");
  EXPECT_EQ(c.channels, 2);
  const cal::NcclChoice tie = dominant_choice({{"AllReduce", 1, "ring", "ll", 1}, {"AllReduce", 1, "tree", "ll", 1}}, "AllReduce");
  EXPECT_EQ(tie.algorithm, "tree") << "a tie goes to the latest line";
  const cal::NcclChoice none = dominant_choice(lines, "Broadcast");
  EXPECT_EQ(none.algorithm, "");
  EXPECT_EQ(none.protocol, "");
  EXPECT_EQ(none.channels, 0);
  EXPECT_EQ(nccl_function_name("all_reduce"), "AllReduce");
  EXPECT_EQ(nccl_function_name("reduce_scatter"), "ReduceScatter");
  EXPECT_EQ(nccl_function_name("all_to_all"), "") << "point-to-point: no tuning line";
  EXPECT_EQ(nccl_function_name("send_recv"), "");
}

TEST(NcclLog, TailReadsOnlyCompleteNewLines) {
  const std::string path = ::testing::TempDir() + "/nccl_log_tail_test.log";
  std::remove(path.c_str());
  NcclLogTail tail(path);
  EXPECT_TRUE(tail.read_new().empty()) << "NCCL has not created the file yet";
  {
    std::ofstream f(path);
    f << "h:1:2 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}\n"
      << "h:1:2 [0] NCCL INFO something else\n"
      << "h:1:2 [0] NCCL INFO AllReduce: 16 Bytes -> Algo RI";  // being written
  }
  auto first = tail.read_new();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].bytes, 8);
  {
    std::ofstream f(path, std::ios::app);
    f << "NG proto LL channel{Lo..Hi}={0..1}\n";
  }
  auto second = tail.read_new();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].bytes, 16);
  EXPECT_EQ(second[0].channels, 2);
  EXPECT_TRUE(tail.read_new().empty());
  std::remove(path.c_str());
}

TEST(NcclLog, DebugFileSubstitutions) {
  EXPECT_EQ(expand_nccl_debug_file("/tmp/nccl.%h.%p.log", "node7.cluster.local", 4242), "/tmp/nccl.node7.4242.log");
  EXPECT_EQ(expand_nccl_debug_file("a%%b%x%", "h", 1), "a%b%x%");
}

// ---- plans ---------------------------------------------------------------------------------------

TEST(ProbePlan, Sections) {
  EXPECT_EQ(parse_sections("collectives,gemm,gemm,memory"),
            (std::vector<std::string>{"gemm", "memory", "collectives"}));
  EXPECT_EQ(parse_sections("launch"), (std::vector<std::string>{"launch"}));
  EXPECT_THROW(parse_sections("gemm,bogus"), InputError);
  EXPECT_THROW(parse_sections(""), InputError);
}

TEST(ProbePlan, QuickGemmPlanFitsTheBudget) {
  const auto plan = gemm_plan(true, true);
  EXPECT_GE(plan.size(), 30u);
  EXPECT_LE(plan.size(), 40u) << "--quick: about 40 GEMM points";
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan[0].source, "mamf");
  EXPECT_EQ(std::tie(plan[0].shape.dtype, plan[0].shape.m, plan[0].shape.n, plan[0].shape.k),
            std::make_tuple(std::string("bf16"), std::int64_t{8192}, std::int64_t{8192}, std::int64_t{8192}));
  std::set<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> seen;
  std::set<std::string> sources, dtypes;
  for (const auto& e : plan) {
    EXPECT_TRUE(seen.insert({e.shape.dtype, e.shape.m, e.shape.n, e.shape.k}).second) << "each shape once";
    sources.insert(e.source);
    dtypes.insert(e.shape.dtype);
    EXPECT_EQ(e.shape.m % 16, 0);  // fp8 and tensor cores want multiples of 16
    EXPECT_EQ(e.shape.n % 16, 0);
    EXPECT_EQ(e.shape.k % 16, 0);
  }
  EXPECT_EQ(sources, (std::set<std::string>{"mamf", "model-shape", "grid", "wave-sweep"}));
  EXPECT_EQ(dtypes, (std::set<std::string>{"bf16", "fp16", "tf32", "fp8"}));
  // A GPT QKV projection with T = 4096, h = 8192, TP 8: (4096, 3 * 8192 / 8, 8192).
  EXPECT_EQ(seen.count({"bf16", 4096, 3072, 8192}), 1u);
}

TEST(ProbePlan, FullGemmPlanAndNoFp8BeforeAda) {
  const auto full = gemm_plan(false, true);
  std::size_t grid_bf16 = 0, model = 0, wave = 0;
  for (const auto& e : full) {
    if (e.source == "grid" && e.shape.dtype == "bf16") ++grid_bf16;
    if (e.source == "model-shape") ++model;
    if (e.source == "wave-sweep") ++wave;
  }
  EXPECT_GT(grid_bf16, 300u);  // 7^3 less the shapes measured earlier
  EXPECT_GT(model, 100u);      // 4 T x 4 h x 2 TP x 4 GEMMs, less duplicates
  EXPECT_EQ(wave, 10u);        // n = 7936 .. 9216 by 128, less 8192 (the mamf point)
  for (const auto& e : gemm_plan(false, false)) EXPECT_NE(e.shape.dtype, "fp8");
}

TEST(ProbePlan, GeometricSizes) {
  EXPECT_EQ(geometric_sizes(8, 100, 4, false), (std::vector<std::int64_t>{8, 32}));
  EXPECT_EQ(geometric_sizes(8, 100, 4, true), (std::vector<std::int64_t>{8, 32, 100}));
  EXPECT_EQ(geometric_sizes(8, 128, 2, true), (std::vector<std::int64_t>{8, 16, 32, 64, 128}));
  EXPECT_TRUE(geometric_sizes(8, 4, 2, true).empty());
  const auto huge = geometric_sizes(1, std::numeric_limits<std::int64_t>::max(), 2, false);
  EXPECT_EQ(huge.size(), 63u) << "no overflow at the top";
}

TEST(ProbePlan, ByteSweeps) {
  const auto no_bound = std::numeric_limits<std::int64_t>::max();
  const auto mem_quick = memory_sizes(true, no_bound);
  EXPECT_EQ(mem_quick.front(), 4096);
  EXPECT_EQ(mem_quick.back(), kGiB);
  EXPECT_EQ(mem_quick.size(), 7u);
  const auto mem_full = memory_sizes(false, no_bound);
  EXPECT_EQ(mem_full.back(), 4 * kGiB);
  EXPECT_EQ(mem_full.size(), 11u);
  EXPECT_EQ(memory_sizes(false, 1 << 20).back(), 1 << 20);

  EXPECT_EQ(link_sizes(false, no_bound).size(), 28u);  // 8 B .. 1 GiB by x2
  EXPECT_EQ(link_sizes(true, no_bound).size(), 10u);   // by x8
  const auto coll_full = collective_sizes(false, no_bound);
  EXPECT_EQ(coll_full.front(), 8);
  EXPECT_EQ(coll_full.back(), 8 * kGiB);
  const auto coll_quick = collective_sizes(true, no_bound);
  EXPECT_EQ(coll_quick.back(), kGiB) << "--quick ends at 1 GiB";
  EXPECT_EQ(coll_quick[1], 32);
  EXPECT_EQ(collective_sizes(true, 1000).back(), 1000) << "--max-bytes bounds the sweep";
}

TEST(ProbePlan, QuickRunOnOneGpuFitsInThreeMinutes) {
  // Points of a one-GPU --quick run (no collectives, no overlap, no d2d) at most 1 s each plus a
  // 3 s warm-up: the run's worst case, which must stay under 3 minutes.
  const auto no_bound = std::numeric_limits<std::int64_t>::max();
  const std::size_t points = gemm_plan(true, true).size() + memory_kernels().size() * memory_sizes(true, no_bound).size() +
                             1 + 2 * link_sizes(true, no_bound).size();
  EXPECT_LE(points, 100u);
  EXPECT_LT(static_cast<double>(points) * 1.0 + 3.0, 180.0);
  EXPECT_TRUE(link_pairs(1, true).empty());
}

TEST(ProbePlan, RanksPairsAndAlgorithms) {
  EXPECT_TRUE(rank_counts(1).empty());
  EXPECT_EQ(rank_counts(2), (std::vector<int>{2}));
  EXPECT_EQ(rank_counts(6), (std::vector<int>{2, 4}));
  EXPECT_EQ(rank_counts(8), (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(link_pairs(3, false).size(), 6u);
  EXPECT_EQ(link_pairs(4, true), (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 3}, {1, 0}, {2, 0}, {3, 0}}));
  EXPECT_TRUE(algorithm_supports("auto", "all_to_all"));
  EXPECT_TRUE(algorithm_supports("tree", "all_reduce"));
  EXPECT_FALSE(algorithm_supports("tree", "all_gather"));
  EXPECT_TRUE(algorithm_supports("nvls", "reduce_scatter"));
  EXPECT_FALSE(algorithm_supports("nvls", "broadcast"));
  EXPECT_TRUE(algorithm_supports("ring", "broadcast"));
  EXPECT_FALSE(algorithm_supports("ring", "send_recv"));
  EXPECT_EQ(collective_ops().size(), 6u);
}

TEST(ProbePlan, NcclTestsCounts) {
  // all_reduce: count = S / 2 (bf16), both buffers S.
  auto ar = collective_counts("all_reduce", 1 << 20, 8, 2);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->count, 1 << 19);
  EXPECT_EQ(ar->bytes, 1 << 20);
  EXPECT_EQ(ar->elements, 1 << 19);
  EXPECT_EQ(ar->send_bytes, 1 << 20);
  // all_gather: per-rank count S / (2 n), rounded down to 8 elements (16 bytes); S is the output.
  auto ag = collective_counts("all_gather", 1000, 4, 2);
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->count, 120);  // 1000 / 2 / 4 = 125 -> 120
  EXPECT_EQ(ag->bytes, 960);
  EXPECT_EQ(ag->send_bytes, 240);
  EXPECT_EQ(ag->recv_bytes, 960);
  auto rs = collective_counts("reduce_scatter", 1000, 4, 2);
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->send_bytes, 960);
  EXPECT_EQ(rs->recv_bytes, 240);
  auto a2a = collective_counts("all_to_all", 4096, 8, 2);
  ASSERT_TRUE(a2a);
  EXPECT_EQ(a2a->count, 256);  // per peer
  EXPECT_EQ(a2a->bytes, 4096);
  EXPECT_FALSE(collective_counts("all_gather", 64, 8, 2)) << "less than 16 bytes per rank";
  EXPECT_FALSE(collective_counts("all_reduce", 1, 2, 2));
  auto sr = collective_counts("send_recv", 8, 2, 2);
  ASSERT_TRUE(sr);
  EXPECT_EQ(sr->count, 4);
}

// ---- catalog names ---------------------------------------------------------------------------------

TEST(CatalogNames, EveryMappedNameIsInTheCatalog) {
  std::ifstream in(std::string(CS_SOURCE_DIR) + "/configs/hardware/gpus.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json catalog = nlohmann::json::parse(in);
  const auto& gpus = catalog.at("gpus");
  for (const auto& [cuda, name] : catalog_gpu_table()) {
    EXPECT_TRUE(gpus.contains(name)) << cuda << " -> " << name << " is not in configs/hardware/gpus.json";
    EXPECT_EQ(catalog_gpu_for(cuda), name);
  }
  EXPECT_EQ(catalog_gpu_for("NVIDIA H200"), "H200-SXM");
  EXPECT_EQ(catalog_gpu_for("NVIDIA A100-SXM4-80GB"), "A100-SXM-80GB");
  EXPECT_EQ(catalog_gpu_for("NVIDIA H100 PCIe"), "") << "not the catalog's SXM part";
  EXPECT_EQ(catalog_gpu_for("NVIDIA A100-SXM4-40GB"), "") << "not the catalog's 80 GB part";
  EXPECT_EQ(catalog_gpu_for("NVIDIA H200 NVL"), "");
}

// ---- narrow floats -------------------------------------------------------------------------------

TEST(HostTypes, Decoding) {
  EXPECT_EQ(bf16_bits_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(fp16_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(fp16_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(fp16_bits_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(0x7e00)));
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x38), 1.0f);   // 0 0111 000
  EXPECT_EQ(fp8_e4m3_bits_to_float(0xc0), -2.0f);  // 1 1000 000
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x7e), 448.0f); // 0 1111 110: the largest
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(fp8_e4m3_bits_to_float(0x7f)));
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x78), 256.0f); // 0 1111 000: exponent 15 is a number in e4m3
}

// ---- tables --------------------------------------------------------------------------------------

TEST(ProbeTable, CollectiveRowsFollowNcclTests) {
  cal::CollectivePoint p;
  p.op = "all_reduce";
  p.ranks = 8;
  p.bytes = Bytes{1 << 20};
  cal::Timing t;
  t.median = microseconds(10);
  t.p10 = t.p90 = t.min = t.median;
  t.samples = 10;
  p.timing = t;
  p.nccl_choice = {"ring", "ll128", 16};
  const std::string row = collective_table_row(p, 1 << 19);
  // size, count, type, redop, root, time (us), algbw, busbw (GB/s), #wrong, NCCL's choice.
  EXPECT_NE(row.find("     1048576        524288  bfloat16     sum      -1    10.00  104.86  183.50     N/A  ring/ll128 16ch"),
            std::string::npos)
      << row;
  p.status = cal::PointStatus::kFailed;
  p.error = "ncclAllReduce(...) failed: unhandled cuda error";
  p.timing.reset();
  EXPECT_NE(collective_table_row(p, 1 << 19).find("failed: ncclAllReduce"), std::string::npos);
  const std::string head = collective_table_header("all_gather", 4, 1, "ring");
  EXPECT_NE(head.find("#wrong"), std::string::npos);
  EXPECT_NE(head.find("algbw"), std::string::npos);
  EXPECT_NE(head.find("busbw"), std::string::npos);
}

}  // namespace
}  // namespace cs::probe
