// The profile file format (docs/calibration-profile.md): round trips, and errors that name the
// file and the JSON path.
#include "calibration/profile.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/random.h"
#include "tests/support/config_error.h"
#include "tests/support/temp_dir.h"

namespace cs::cal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Timing odd_timing(std::int64_t base_ps) {
  Timing t;
  t.median = Duration{base_ps};
  t.p10 = Duration{base_ps - 1};
  t.p90 = Duration{base_ps + 3};
  t.min = Duration{base_ps - 7};
  t.samples = 37;
  t.discarded_throttled = 2;
  return t;
}

// A profile with every field set (and odd picosecond values, to check exact round trips).
Profile full_profile() {
  Profile p;
  p.provenance = {"measured", "clustersim-calibrate 0.1.0", "clustersim-calibrate --quick -o x.json",
                  "2025-01-02T03:04:05Z", "node17", false, "2025-02-03T04:05:06Z", "interrupted"};
  p.inventory.driver_version = "560.35.03";
  p.inventory.cuda_runtime_version = "12.6";
  p.inventory.cublas_version = "12.6.4";
  p.inventory.nccl_version = "2.23.4";
  p.inventory.nodes = 1;
  for (int i = 0; i < 2; ++i) {
    GpuInventory g;
    g.index = i;
    g.node = 0;
    g.name = "NVIDIA H200";
    g.uuid = "GPU-" + std::to_string(i);
    g.sm_count = 132;
    g.compute_capability = "9.0";
    g.memory = Bytes{150754820096};
    g.l2 = mebibytes(50);
    g.sm_clock_mhz = 1980;
    g.memory_clock_mhz = 3201;
    g.power_limit_w = 700.5;
    g.catalog_gpu = "H200-SXM";
    p.inventory.gpus.push_back(g);
  }
  p.inventory.peer_access = {{false, true}, {true, false}};
  p.inventory.nvlink = {{0, 18}, {18, 0}};
  p.inventory.environment = {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}};
  p.settings = {true, 12, 0.005, duration_from_seconds(2.5), mebibytes(256), Duration{123456789}};

  GemmPoint g;
  g.shape = {"bf16", 8192, 4096, 1024};
  g.source = "model-shape";
  g.algo = json{{"tile", "128x256"}, {"stages", 4}, {"split_k", 1}, {"waves", 1.25}};
  g.timing = odd_timing(987654321);
  p.gemm.push_back(g);
  GemmPoint gf;
  gf.status = PointStatus::kFailed;
  gf.error = "CUBLAS_STATUS_ALLOC_FAILED";
  gf.shape = {"fp8", 65536, 65536, 65536};
  gf.source = "mamf";
  p.gemm.push_back(gf);

  MemoryPoint m;
  m.kernel = "norm";
  m.bytes = gibibytes(1);
  m.timing = odd_timing(271828182845);
  p.memory.push_back(m);
  LaunchPoint l;
  l.timing = odd_timing(3141593);
  p.launch.push_back(l);
  OverlapPoint o;
  o.gemm = {"fp16", 4096, 4096, 4096};
  o.collective_op = "reduce_scatter";
  o.collective_ranks = 8;
  o.collective_bytes = mebibytes(64);
  o.alone = Duration{1234567891};
  o.beside = Duration{1334567893};
  p.overlap.push_back(o);
  LinkPoint lk;
  lk.kind = "h2d";
  lk.src = -1;
  lk.dst = 1;
  lk.bytes = mebibytes(512);
  lk.link_class = "pcie";
  lk.timing = odd_timing(9876543210);
  p.links.push_back(lk);
  for (int i = 0; i < 5; ++i) {
    CollectivePoint c;
    c.op = i % 2 ? "all_gather" : "all_reduce";
    c.ranks = 8;
    c.nodes = 1;
    c.bytes = Bytes{std::int64_t{1} << (10 + 4 * i)};
    c.dtype = "bf16";
    c.link_class = "nvlink";
    c.algorithm = i == 4 ? "nvls" : "auto";
    c.protocol = i == 3 ? "ll128" : "auto";
    c.nccl_choice = {"RING", "SIMPLE", 24};
    if (i == 2) {
      c.status = PointStatus::kFailed;
      c.error = "NCCL error: unhandled cuda error";
    } else {
      c.timing = odd_timing(11111111 + 777 * i);
    }
    p.collectives.push_back(c);
  }

  CollectiveFit f;
  f.op = "all_reduce";
  f.algorithm = "ring";
  f.protocol = "simple";
  f.ranks = 8;
  f.link_class = "nvlink";
  f.min_bytes = mebibytes(1);
  f.max_bytes = gibibytes(8);
  f.alpha = Duration{21000017};
  f.beta_s_per_byte = 2.9e-12;
  f.bus_bandwidth = Bandwidth{2.0 * 7 / 8 / 2.9e-12};
  f.nominal = Bandwidth{4.5e11};
  f.link_efficiency = f.bus_bandwidth / f.nominal;
  f.r2 = 0.9998;
  f.mape = 0.012;
  f.loo_mape = 0.015;
  f.alpha_ci95_lo = Duration{18000001};
  f.alpha_ci95_hi = Duration{24000003};
  f.beta_ci95_lo = 2.8e-12;
  f.beta_ci95_hi = 3.0e-12;
  f.points = 20;
  p.models.collectives.push_back(f);
  p.models.gemm.push_back(GemmModel{"bf16", FlopRate{7.6e14}, Duration{4000001}, FlopRate{7.4e14},
                                    {{1024, 1024, 1024, FlopRate{4.1e14}}, {8192, 8192, 8192, FlopRate{7.5e14}}}});
  p.models.memory = MemoryModel{Duration{3000003}, Bandwidth{4.1e12}, kibibytes(4), gibibytes(4), 0.999, 0.02};
  p.models.launch_overhead = Duration{3200001};
  p.models.overlap_slowdown = 1.08;
  p.models.network.push_back(NetworkClassModel{"nvlink", 0.67, Duration{1500001}, "all_reduce ring simple 8 ranks",
                                               Duration{600001}, Duration{1000000}, 40, 0.005});
  p.models.collective_launch = CollectiveLaunchModel{Duration{8400001}, "fitted", "the intercept over the step counts"};
  return p;
}

