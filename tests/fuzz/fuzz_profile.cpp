// Fuzzes the calibration profile reader and everything that consumes what it accepts: the fits
// (fit_models), the query model (ProfileModel) and the writer.
//
// Two modes, chosen by the first byte:
//   text     the input is the file's text (mutations of tests/fuzz/profile_corpus);
//   points   the input is read as numbers that build a profile of well-formed but extreme points
//            (sizes from 1 B to 2^62, times from 1 ps to 1000 s, shapes from 1 to 2^20, repeated
//            sizes, single points), so the fits see what mutated text almost never reaches.
//
// Contract under test: a profile file that is not valid only ever raises the project's input
// errors (ConfigError naming a path). One that is valid round-trips through to_json exactly, and
// refitting it and querying the result neither crashes nor raises anything else. Any other
// exception, a crash or a sanitizer report is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "calibration/fit.h"
#include "calibration/profile.h"
#include "calibration/profile_model.h"
#include "core/errors.h"

namespace {

[[noreturn]] void finding(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz_profile finding: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void exercise(const cs::cal::Profile& parsed) {
  // The writer's text reads back to the same text.
  const std::string text = cs::cal::to_json(parsed).dump();
  cs::cal::Profile again;
  try {
    again = cs::cal::parse_profile(nlohmann::json::parse(text), "round-trip.json");
  } catch (const std::exception& e) {
    finding("a written profile does not read back", e.what());
  }
  if (cs::cal::to_json(again).dump() != text) finding("the round trip changed the profile", text.substr(0, 200));

  // Refit (nominal bandwidths known for every class) and query every model.
  cs::cal::Profile p = parsed;
  cs::cal::NominalBandwidths nominal;
  nominal.per_class = {{"nvlink", cs::Bandwidth{4.5e11}}, {"pcie", cs::Bandwidth{6.4e10}}, {"network", cs::Bandwidth{5e10}}};
  p.models = cs::cal::fit_models(p, nominal);
  const cs::cal::ProfileModel pm(p);
  for (const auto& g : p.gemm) {
    if (pm.has_gemm(g.shape.dtype)) {
      (void)pm.gemm(g.shape);
      (void)pm.gemm({g.shape.dtype, g.shape.m + 1, g.shape.n, g.shape.k});
      (void)pm.gemm_flops(g.shape.dtype, g.shape.flops());
    }
  }
  for (const auto& m : p.memory) (void)pm.memory(m.bytes);
  for (const auto& c : p.collectives) (void)pm.collective(c.op, c.algorithm, c.protocol, c.ranks, c.link_class, c.bytes);
  for (const auto& n : p.models.network) (void)pm.network(n.link_class);
}

// Reads the next bytes as an unsigned number (0 when exhausted).
struct Bytes {
  const std::uint8_t* p;
  std::size_t n;
  std::uint64_t take(int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes && n > 0; ++i, ++p, --n) v = (v << 8) | *p;
    return v;
  }
};

// 1 ps .. 1000 s, the range a profile holds.
cs::cal::Timing timing_of(std::uint64_t raw) {
  const std::uint64_t ps = 1 + raw % 1'000'000'000'000'000ULL;
  cs::cal::Timing t;
  t.median = t.p10 = t.p90 = t.min = cs::Duration{static_cast<std::int64_t>(ps)};
  t.samples = 10;
  return t;
}

cs::cal::Profile points_profile(Bytes in) {
  static const char* kOps[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv"};
  static const char* kProtocols[] = {"simple", "ll", "ll128", "auto"};
  cs::cal::Profile p;
  p.inventory.gpus.push_back(cs::cal::GpuInventory{});
  p.inventory.peer_access = {{false}};
  p.inventory.nvlink = {{0}};
  while (in.n > 0) {
    const auto kind = in.take(1) % 3;
    if (kind == 0) {
      cs::cal::CollectivePoint c;
      c.op = kOps[in.take(1) % 7];
      c.ranks = 2 + static_cast<int>(in.take(1) % 7);
      c.protocol = kProtocols[in.take(1) % 4];
      c.nccl_choice.algorithm = (in.take(1) & 1) ? "ring" : "tree";
      c.nccl_choice.protocol = c.protocol;
      c.bytes = cs::Bytes{static_cast<std::int64_t>(1 + (in.take(8) >> 2))};
      c.timing = timing_of(1 + (in.take(7) >> 1));
      p.collectives.push_back(c);
    } else if (kind == 1) {
      cs::cal::GemmPoint g;
      g.shape = {"bf16", static_cast<std::int64_t>(1 + in.take(3) % (1 << 20)), static_cast<std::int64_t>(1 + in.take(3) % (1 << 20)),
                 static_cast<std::int64_t>(1 + in.take(3) % (1 << 20))};
      g.timing = timing_of(1 + (in.take(7) >> 1));
      p.gemm.push_back(g);
    } else {
      cs::cal::MemoryPoint m;
      m.bytes = cs::Bytes{static_cast<std::int64_t>(1 + (in.take(8) >> 2))};
      m.timing = timing_of(1 + (in.take(7) >> 1));
      p.memory.push_back(m);
    }
  }
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 0 && (data[0] & 1)) {
    try {
      exercise(points_profile(Bytes{data + 1, size - 1}));
    } catch (const cs::InputError&) {
    } catch (const std::exception& e) {
      finding("fitting or querying a profile of extreme points raised", e.what());
    }
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;  // not JSON: the file reader's own error, tested elsewhere
  }
  cs::cal::Profile p;
  try {
    p = cs::cal::parse_profile(doc, "fuzz.json");
  } catch (const cs::InputError&) {
    return 0;  // rejected with a path: the contract
  } catch (const std::exception& e) {
    finding("the reader raised something other than an input error", e.what());
  }
  try {
    exercise(p);
  } catch (const cs::InputError& e) {
    // A query for a model the profile lacks is an input error by design (ProfileModel::gemm).
    (void)e;
  } catch (const std::exception& e) {
    finding("fitting or querying an accepted profile raised", e.what());
  }
  return 0;
}
