// Reading, checking and writing calibration profiles (docs/calibration-profile.md).
//
// Every object is read with expect_only, so an unknown key is an error naming its JSON path;
// numbers are range-checked (no negative sizes or times, ranks >= 1). Durations are written as
// seconds: d.count() / 1e12 is the double nearest the exact value, nlohmann writes doubles so
// that they read back to the same double, and the reader rounds seconds x 1e12 to the nearest
// picosecond, so any duration below 2^51 ps (about 37 minutes) comes back exactly.
// Derived values (spread, rates, bandwidths, slowdown) are written for people and checked for
// type on reading, but always recomputed from the timing.
#include "calibration/profile.h"

#include <ctime>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "core/atomic_file.h"
#include "core/collective_kind.h"
#include "core/config.h"
#include "core/errors.h"

namespace cs::cal {

// ---- derived values ------------------------------------------------------------------------

double Timing::spread() const {
  if (median.count() == 0) return 0;
  return static_cast<double>((p90 - p10).count()) / static_cast<double>(median.count());
}

namespace {
bool timed(const PointBase& p) {
  return p.status == PointStatus::kOk && p.timing && p.timing->median.count() > 0;
}
}  // namespace

FlopRate GemmPoint::rate() const {
  if (!timed(*this)) return FlopRate{0};
  return average_rate(shape.flops(), timing->median);
}

Bandwidth MemoryPoint::bandwidth() const {
  if (!timed(*this)) return Bandwidth{0};
  return average_rate(bytes, timing->median);
}

Bandwidth LinkPoint::bandwidth() const {
  if (!timed(*this)) return Bandwidth{0};
  return average_rate(bytes, timing->median);
}

double OverlapPoint::slowdown() const {
  if (alone.count() <= 0) return 0;
  return static_cast<double>(beside.count()) / static_cast<double>(alone.count());
}

Bandwidth CollectivePoint::algbw() const {
  if (!timed(*this)) return Bandwidth{0};
  return average_rate(bytes, timing->median);
}

Bandwidth CollectivePoint::busbw() const { return scale(algbw(), bus_factor(op, ranks)); }

double bus_factor(const std::string& op, int ranks) {
  const auto kind = parse_collective_op(op);
  if (ranks < 1) return 0;
  return kind ? busbw_factor(*kind, static_cast<std::size_t>(ranks)) : 1.0;
}

namespace {

using nlohmann::json;

// ---- closed vocabularies of the format -----------------------------------------------------

#define CS_OPS "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv"
#define CS_ALGORITHMS "auto", "ring", "tree", "nvls", "collnet_direct", "collnet_chain", "pat"
#define CS_PROTOCOLS "auto", "simple", "ll", "ll128"
#define CS_LINK_CLASSES "nvlink", "pcie", "network"
#define CS_GEMM_DTYPES "bf16", "fp16", "fp8", "tf32"

std::string choice(const ConfigNode& n, std::initializer_list<std::string_view> names) {
  return std::string(*(names.begin() + static_cast<std::ptrdiff_t>(n.as_choice(names))));
}

// ---- scalar readers ------------------------------------------------------------------------

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
constexpr int kMaxIntField = std::numeric_limits<int>::max();

int read_int(const ConfigNode& n, std::int64_t min, std::int64_t max = kMaxIntField) {
  return static_cast<int>(n.as_int(min, max));
}

Bytes read_bytes(const ConfigNode& n) { return Bytes{n.as_int(0, kMaxInt)}; }

double read_nonnegative(const ConfigNode& n) {
  const double v = n.as_number();
  if (!std::isfinite(v) || v < 0) n.fail_expected("a number >= 0");
  return v;
}

// Seconds -> Duration, rounded to the nearest picosecond.
Duration read_seconds(const ConfigNode& n) {
  const double s = n.as_number();
  if (!std::isfinite(s) || s < 0) n.fail_expected("a time in seconds >= 0");
  // Exact in picoseconds through the double: kMaxProfileSeconds keeps every value below 2^50 ps.
  if (s > kMaxProfileSeconds) n.fail_expected("a time in seconds up to 1000");
  return duration_from_seconds(s);
}

std::string read_nonempty(const ConfigNode& n) {
  std::string s = n.as_string();
  if (s.empty()) n.fail_expected("a non-empty string");
  return s;
}

// ---- scalar writers ------------------------------------------------------------------------

// The double nearest d in seconds (one correctly rounded division; see the file comment).
double seconds(Duration d) { return static_cast<double>(d.count()) / 1e12; }

double num(double v) {
  // JSON has no NaN or infinity (nlohmann would write null, which no reader takes back).
  if (!std::isfinite(v)) throw InternalError("calibration profile: a non-finite number to write");
  return v;
}

// ---- timing and point status ---------------------------------------------------------------

Timing parse_timing(const ConfigNode& n) {
  n.expect_only({"median_s", "p10_s", "p90_s", "min_s", "samples", "discarded_throttled", "spread"});
  Timing t;
  t.median = read_seconds(n.at("median_s"));
  t.p10 = read_seconds(n.at("p10_s"));
  t.p90 = read_seconds(n.at("p90_s"));
  t.min = read_seconds(n.at("min_s"));
  t.samples = read_int(n.at("samples"), 0);
  t.discarded_throttled = read_int(n.at("discarded_throttled"), 0);
  if (auto s = n.find("spread")) s->as_number();  // derived: recomputed
  return t;
}

json timing_json(const Timing& t) {
  return json{{"median_s", seconds(t.median)}, {"p10_s", seconds(t.p10)},
              {"p90_s", seconds(t.p90)},       {"min_s", seconds(t.min)},
              {"samples", t.samples},          {"discarded_throttled", t.discarded_throttled},
              {"spread", num(t.spread())}};
}

// status, error, timing: an ok point has timing and no error; a failed one an error and no timing.
void parse_base(const ConfigNode& n, PointBase& p) {
  p.status = n.at("status").as_choice({"ok", "failed"}) == 0 ? PointStatus::kOk : PointStatus::kFailed;
  const auto timing = n.find("timing");
  const auto error = n.find("error");
  if (p.status == PointStatus::kFailed) {
    if (!error) n.fail("a failed point must have \"error\" (what went wrong)");
    p.error = error->as_string();
    if (timing) timing->fail("a failed point has no timing");
  } else {
    if (error) error->fail("only a failed point has an error");
    if (!timing) n.fail("a point with status \"ok\" must have \"timing\"");
    p.timing = parse_timing(*timing);
  }
}

void write_base(json& j, const PointBase& p) {
  j["status"] = p.status == PointStatus::kOk ? "ok" : "failed";
  if (p.status == PointStatus::kFailed) j["error"] = p.error;
  if (p.timing && p.status == PointStatus::kOk) j["timing"] = timing_json(*p.timing);
}

bool ok(const PointBase& p) { return p.status == PointStatus::kOk && p.timing.has_value(); }

void read_derived(const ConfigNode& n, std::string_view key) {
  if (auto d = n.find(key)) read_nonnegative(*d);
}

// ---- points --------------------------------------------------------------------------------

GemmShape parse_shape(const ConfigNode& n) {
  GemmShape s;
  s.dtype = choice(n.at("dtype"), {CS_GEMM_DTYPES});
  s.m = n.at("m").as_int(1, kMaxInt);
  s.n = n.at("n").as_int(1, kMaxInt);
  s.k = n.at("k").as_int(1, kMaxInt);
  return s;
}

GemmPoint parse_gemm(const ConfigNode& n) {
  n.expect_only({"dtype", "m", "n", "k", "timing", "flops_per_s", "source", "algo", "status", "error"});
  GemmPoint p;
  parse_base(n, p);
  p.shape = parse_shape(n);
  p.source = choice(n.at("source"), {"model-shape", "grid", "wave-sweep", "mamf"});
  const ConfigNode algo = n.at("algo");
  if (!algo.is_object()) algo.fail_expected("an object");
  p.algo = algo.json();
  read_derived(n, "flops_per_s");
  return p;
}

json gemm_json(const GemmPoint& p) {
  json j{{"dtype", p.shape.dtype}, {"m", p.shape.m}, {"n", p.shape.n}, {"k", p.shape.k},
         {"source", p.source},     {"algo", p.algo}};
  write_base(j, p);
  if (ok(p)) j["flops_per_s"] = num(p.rate().value());
  return j;
}

MemoryPoint parse_memory(const ConfigNode& n) {
  n.expect_only({"kernel", "bytes", "timing", "bandwidth_bytes_per_s", "status", "error"});
  MemoryPoint p;
  parse_base(n, p);
  p.kernel = choice(n.at("kernel"), {"copy", "elementwise", "reduction", "norm"});
  p.bytes = read_bytes(n.at("bytes"));
  read_derived(n, "bandwidth_bytes_per_s");
  return p;
}

json memory_json(const MemoryPoint& p) {
  json j{{"kernel", p.kernel}, {"bytes", p.bytes.value()}};
  write_base(j, p);
  if (ok(p)) j["bandwidth_bytes_per_s"] = num(p.bandwidth().value());
  return j;
}

LaunchPoint parse_launch(const ConfigNode& n) {
  n.expect_only({"kernel", "timing", "status", "error"});
  LaunchPoint p;
  parse_base(n, p);
  p.kernel = choice(n.at("kernel"), {"empty"});
  return p;
}

json launch_json(const LaunchPoint& p) {
  json j{{"kernel", p.kernel}};
  write_base(j, p);
  return j;
}

OverlapPoint parse_overlap(const ConfigNode& n) {
  n.expect_only({"gemm", "collective", "alone_s", "beside_s", "slowdown"});
  OverlapPoint p;
  const ConfigNode g = n.at("gemm");
  g.expect_only({"dtype", "m", "n", "k"});
  p.gemm = parse_shape(g);
  const ConfigNode c = n.at("collective");
  c.expect_only({"op", "ranks", "bytes"});
  p.collective_op = choice(c.at("op"), {CS_OPS});
  p.collective_ranks = read_int(c.at("ranks"), 1);
  p.collective_bytes = read_bytes(c.at("bytes"));
  p.alone = read_seconds(n.at("alone_s"));
  p.beside = read_seconds(n.at("beside_s"));
  read_derived(n, "slowdown");
  return p;
}

json overlap_json(const OverlapPoint& p) {
  return json{{"gemm", {{"dtype", p.gemm.dtype}, {"m", p.gemm.m}, {"n", p.gemm.n}, {"k", p.gemm.k}}},
              {"collective", {{"op", p.collective_op}, {"ranks", p.collective_ranks},
                              {"bytes", p.collective_bytes.value()}}},
              {"alone_s", seconds(p.alone)},
              {"beside_s", seconds(p.beside)},
              {"slowdown", num(p.slowdown())}};
}

LinkPoint parse_link(const ConfigNode& n) {
  n.expect_only({"kind", "src", "dst", "bytes", "timing", "bandwidth_bytes_per_s", "link_class",
                 "status", "error"});
  LinkPoint p;
  parse_base(n, p);
  p.kind = choice(n.at("kind"), {"d2d", "h2d", "d2h"});
  p.src = read_int(n.at("src"), -1);
  p.dst = read_int(n.at("dst"), -1);
  p.bytes = read_bytes(n.at("bytes"));
  p.link_class = choice(n.at("link_class"), {CS_LINK_CLASSES});
  read_derived(n, "bandwidth_bytes_per_s");
  return p;
}

json link_json(const LinkPoint& p) {
  json j{{"kind", p.kind}, {"src", p.src}, {"dst", p.dst}, {"bytes", p.bytes.value()},
         {"link_class", p.link_class}};
  write_base(j, p);
  if (ok(p)) j["bandwidth_bytes_per_s"] = num(p.bandwidth().value());
  return j;
}

CollectivePoint parse_collective(const ConfigNode& n) {
  n.expect_only({"op", "ranks", "nodes", "bytes", "dtype", "timing", "algbw_bytes_per_s",
                 "busbw_bytes_per_s", "link_class", "algorithm", "protocol", "nccl_choice",
                 "status", "error"});
  CollectivePoint p;
  parse_base(n, p);
  p.op = choice(n.at("op"), {CS_OPS});
  p.ranks = read_int(n.at("ranks"), 1);
  p.nodes = read_int(n.at("nodes"), 1);
  p.bytes = read_bytes(n.at("bytes"));
  p.dtype = read_nonempty(n.at("dtype"));
  p.link_class = choice(n.at("link_class"), {CS_LINK_CLASSES});
  p.algorithm = choice(n.at("algorithm"), {CS_ALGORITHMS});
  p.protocol = choice(n.at("protocol"), {CS_PROTOCOLS});
  const ConfigNode c = n.at("nccl_choice");
  c.expect_only({"algorithm", "protocol", "channels"});
  p.nccl_choice.algorithm = c.at("algorithm").as_string();
  p.nccl_choice.protocol = c.at("protocol").as_string();
  p.nccl_choice.channels = read_int(c.at("channels"), 0);
  read_derived(n, "algbw_bytes_per_s");
  read_derived(n, "busbw_bytes_per_s");
  return p;
}

json collective_json(const CollectivePoint& p) {
  json j{{"op", p.op},
         {"ranks", p.ranks},
         {"nodes", p.nodes},
         {"bytes", p.bytes.value()},
         {"dtype", p.dtype},
         {"link_class", p.link_class},
         {"algorithm", p.algorithm},
         {"protocol", p.protocol},
         {"nccl_choice", {{"algorithm", p.nccl_choice.algorithm},
                          {"protocol", p.nccl_choice.protocol},
                          {"channels", p.nccl_choice.channels}}}};
  write_base(j, p);
  if (ok(p)) {
    j["algbw_bytes_per_s"] = num(p.algbw().value());
    j["busbw_bytes_per_s"] = num(p.busbw().value());
  }
  return j;
}

template <class T, class Parse>
std::vector<T> parse_array(const ConfigNode& parent, std::string_view key, Parse parse) {
  std::vector<T> out;
  const auto a = parent.find(key);
  if (!a) return out;  // an absent list is an empty one
  for (const ConfigNode& e : a->elements()) out.push_back(parse(e));
  return out;
}

template <class T, class Write>
json write_array(const std::vector<T>& v, Write write) {
  json a = json::array();
  for (const T& e : v) a.push_back(write(e));
  return a;
}

// ---- provenance, inventory, settings -------------------------------------------------------

Provenance parse_provenance(const ConfigNode& n) {
  n.expect_only({"kind", "tool", "command", "created", "host", "complete", "refit", "notes"});
  Provenance p;
  p.kind = choice(n.at("kind"), {"measured", "synthetic"});
  p.tool = n.at("tool").as_string();
  p.command = n.at("command").as_string();
  p.created = n.at("created").as_string();
  p.host = n.at("host").as_string();
  p.complete = n.at("complete").as_bool();
  if (auto r = n.find("refit")) p.refit = r->as_string();
  p.notes = n.at("notes").as_string();
  return p;
}

json provenance_json(const Provenance& p) {
  json j{{"kind", p.kind}, {"tool", p.tool}, {"command", p.command}, {"created", p.created},
         {"host", p.host}, {"complete", p.complete}, {"notes", p.notes}};
  if (!p.refit.empty()) j["refit"] = p.refit;
  return j;
}

GpuInventory parse_gpu(const ConfigNode& n) {
  n.expect_only({"index", "node", "name", "uuid", "sm_count", "compute_capability", "memory_bytes",
                 "l2_bytes", "sm_clock_mhz", "memory_clock_mhz", "power_limit_w", "catalog_gpu"});
  GpuInventory g;
  g.index = read_int(n.at("index"), 0);
  g.node = read_int(n.at("node"), 0);
  g.name = n.at("name").as_string();
  g.uuid = n.at("uuid").as_string();
  g.sm_count = read_int(n.at("sm_count"), 0);
  g.compute_capability = n.at("compute_capability").as_string();
  g.memory = read_bytes(n.at("memory_bytes"));
  g.l2 = read_bytes(n.at("l2_bytes"));
  g.sm_clock_mhz = read_int(n.at("sm_clock_mhz"), 0);
  g.memory_clock_mhz = read_int(n.at("memory_clock_mhz"), 0);
  g.power_limit_w = read_nonnegative(n.at("power_limit_w"));
  g.catalog_gpu = n.at("catalog_gpu").as_string();
  return g;
}

json gpu_json(const GpuInventory& g) {
  return json{{"index", g.index},
              {"node", g.node},
              {"name", g.name},
              {"uuid", g.uuid},
              {"sm_count", g.sm_count},
              {"compute_capability", g.compute_capability},
              {"memory_bytes", g.memory.value()},
              {"l2_bytes", g.l2.value()},
              {"sm_clock_mhz", g.sm_clock_mhz},
              {"memory_clock_mhz", g.memory_clock_mhz},
              {"power_limit_w", num(g.power_limit_w)},
              {"catalog_gpu", g.catalog_gpu}};
}

// An n x n matrix (n = the number of GPUs) of `read` values.
template <class T, class Read>
std::vector<std::vector<T>> parse_matrix(const ConfigNode& n, std::size_t size, Read read) {
  if (n.size() != size) n.fail_expected("an array of " + std::to_string(size) + " rows (one per GPU)");
  std::vector<std::vector<T>> out;
  for (const ConfigNode& row : n.elements()) {
    if (row.size() != size) row.fail_expected("a row of " + std::to_string(size) + " values (one per GPU)");
    std::vector<T> r;
    for (const ConfigNode& v : row.elements()) r.push_back(read(v));
    out.push_back(std::move(r));
  }
  return out;
}

Inventory parse_inventory(const ConfigNode& n) {
  n.expect_only({"driver_version", "cuda_runtime_version", "cublas_version", "nccl_version", "nodes",
                 "gpus", "peer_access", "nvlink", "environment"});
  Inventory inv;
  inv.driver_version = n.at("driver_version").as_string();
  inv.cuda_runtime_version = n.at("cuda_runtime_version").as_string();
  inv.cublas_version = n.at("cublas_version").as_string();
  inv.nccl_version = n.at("nccl_version").as_string();
  inv.nodes = read_int(n.at("nodes"), 1);
  for (const ConfigNode& g : n.at("gpus").elements()) inv.gpus.push_back(parse_gpu(g));
  const std::size_t count = inv.gpus.size();
  inv.peer_access = parse_matrix<bool>(n.at("peer_access"), count, [](const ConfigNode& v) { return v.as_bool(); });
  inv.nvlink = parse_matrix<int>(n.at("nvlink"), count, [](const ConfigNode& v) { return read_int(v, 0); });
  for (const auto& [key, value] : n.at("environment").members()) inv.environment[key] = value.as_string();
  return inv;
}

json inventory_json(const Inventory& inv) {
  json peer = json::array();
  for (const auto& row : inv.peer_access) {
    json r = json::array();
    for (bool b : row) r.push_back(b);
    peer.push_back(std::move(r));
  }
  return json{{"driver_version", inv.driver_version},
              {"cuda_runtime_version", inv.cuda_runtime_version},
              {"cublas_version", inv.cublas_version},
              {"nccl_version", inv.nccl_version},
              {"nodes", inv.nodes},
              {"gpus", write_array(inv.gpus, gpu_json)},
              {"peer_access", std::move(peer)},
              {"nvlink", inv.nvlink},
              {"environment", inv.environment}};
}

Settings parse_settings(const ConfigNode& n) {
  n.expect_only({"quick", "min_samples", "target_spread", "time_limit_s", "l2_flush_bytes", "warmup_s"});
  Settings s;
  s.quick = n.at("quick").as_bool();
  s.min_samples = read_int(n.at("min_samples"), 10);
  s.target_spread = read_nonnegative(n.at("target_spread"));
  s.time_limit = read_seconds(n.at("time_limit_s"));
  s.l2_flush = read_bytes(n.at("l2_flush_bytes"));
  s.warmup = read_seconds(n.at("warmup_s"));
  return s;
}

json settings_json(const Settings& s) {
  return json{{"quick", s.quick},
              {"min_samples", s.min_samples},
              {"target_spread", num(s.target_spread)},
              {"time_limit_s", seconds(s.time_limit)},
              {"l2_flush_bytes", s.l2_flush.value()},
              {"warmup_s", seconds(s.warmup)}};
}

// ---- models --------------------------------------------------------------------------------

// [lo, hi]: two numbers, lo <= hi.
std::pair<double, double> read_interval(const ConfigNode& n) {
  if (!n.is_array() || n.size() != 2) n.fail_expected("an interval [low, high]");
  const double lo = n.at(std::size_t{0}).as_number(), hi = n.at(std::size_t{1}).as_number();
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo < 0 || hi < lo) {
    n.fail_expected("an interval [low, high] with 0 <= low <= high");
  }
  return {lo, hi};
}

CollectiveFit parse_collective_fit(const ConfigNode& n) {
  n.expect_only({"op", "algorithm", "protocol", "ranks", "link_class", "min_bytes", "max_bytes",
                 "alpha_s", "beta_s_per_byte", "bus_bandwidth_bytes_per_s", "nominal_bytes_per_s",
                 "link_efficiency", "r2", "mape", "loo_mape", "alpha_ci95_s", "beta_ci95_s_per_byte",
                 "points"});
  CollectiveFit f;
  f.op = choice(n.at("op"), {CS_OPS});
  f.algorithm = choice(n.at("algorithm"), {CS_ALGORITHMS});
  f.protocol = choice(n.at("protocol"), {CS_PROTOCOLS});
  f.ranks = read_int(n.at("ranks"), 1);
  f.link_class = choice(n.at("link_class"), {CS_LINK_CLASSES});
  f.min_bytes = read_bytes(n.at("min_bytes"));
  f.max_bytes = read_bytes(n.at("max_bytes"));
  if (f.max_bytes < f.min_bytes) n.at("max_bytes").fail_expected("max_bytes >= min_bytes");
  f.alpha = read_seconds(n.at("alpha_s"));
  f.beta_s_per_byte = read_nonnegative(n.at("beta_s_per_byte"));
  f.bus_bandwidth = Bandwidth{read_nonnegative(n.at("bus_bandwidth_bytes_per_s"))};
  f.nominal = Bandwidth{read_nonnegative(n.at("nominal_bytes_per_s"))};
  f.link_efficiency = read_nonnegative(n.at("link_efficiency"));
  f.r2 = n.at("r2").as_number();  // may be negative for a poor constrained fit
  f.mape = read_nonnegative(n.at("mape"));
  f.loo_mape = read_nonnegative(n.at("loo_mape"));
  const auto a = n.at("alpha_ci95_s");
  const auto [alo, ahi] = read_interval(a);
  if (alo > kMaxProfileSeconds || ahi > kMaxProfileSeconds) a.fail_expected("times in seconds up to 1000");
  f.alpha_ci95_lo = duration_from_seconds(alo);
  f.alpha_ci95_hi = duration_from_seconds(ahi);
  std::tie(f.beta_ci95_lo, f.beta_ci95_hi) = read_interval(n.at("beta_ci95_s_per_byte"));
  f.points = read_int(n.at("points"), 0);
  return f;
}

json collective_fit_json(const CollectiveFit& f) {
  return json{{"op", f.op},
              {"algorithm", f.algorithm},
              {"protocol", f.protocol},
              {"ranks", f.ranks},
              {"link_class", f.link_class},
              {"min_bytes", f.min_bytes.value()},
              {"max_bytes", f.max_bytes.value()},
              {"alpha_s", seconds(f.alpha)},
              {"beta_s_per_byte", num(f.beta_s_per_byte)},
              {"bus_bandwidth_bytes_per_s", num(f.bus_bandwidth.value())},
              {"nominal_bytes_per_s", num(f.nominal.value())},
              {"link_efficiency", num(f.link_efficiency)},
              {"r2", num(f.r2)},
              {"mape", num(f.mape)},
              {"loo_mape", num(f.loo_mape)},
              {"alpha_ci95_s", {seconds(f.alpha_ci95_lo), seconds(f.alpha_ci95_hi)}},
              {"beta_ci95_s_per_byte", {num(f.beta_ci95_lo), num(f.beta_ci95_hi)}},
              {"points", f.points}};
}

GemmModel parse_gemm_model(const ConfigNode& n) {
  n.expect_only({"dtype", "best_flops_per_s", "curve", "table"});
  GemmModel g;
  g.dtype = choice(n.at("dtype"), {CS_GEMM_DTYPES});
  g.best = FlopRate{read_nonnegative(n.at("best_flops_per_s"))};
  const ConfigNode c = n.at("curve");
  c.expect_only({"t0_s", "rate_flops_per_s"});
  g.t0 = read_seconds(c.at("t0_s"));
  g.rate = FlopRate{read_nonnegative(c.at("rate_flops_per_s"))};
  for (const ConfigNode& e : n.at("table").elements()) {
    e.expect_only({"m", "n", "k", "flops_per_s"});
    g.table.push_back(GemmTableEntry{e.at("m").as_int(1, kMaxInt), e.at("n").as_int(1, kMaxInt),
                                     e.at("k").as_int(1, kMaxInt),
                                     FlopRate{read_nonnegative(e.at("flops_per_s"))}});
  }
  return g;
}

json gemm_model_json(const GemmModel& g) {
  json table = json::array();
  for (const GemmTableEntry& e : g.table) {
    table.push_back({{"m", e.m}, {"n", e.n}, {"k", e.k}, {"flops_per_s", num(e.rate.value())}});
  }
  return json{{"dtype", g.dtype},
              {"best_flops_per_s", num(g.best.value())},
              {"curve", {{"t0_s", seconds(g.t0)}, {"rate_flops_per_s", num(g.rate.value())}}},
              {"table", std::move(table)}};
}

MemoryModel parse_memory_model(const ConfigNode& n) {
  n.expect_only({"t0_s", "bandwidth_bytes_per_s", "min_bytes", "max_bytes", "r2", "mape"});
  MemoryModel m;
  m.t0 = read_seconds(n.at("t0_s"));
  m.bandwidth = Bandwidth{read_nonnegative(n.at("bandwidth_bytes_per_s"))};
  m.min_bytes = read_bytes(n.at("min_bytes"));
  m.max_bytes = read_bytes(n.at("max_bytes"));
  if (m.max_bytes < m.min_bytes) n.at("max_bytes").fail_expected("max_bytes >= min_bytes");
  m.r2 = n.at("r2").as_number();
  m.mape = read_nonnegative(n.at("mape"));
  return m;
}

json memory_model_json(const MemoryModel& m) {
  return json{{"t0_s", seconds(m.t0)},
              {"bandwidth_bytes_per_s", num(m.bandwidth.value())},
              {"min_bytes", m.min_bytes.value()},
              {"max_bytes", m.max_bytes.value()},
              {"r2", num(m.r2)},
              {"mape", num(m.mape)}};
}

NetworkClassModel parse_network_model(const ConfigNode& n) {
  n.expect_only({"link_class", "link_efficiency", "step_latency_s", "from"});
  NetworkClassModel m;
  m.link_class = choice(n.at("link_class"), {CS_LINK_CLASSES});
  m.link_efficiency = read_nonnegative(n.at("link_efficiency"));
  m.step_latency = read_seconds(n.at("step_latency_s"));
  m.from = n.at("from").as_string();
  return m;
}

json network_model_json(const NetworkClassModel& m) {
  return json{{"link_class", m.link_class},
              {"link_efficiency", num(m.link_efficiency)},
              {"step_latency_s", seconds(m.step_latency)},
              {"from", m.from}};
}

Models parse_models(const ConfigNode& n) {
  n.expect_only({"collectives", "gemm", "memory", "launch_overhead_s", "overlap_slowdown", "network"});
  Models m;
  m.collectives = parse_array<CollectiveFit>(n, "collectives", parse_collective_fit);
  m.gemm = parse_array<GemmModel>(n, "gemm", parse_gemm_model);
  if (auto mem = n.find("memory")) m.memory = parse_memory_model(*mem);
  if (auto l = n.find("launch_overhead_s")) m.launch_overhead = read_seconds(*l);
  if (auto o = n.find("overlap_slowdown")) m.overlap_slowdown = read_nonnegative(*o);
  m.network = parse_array<NetworkClassModel>(n, "network", parse_network_model);
  return m;
}

json models_json(const Models& m) {
  json j{{"collectives", write_array(m.collectives, collective_fit_json)},
         {"gemm", write_array(m.gemm, gemm_model_json)},
         {"network", write_array(m.network, network_model_json)}};
  if (m.memory) j["memory"] = memory_model_json(*m.memory);
  if (m.launch_overhead) j["launch_overhead_s"] = seconds(*m.launch_overhead);
  if (m.overlap_slowdown) j["overlap_slowdown"] = num(*m.overlap_slowdown);
  return j;
}

constexpr const char* kSchemaName = "clustersim-profile";

}  // namespace