// full_profile plus a failed point of every kind, so that every key of the format is written
// somewhere: the ok points carry timing and the derived rates, the failed ones error.
Profile every_field_profile() {
  Profile p = full_profile();
  MemoryPoint m;
  m.status = PointStatus::kFailed;
  m.error = "cudaErrorMemoryAllocation";
  p.memory.push_back(m);
  LaunchPoint l;
  l.status = PointStatus::kFailed;
  l.error = "cudaErrorLaunchFailure";
  p.launch.push_back(l);
  LinkPoint lk;
  lk.status = PointStatus::kFailed;
  lk.error = "peer access refused";
  p.links.push_back(lk);
  return p;
}

std::string text_of(const Profile& p) { return to_json(p).dump(2); }

Profile reparse(const std::string& text) { return parse_profile(json::parse(text), "profile.json"); }

using cs::test::config_error;

std::string error_of(const json& doc) {
  return config_error([&] { parse_profile(doc, "profile.json"); });
}

using cs::test::TempDir;

TEST(CalibrationProfile, RoundTripIsIdenticalText) {
  const Profile p = full_profile();
  const std::string text = text_of(p);
  const Profile back = reparse(text);
  EXPECT_EQ(text_of(back), text);
  // Values survive exactly, in picoseconds.
  EXPECT_EQ(back.gemm[0].timing->median, Duration{987654321});
  EXPECT_EQ(back.memory[0].timing->p90, Duration{271828182848});
  EXPECT_EQ(back.settings.warmup, Duration{123456789});
  EXPECT_EQ(back.models.collectives[0].alpha, Duration{21000017});
  EXPECT_EQ(back.models.network[0].step_latency, Duration{1500001});
  EXPECT_EQ(back.models.network[0].ll_step_latency, Duration{600001});
  EXPECT_EQ(back.models.network[0].path_latency, Duration{1000000});
  EXPECT_EQ(back.models.network[0].points, 40);
  ASSERT_TRUE(back.models.collective_launch.has_value());
  EXPECT_EQ(back.models.collective_launch->latency, Duration{8400001});
  EXPECT_EQ(back.models.collective_launch->status, "fitted");
  EXPECT_EQ(back.overlap[0].beside, Duration{1334567893});
  EXPECT_EQ(back.provenance.refit, "2025-02-03T04:05:06Z");
  EXPECT_FALSE(back.provenance.complete);
  EXPECT_EQ(back.inventory.nvlink[1][0], 18);
  EXPECT_TRUE(back.inventory.peer_access[0][1]);
  EXPECT_EQ(back.inventory.environment.at("NCCL_PROTO"), "Simple");
  EXPECT_EQ(back.gemm[0].algo.at("tile"), "128x256");
  EXPECT_EQ(back.gemm[1].status, PointStatus::kFailed);
  EXPECT_FALSE(back.gemm[1].timing.has_value());
  EXPECT_EQ(back.collectives[3].protocol, "ll128");
  EXPECT_EQ(back.collectives[4].algorithm, "nvls");
  EXPECT_EQ(back.models.gemm[0].table[1].rate.value(), 7.5e14);
  EXPECT_EQ(back.models.memory->max_bytes, gibibytes(4));
  EXPECT_EQ(*back.models.overlap_slowdown, 1.08);
}

