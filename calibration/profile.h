// A calibration profile: what clustersim-calibrate measured on a machine and the cost models
// fitted to it (docs/calibration-profile.md is the file format; this is its in-memory form).
//
//   Profile p = load_profile("h200.json");     // ConfigError naming the JSON path on bad input
//   p.models = fit_models(p, nominal);          // calibration/fit.h
//   save_profile(p, "h200.json");               // all or nothing: temporary file, then rename
//
// Times are Durations (picoseconds), sizes Bytes, rates Bandwidth / FlopRate; the JSON holds the
// same values in SI units (seconds, bytes, bytes/s, FLOP/s).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/units.h"
#include "hardware/link_class.h"

namespace cs::cal {

inline constexpr int kProfileSchemaVersion = 1;
// The longest time a profile holds (a sample, a fitted latency, a setting): 1000 s. Times are
// written as seconds in a double; below 2^50 ps (1126 s) they read back to the same picosecond.
inline constexpr double kMaxProfileSeconds = 1000;

enum class PointStatus : std::uint8_t { kOk, kFailed };
inline constexpr EnumName<PointStatus> kPointStatusNames[] = {{PointStatus::kOk, "ok"},
                                                              {PointStatus::kFailed, "failed"}};

// The closed vocabularies of the format's string fields: the reader takes these names only, and
// its messages list them in this order. Collective ops are core's kCollectiveOpNames
// (core/collective_kind.h), link classes the hardware's kLinkClassNames (hardware/link_class.h).
inline constexpr std::string_view kGemmDtypeNames[] = {"bf16", "fp16", "fp8", "tf32"};
inline constexpr std::string_view kGemmSourceNames[] = {"model-shape", "grid", "wave-sweep", "mamf"};
inline constexpr std::string_view kMemoryKernelNames[] = {"copy", "elementwise", "reduction", "norm"};
inline constexpr std::string_view kLaunchKernelNames[] = {"empty"};
inline constexpr std::string_view kLinkKindNames[] = {"d2d", "h2d", "d2h"};
inline constexpr std::string_view kNcclAlgorithmNames[] = {"auto", "ring", "tree", "nvls", "collnet_direct",
                                                           "collnet_chain", "pat"};
inline constexpr std::string_view kNcclProtocolNames[] = {"auto", "simple", "ll", "ll128"};
inline constexpr std::string_view kProvenanceKindNames[] = {"measured", "synthetic"};

// Statistics of the kept samples of one measured point.
struct Timing {
  Duration median{0}, p10{0}, p90{0}, min{0};
  int samples = 0;              // kept
  int discarded_throttled = 0;  // dropped: SM clock below 95% of its value at the point's start
  double spread() const;        // (p90 - p10) / median; 0 when median is 0
};

// Fields every measured point has.
struct PointBase {
  PointStatus status = PointStatus::kOk;
  std::string error;             // when failed
  std::optional<Timing> timing;  // absent when failed
};

struct GemmShape {
  std::string dtype = "bf16";  // kGemmDtypeNames
  std::int64_t m = 0, n = 0, k = 0;
  Flops flops() const { return Flops{2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)}; }
};

struct GemmPoint : PointBase {
  GemmShape shape;
  std::string source = "grid";  // kGemmSourceNames
  nlohmann::json algo = nlohmann::json::object();  // cuBLASLt heuristic: tile, stages, split-K, waves
  FlopRate rate() const;        // 2mnk / median (0 when failed)
};

struct MemoryPoint : PointBase {
  std::string kernel = "copy";  // kMemoryKernelNames
  Bytes bytes{0};               // read + written
  Bandwidth bandwidth() const;
};

struct LaunchPoint : PointBase {
  std::string kernel = "empty";  // kLaunchKernelNames
};

struct OverlapPoint {
  GemmShape gemm;
  std::string collective_op = "all_reduce";  // kCollectiveOpNames
  int collective_ranks = 0;
  Bytes collective_bytes{0};
  Duration alone{0}, beside{0};
  double slowdown() const;  // beside / alone
};

struct LinkPoint : PointBase {
  std::string kind = "d2d";  // kLinkKindNames
  int src = 0, dst = 0;      // GPU index; -1 for the host
  Bytes bytes{0};
  std::string link_class = "nvlink";  // hw::kLinkClassNames
  Bandwidth bandwidth() const;
};

struct NcclChoice {
  std::string algorithm, protocol;
  int channels = 0;
};

struct CollectivePoint : PointBase {
  std::string op = "all_reduce";  // kCollectiveOpNames
  int ranks = 0;
  int nodes = 1;
  Bytes bytes{0};                 // nccl-tests' size (docs/calibration-profile.md)
  std::string dtype = "bf16";
  std::string link_class = "nvlink";  // hw::kLinkClassNames
  std::string algorithm = "auto";     // kNcclAlgorithmNames
  std::string protocol = "auto";      // kNcclProtocolNames
  NcclChoice nccl_choice;
  Bandwidth algbw() const;         // bytes / median
  Bandwidth busbw() const;         // algbw x bus factor
};

// nccl-tests' bus factor (core/collective_kind.h, busbw_factor) of an op named as profiles name
// it; 0 for fewer than one rank, 1 for a name that is not a collective.
double bus_factor(const std::string& op, int ranks);

struct GpuInventory {
  int index = 0;
  int node = 0;
  std::string name, uuid;
  int sm_count = 0;
  std::string compute_capability;
  Bytes memory{0};
  Bytes l2{0};
  int sm_clock_mhz = 0;
  int memory_clock_mhz = 0;
  double power_limit_w = 0;
  std::string catalog_gpu;  // the hardware catalog's name, "" when not in it
};