// ---- the document --------------------------------------------------------------------------

Profile parse_profile(const nlohmann::json& doc, const std::string& file_name) {
  const ConfigNode root(&doc, std::make_shared<const std::string>(file_name), "");
  if (!root.is_object()) root.fail_expected("a calibration profile (a JSON object)");
  // The schema first: a newer file may have keys this reader does not know, and the version is
  // the useful message then.
  const ConfigNode schema = root.at("schema");
  if (!schema.is_string() || schema.as_string() != kSchemaName) {
    schema.fail_expected(std::string("\"") + kSchemaName + "\"");
  }
  const ConfigNode version = root.at("schema_version");
  const std::int64_t v = version.as_int();
  if (v != kProfileSchemaVersion) {
    version.fail("profile schema version " + std::to_string(v) +
                 " is not supported by this clustersim (it reads version " +
                 std::to_string(kProfileSchemaVersion) + ")");
  }
  root.expect_only({"schema", "schema_version", "provenance", "inventory", "settings", "points", "models"});

  Profile p;
  p.schema_version = static_cast<int>(v);
  p.provenance = parse_provenance(root.at("provenance"));
  p.inventory = parse_inventory(root.at("inventory"));
  p.settings = parse_settings(root.at("settings"));
  const ConfigNode points = root.at("points");
  points.expect_only({"gemm", "memory", "launch", "overlap", "links", "collectives"});
  p.gemm = parse_array<GemmPoint>(points, "gemm", parse_gemm);
  p.memory = parse_array<MemoryPoint>(points, "memory", parse_memory);
  p.launch = parse_array<LaunchPoint>(points, "launch", parse_launch);
  p.overlap = parse_array<OverlapPoint>(points, "overlap", parse_overlap);
  p.links = parse_array<LinkPoint>(points, "links", parse_link);
  p.collectives = parse_array<CollectivePoint>(points, "collectives", parse_collective);
  if (auto m = root.find("models")) p.models = parse_models(*m);
  return p;
}

Profile load_profile(const std::string& path) {
  const ConfigDocument doc = ConfigDocument::load(path);
  return parse_profile(doc.json(), path);
}

nlohmann::json to_json(const Profile& p) {
  // nlohmann::json keeps object keys sorted, so the text depends only on the values.
  return json{{"schema", kSchemaName},
              {"schema_version", kProfileSchemaVersion},
              {"provenance", provenance_json(p.provenance)},
              {"inventory", inventory_json(p.inventory)},
              {"settings", settings_json(p.settings)},
              {"points", {{"gemm", write_array(p.gemm, gemm_json)},
                          {"memory", write_array(p.memory, memory_json)},
                          {"launch", write_array(p.launch, launch_json)},
                          {"overlap", write_array(p.overlap, overlap_json)},
                          {"links", write_array(p.links, link_json)},
                          {"collectives", write_array(p.collectives, collective_json)}}},
              {"models", models_json(p.models)}};
}

void save_profile(const Profile& p, const std::string& path) {
  write_file_atomically(path, to_json(p).dump(2) + "\n");
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cs::cal