TEST(CalibrationProfile, TextIsDeterministicAndDocumented) {
  const json j = to_json(full_profile());
  EXPECT_EQ(j.dump(), to_json(full_profile()).dump());
  EXPECT_EQ(j.at("schema"), "clustersim-profile");
  EXPECT_EQ(j.at("schema_version"), 1);
  const json& g = j.at("points").at("gemm").at(0);
  EXPECT_EQ(g.at("status"), "ok");
  EXPECT_DOUBLE_EQ(g.at("flops_per_s").get<double>(), 2.0 * 8192 * 4096 * 1024 / 987654321e-12);
  EXPECT_DOUBLE_EQ(g.at("timing").at("spread").get<double>(), 4.0 / 987654321);
  const json& failed = j.at("points").at("collectives").at(2);
  EXPECT_EQ(failed.at("status"), "failed");
  EXPECT_FALSE(failed.contains("timing"));
  EXPECT_FALSE(failed.contains("busbw_bytes_per_s"));
  const json& c = j.at("points").at("collectives").at(0);
  const double algbw = 1024 / 11111111e-12;
  EXPECT_DOUBLE_EQ(c.at("algbw_bytes_per_s").get<double>(), algbw);
  EXPECT_DOUBLE_EQ(c.at("busbw_bytes_per_s").get<double>(), algbw * 2 * 7 / 8);
  const json& m = j.at("models").at("collectives").at(0);
  EXPECT_EQ(m.at("alpha_ci95_s"), json::array({18000001e-12, 24000003e-12}));
  EXPECT_EQ(j.at("models").at("network").at(0).at("from"), "all_reduce ring simple 8 ranks");
}

TEST(CalibrationProfile, DurationsRoundTripExactlyInPicoseconds) {
  Rng rng(3);
  Profile p;
  for (int i = 0; i < 2000; ++i) {
    LaunchPoint l;
    // Up to 1000 s (kMaxProfileSeconds, below 2^50 ps), every magnitude.
    const auto ps = static_cast<std::int64_t>((rng.next() >> (14 + rng.below(50))) % 999'999'999'999'000LL);
    l.timing = odd_timing(ps + 8);
    p.launch.push_back(l);
  }
  const Profile back = reparse(text_of(p));
  for (std::size_t i = 0; i < p.launch.size(); ++i) {
    ASSERT_EQ(back.launch[i].timing->median, p.launch[i].timing->median) << i;
    ASSERT_EQ(back.launch[i].timing->min, p.launch[i].timing->min) << i;
  }
}