struct Inventory {
  std::string driver_version, cuda_runtime_version, cublas_version, nccl_version;
  int nodes = 1;
  std::vector<GpuInventory> gpus;
  std::vector<std::vector<bool>> peer_access;  // n x n
  std::vector<std::vector<int>> nvlink;        // n x n NVLink link counts
  std::map<std::string, std::string> environment;  // NCCL_* variables
};

struct Provenance {
  std::string kind = "measured";  // kProvenanceKindNames
  std::string tool;
  std::string command;
  std::string created;  // UTC, ISO 8601
  std::string host;
  bool complete = true;
  std::string refit;  // UTC time of the last --refit, "" if none
  std::string notes;
};

struct Settings {
  bool quick = false;
  int min_samples = 10;
  double target_spread = 0.005;
  Duration time_limit{0};  // per point
  Bytes l2_flush{0};
  Duration warmup{0};
};

// ---- fitted models ---------------------------------------------------------------------------

// t(S) = alpha + beta S over [min_bytes, max_bytes] for one (op, algorithm, protocol, ranks, class).
struct CollectiveFit {
  std::string op, algorithm, protocol, link_class;  // from the vocabularies above
  int ranks = 0;
  Bytes min_bytes{0}, max_bytes{0};
  Duration alpha{0};
  double beta_s_per_byte = 0;  // seconds per byte (a Bandwidth's inverse; kept exact)
  Bandwidth bus_bandwidth{0};  // bus factor / beta
  Bandwidth nominal{0};        // the class's per-GPU nominal bandwidth (0 when unknown)
  double link_efficiency = 0;  // bus_bandwidth / nominal (0 when nominal unknown)
  double r2 = 0, mape = 0, loo_mape = 0;
  Duration alpha_ci95_lo{0}, alpha_ci95_hi{0};
  double beta_ci95_lo = 0, beta_ci95_hi = 0;
  int points = 0;
};

struct GemmTableEntry {
  std::int64_t m = 0, n = 0, k = 0;
  FlopRate rate{0};
};

struct GemmModel {
  std::string dtype;  // kGemmDtypeNames
  FlopRate best{0};   // best achievable rate (max over the points of this dtype)
  Duration t0{0};     // fallback curve: t(F) = t0 + F / rate
  FlopRate rate{0};   // <= best
  std::vector<GemmTableEntry> table;  // every measured shape, sorted by (m, n, k)
};

struct MemoryModel {
  Duration t0{0};
  Bandwidth bandwidth{0};
  Bytes min_bytes{0}, max_bytes{0};  // the measured range
  double r2 = 0, mape = 0;
};

// What the simulator's network model takes, per link class (fit.h, fit_models: the collective
// model's ring all-reduce inverted).
struct NetworkClassModel {
  std::string link_class;  // hw::kLinkClassNames
  double link_efficiency = 0;
  Duration step_latency{0};  // Simple protocol, one ring step, the wires' latency not included
  std::string from;          // "all_reduce ring simple at 2, 4, 8 ranks, ll at 2, 4, 8 ranks"
  std::optional<Duration> ll_step_latency;  // the same with LL, when LL rings were measured
  // The wire latency of one ring step's path (the catalog's), taken out of the fitted per-step
  // latency because the simulator adds its path's latency itself; 0 in profiles fitted before
  // the inversion was exact (their step latency holds everything).
  Duration path_latency{0};
  int points = 0;   // ring all-reduce points of the class the fit used (0: not recorded)
  double mape = 0;  // the fit's mean |relative error| over them
};

// The fixed latency of one collective (kernel launch and NCCL's setup), once per collective: the
// collective model's launch latency (fit.h, fit_models).
inline constexpr std::string_view kLaunchStatusNames[] = {"fitted", "assumed"};
struct CollectiveLaunchModel {
  Duration latency{0};
  std::string status = "fitted";  // kLaunchStatusNames: "assumed" when the points cannot tell it
  std::string from;               // what it was fitted from, or what was assumed and why
};

struct Models {
  std::vector<CollectiveFit> collectives;
  std::vector<GemmModel> gemm;
  std::optional<MemoryModel> memory;
  std::optional<Duration> launch_overhead;  // of a compute kernel
  std::optional<double> overlap_slowdown;
  std::vector<NetworkClassModel> network;
  std::optional<CollectiveLaunchModel> collective_launch;  // absent in profiles fitted before it
};

struct Profile {
  int schema_version = kProfileSchemaVersion;
  Provenance provenance;
  Inventory inventory;
  Settings settings;
  std::vector<GemmPoint> gemm;
  std::vector<MemoryPoint> memory;
  std::vector<LaunchPoint> launch;
  std::vector<OverlapPoint> overlap;
  std::vector<LinkPoint> links;
  std::vector<CollectivePoint> collectives;
  Models models;
};

// Reads and checks a profile. Throws ConfigError naming the file and the JSON path (missing or
// mistyped fields, unknown keys, negative sizes or times); a schema_version other than
// kProfileSchemaVersion is refused with a message naming both versions.
Profile load_profile(const std::string& path);
Profile parse_profile(const nlohmann::json& doc, const std::string& file_name);

// The JSON document (keys as docs/calibration-profile.md); the same profile always gives the
// same text.
nlohmann::json to_json(const Profile& p);
// Writes as core/output_file.h does (a temporary file in the same folder, then a rename; "-" is
// standard output); errors name `option`.
void save_profile(const Profile& p, const std::string& path, const std::string& option = "--out");

// The current UTC time as the profile writes it (provenance.created, provenance.refit):
// ISO 8601, "2026-11-29T20:25:00Z".
std::string utc_timestamp();

}  // namespace cs::cal