TEST(CalibrationProfile, SaveAndLoadThroughAFile) {
  TempDir dir("profile-save");
  const std::string path = dir.file("h200.json");
  const Profile p = full_profile();
  save_profile(p, path);
  EXPECT_EQ(text_of(load_profile(path)), text_of(p));
  // Saving again replaces the file atomically and leaves no temporary beside it.
  save_profile(p, path);
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(CalibrationProfile, TruncatedFileIsAConfigErrorNamingTheFile) {
  TempDir dir("profile-cut");
  const std::string path = dir.file("cut.json");
  const std::string text = text_of(full_profile());
  std::ofstream(path) << text.substr(0, text.size() / 2);
  const std::string msg = config_error([&] { load_profile(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
  EXPECT_NE(config_error([&] { load_profile(dir.file("missing.json")); }).find("cannot open"), std::string::npos);
}

TEST(CalibrationProfile, MalformedFieldNamesItsPath) {
  json doc = to_json(full_profile());
  doc["points"]["collectives"][3]["bytes"] = "x";
  const std::string msg = error_of(doc);
  EXPECT_NE(msg.find("profile.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at /points/collectives/3/bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an integer"), std::string::npos) << msg;
}

TEST(CalibrationProfile, SchemaVersionTwoIsRefusedNamingBoth) {
  json doc = to_json(full_profile());
  doc["schema_version"] = 2;
  doc["a_key_from_the_future"] = true;  // the version is reported, not the unknown key
  EXPECT_EQ(error_of(doc),
            "config error in profile.json at /schema_version: profile schema version 2 is not "
            "supported by this clustersim (it reads version 1)");
  doc = to_json(full_profile());
  doc["schema"] = "something-else";
  EXPECT_NE(error_of(doc).find("at /schema:"), std::string::npos);
  doc.erase("schema");
  EXPECT_NE(error_of(doc).find("missing required key \"schema\""), std::string::npos);
}

TEST(CalibrationProfile, UnknownKeysAreRejectedWithTheirPath) {
  const json base = to_json(full_profile());
  const char* paths[] = {"/bogus", "/points/gemm/0/bogus", "/points/gemm/0/timing/bogus",
                         "/inventory/gpus/1/bogus", "/models/collectives/0/bogus",
                         "/models/gemm/0/curve/bogus", "/points/overlap/0/collective/bogus",
                         "/settings/bogus", "/provenance/bogus", "/models/bogus", "/points/bogus"};
  for (const char* path : paths) {
    json doc = base;
    doc[json::json_pointer(path)] = 1;
    const std::string msg = error_of(doc);
    EXPECT_NE(msg.find(std::string("at ") + path + ": unknown key \"bogus\""), std::string::npos) << msg;
  }
}

// The allowed keys an unknown key at `object` is answered with (the part of the message in the
// parentheses, split at ", ").
std::vector<std::string> allowed_keys(const json& base, const std::string& object) {
  json doc = base;
  doc[json::json_pointer(object + "/bogus")] = 1;
  const std::string msg = error_of(doc);
  const std::string head = "at " + object + "/bogus: unknown key \"bogus\" (allowed: ";
  const auto at = msg.find(head);
  if (at == std::string::npos || msg.back() != ')') {
    ADD_FAILURE() << object << ": " << msg;
    return {};
  }
  std::vector<std::string> keys;
  std::istringstream list(msg.substr(at + head.size(), msg.size() - at - head.size() - 1));
  for (std::string key; std::getline(list, key, ',');) keys.push_back(key.substr(key.front() == ' ' ? 1 : 0));
  return keys;
}

TEST(CalibrationProfile, UnknownKeysListTheAllowedKeysInTheFormatsOrder) {
  const json base = to_json(full_profile());
  const std::pair<const char*, const char*> objects[] = {
      {"", "schema, schema_version, provenance, inventory, settings, points, models"},
      {"/provenance", "kind, tool, command, created, host, complete, refit, notes"},
      {"/inventory", "driver_version, cuda_runtime_version, cublas_version, nccl_version, nodes, gpus, "
                     "peer_access, nvlink, environment"},
      {"/inventory/gpus/0", "index, node, name, uuid, sm_count, compute_capability, memory_bytes, l2_bytes, "
                            "sm_clock_mhz, memory_clock_mhz, power_limit_w, catalog_gpu"},
      {"/settings", "quick, min_samples, target_spread, time_limit_s, l2_flush_bytes, warmup_s"},
      {"/points", "gemm, memory, launch, overlap, links, collectives"},
      {"/points/gemm/0", "dtype, m, n, k, timing, flops_per_s, source, algo, status, error"},
      {"/points/gemm/0/timing", "median_s, p10_s, p90_s, min_s, samples, discarded_throttled, spread"},
      {"/points/memory/0", "kernel, bytes, timing, bandwidth_bytes_per_s, status, error"},
      {"/points/launch/0", "kernel, timing, status, error"},
      {"/points/overlap/0", "gemm, collective, alone_s, beside_s, slowdown"},
      {"/points/overlap/0/gemm", "dtype, m, n, k"},
      {"/points/overlap/0/collective", "op, ranks, bytes"},
      {"/points/links/0", "kind, src, dst, bytes, timing, bandwidth_bytes_per_s, link_class, status, error"},
      {"/points/collectives/0", "op, ranks, nodes, bytes, dtype, timing, algbw_bytes_per_s, busbw_bytes_per_s, "
                                "link_class, algorithm, protocol, nccl_choice, status, error"},
      {"/points/collectives/0/nccl_choice", "algorithm, protocol, channels"},
      {"/models", "collectives, gemm, memory, launch_overhead_s, overlap_slowdown, network, collective_launch"},
      {"/models/collectives/0", "op, algorithm, protocol, ranks, link_class, min_bytes, max_bytes, alpha_s, "
                                "beta_s_per_byte, bus_bandwidth_bytes_per_s, nominal_bytes_per_s, link_efficiency, "
                                "r2, mape, loo_mape, alpha_ci95_s, beta_ci95_s_per_byte, points"},
      {"/models/gemm/0", "dtype, best_flops_per_s, curve, table"},
      {"/models/gemm/0/curve", "t0_s, rate_flops_per_s"},
      {"/models/gemm/0/table/0", "m, n, k, flops_per_s"},
      {"/models/memory", "t0_s, bandwidth_bytes_per_s, min_bytes, max_bytes, r2, mape"},
      {"/models/network/0", "link_class, link_efficiency, step_latency_s, ll_step_latency_s, path_latency_s, points, mape, from"},
      {"/models/collective_launch", "latency_s, status, from"},
  };
  for (const auto& [object, allowed] : objects) {
    json doc = base;
    doc[json::json_pointer(std::string(object) + "/bogus")] = 1;
    EXPECT_EQ(error_of(doc), std::string("config error in profile.json at ") + object +
                                 "/bogus: unknown key \"bogus\" (allowed: " + allowed + ")");
  }
}

// Every JSON object of a written profile, by its path with array indices as "*" (the free-form
// objects, a GEMM point's algo and the NCCL environment, left out): the union of the keys written.
void written_keys(const json& j, const std::string& path, const std::string& pattern,
                  std::map<std::string, std::pair<std::string, std::set<std::string>>>& out) {
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) written_keys(j[i], path + "/" + std::to_string(i), pattern + "/*", out);
  }
  if (!j.is_object() || pattern.ends_with("/algo") || pattern == "/inventory/environment") return;
  auto& [first_path, keys] = out.try_emplace(pattern, path, std::set<std::string>{}).first->second;
  for (const auto& item : j.items()) {
    keys.insert(item.key());
    written_keys(item.value(), path + "/" + item.key(), pattern + "/" + item.key(), out);
  }
}

TEST(CalibrationProfile, ReaderAcceptsExactlyTheKeysTheWriterWrites) {
  // With every field set (optional ones, failed and ok points), each kind of object is written
  // with every key the reader allows, and with no other.
  const Profile p = every_field_profile();
  const json doc = to_json(p);
  std::map<std::string, std::pair<std::string, std::set<std::string>>> objects;
  written_keys(doc, "", "", objects);
  EXPECT_EQ(objects.size(), 28u);
  for (const auto& [pattern, written] : objects) {
    const std::vector<std::string> allowed = allowed_keys(doc, written.first);
    EXPECT_EQ(std::set<std::string>(allowed.begin(), allowed.end()), written.second) << pattern;
    EXPECT_EQ(allowed.size(), written.second.size()) << pattern << ": a key listed twice";
  }
  EXPECT_EQ(text_of(reparse(text_of(p))), text_of(p));
}

TEST(CalibrationProfile, ExampleSyntheticProfileRoundTripsByteForByte) {
  const std::string path = std::string(CS_SOURCE_DIR) + "/configs/calibration/example-synthetic.json";
  TempDir dir("profile-example");
  save_profile(load_profile(path), dir.file("again.json"));
  const std::string text = cs::test::read_text(path);
  ASSERT_FALSE(text.empty());
  EXPECT_TRUE(cs::test::read_text(dir.file("again.json")) == text);
}

TEST(CalibrationProfile, FailedAndOkPointsAndTiming) {
  const json base = to_json(full_profile());
  // A failed point without timing is fine (full_profile has some); an ok point needs timing.
  json doc = base;
  doc["points"]["memory"][0].erase("timing");
  std::string msg = error_of(doc);
  EXPECT_NE(msg.find("at /points/memory/0: a point with status \"ok\" must have \"timing\""), std::string::npos) << msg;
  // A failed point needs an error and has no timing.
  doc = base;
  doc["points"]["collectives"][2].erase("error");
  EXPECT_NE(error_of(doc).find("at /points/collectives/2: a failed point must have \"error\""), std::string::npos);
  doc = base;
  doc["points"]["collectives"][2]["timing"] = base["points"]["collectives"][0]["timing"];
  EXPECT_NE(error_of(doc).find("at /points/collectives/2/timing: a failed point has no timing"), std::string::npos);
  doc = base;
  doc["points"]["collectives"][0]["error"] = "oops";
  EXPECT_NE(error_of(doc).find("at /points/collectives/0/error"), std::string::npos);
  doc = base;
  doc["points"]["gemm"][0]["status"] = "maybe";
  EXPECT_NE(error_of(doc).find("at /points/gemm/0/status: expected one of \"ok\", \"failed\""), std::string::npos);
}

TEST(CalibrationProfile, RangesAreChecked) {
  const json base = to_json(full_profile());
  const std::pair<const char*, json> bad[] = {
      {"/points/collectives/0/bytes", -1},
      {"/points/collectives/0/ranks", 0},
      {"/points/collectives/0/timing/median_s", -1e-6},
      {"/points/collectives/0/timing/p90_s", 1001.0},  // above kMaxProfileSeconds
      {"/points/links/0/src", -2},
      {"/points/gemm/0/m", 0},
      {"/settings/min_samples", 9},
      {"/settings/time_limit_s", "2s"},
      {"/models/collectives/0/alpha_s", -1e-6},
      {"/models/collectives/0/alpha_ci95_s", json::array({2e-5, 1e-5})},
      {"/models/collectives/0/max_bytes", 1},
      {"/points/collectives/0/op", "all_reduce_v"},
      {"/points/collectives/0/protocol", "LL"},
      {"/points/gemm/0/dtype", "int4"},
  };
  for (const auto& [path, value] : bad) {
    json doc = base;
    doc[json::json_pointer(path)] = value;
    const std::string msg = error_of(doc);
    EXPECT_NE(msg.find(std::string("at ") + path + ":"), std::string::npos) << path << ": " << msg;
  }
  json doc = base;
  doc["inventory"]["nvlink"][1] = json::array({18});
  EXPECT_NE(error_of(doc).find("at /inventory/nvlink/1: expected a row of 2 values"), std::string::npos);
}

TEST(CalibrationProfile, OptionalPartsMayBeAbsent) {
  json doc = to_json(full_profile());
  doc.erase("models");
  doc["points"].erase("overlap");
  doc["provenance"].erase("refit");
  const Profile p = parse_profile(doc, "profile.json");
  EXPECT_TRUE(p.models.collectives.empty());
  EXPECT_FALSE(p.models.memory.has_value());
  EXPECT_TRUE(p.overlap.empty());
  EXPECT_EQ(p.provenance.refit, "");
  // ... and are left out when empty.
  const json back = to_json(p);
  EXPECT_FALSE(back.at("provenance").contains("refit"));
  EXPECT_FALSE(back.at("models").contains("memory"));
  EXPECT_FALSE(back.at("models").contains("launch_overhead_s"));
}

TEST(CalibrationProfile, NetworkModelsOfEarlierProfilesStillRead) {
  // Profiles fitted before the network model was inverted exactly have no collective launch, no
  // LL step latency, no path latency and no point count: they read, with the launch absent (the
  // simulator keeps its own), the LL step absent and 0 for the others.
  json doc = to_json(full_profile());
  doc["models"].erase("collective_launch");
  for (const char* key : {"ll_step_latency_s", "path_latency_s", "points", "mape"}) doc["models"]["network"][0].erase(key);
  const Profile p = parse_profile(doc, "profile.json");
  EXPECT_FALSE(p.models.collective_launch.has_value());
  ASSERT_EQ(p.models.network.size(), 1u);
  EXPECT_EQ(p.models.network[0].step_latency, Duration{1500001});
  EXPECT_FALSE(p.models.network[0].ll_step_latency.has_value());
  EXPECT_EQ(p.models.network[0].path_latency, Duration{0});
  EXPECT_EQ(p.models.network[0].points, 0);
  doc["models"]["collective_launch"] = {{"latency_s", 8e-6}, {"status", "guessed"}, {"from", ""}};
  EXPECT_NE(error_of(doc).find("at /models/collective_launch/status: expected one of \"fitted\", \"assumed\""),
            std::string::npos)
      << error_of(doc);
}

TEST(CalibrationProfile, DerivedValues) {
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor("all_gather", 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor("reduce_scatter", 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor("all_to_all", 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor("send_recv", 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 1), 0.0);
  Timing t;
  EXPECT_EQ(t.spread(), 0.0);
  t.median = microseconds(100);
  t.p10 = microseconds(99);
  t.p90 = microseconds(102);
  EXPECT_DOUBLE_EQ(t.spread(), 0.03);
  CollectivePoint c;
  c.op = "all_reduce";
  c.ranks = 4;
  c.bytes = Bytes{1000000};
  c.timing = t;
  EXPECT_DOUBLE_EQ(c.algbw().value(), 1e10);
  EXPECT_DOUBLE_EQ(c.busbw().value(), 1.5e10);
  c.status = PointStatus::kFailed;
  EXPECT_EQ(c.algbw().value(), 0.0);
  GemmPoint g;
  g.shape = {"bf16", 100, 100, 100};
  g.timing = t;
  EXPECT_DOUBLE_EQ(g.rate().value(), 2e6 / 1e-4);
  OverlapPoint o;
  EXPECT_EQ(o.slowdown(), 0.0);
  o.alone = microseconds(100);
  o.beside = microseconds(110);
  EXPECT_DOUBLE_EQ(o.slowdown(), 1.1);
}

}  // namespace
}  // namespace cs::cal
