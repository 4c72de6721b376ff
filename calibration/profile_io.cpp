// Reading, checking and writing calibration profiles (docs/calibration-profile.md): one table of
// fields per JSON object of the format (calibration/profile_fields.h), which both the reader and
// the writer walk.
//
// Every object is checked for unknown keys, each naming its JSON path; numbers are range-checked
// (no negative sizes or times, ranks >= 1). Derived values (spread, rates, bandwidths, slowdown)
// are written for people and checked on reading, but always recomputed from the timing.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibration/profile.h"
#include "calibration/profile_fields.h"
#include "core/limits.h"
#include "core/output_file.h"
#include "core/collective_kind.h"
#include "core/config.h"

namespace cs::cal {

namespace {

using namespace fields;  // the tables read as declarations

// ---- measured points -------------------------------------------------------------------------

constexpr std::array kTimingFields = {
    required<&Timing::median, Seconds>("median_s"),
    required<&Timing::p10, Seconds>("p10_s"),
    required<&Timing::p90, Seconds>("p90_s"),
    required<&Timing::min, Seconds>("min_s"),
    required<&Timing::samples, Count<0>>("samples"),
    required<&Timing::discarded_throttled, Count<0>>("discarded_throttled"),
    derived<&Timing::spread, Number>("spread")};

// A point's status, error and timing: an ok point has timing and no error, a failed one an error
// and no timing. The status field reads the three; each point's table lists them where its
// allowed keys have them.
constexpr Field<PointBase> kErrorField = {
    "error", Presence::kPointStatus, nullptr, [](const PointBase& p) -> std::optional<Json> {
      if (p.status != PointStatus::kFailed) return std::nullopt;
      return Text::write(p.error);
    }};

constexpr Field<PointBase> kTimingField = {
    "timing", Presence::kPointStatus, nullptr, [](const PointBase& p) -> std::optional<Json> {
      if (p.status != PointStatus::kOk || !p.timing) return std::nullopt;
      return Object<kTimingFields>::write(*p.timing);
    }};

void read_point_status(const ConfigNode& n, std::string_view key, PointBase& p) {
  p.status = EnumOf<kPointStatusNames>::read(n.at(key));
  const auto timing = n.find(kTimingField.key);
  const auto error = n.find(kErrorField.key);
  if (p.status == PointStatus::kFailed) {
    if (!error) n.fail("a failed point must have \"error\" (what went wrong)");
    p.error = Text::read(*error);
    if (timing) timing->fail("a failed point has no timing");
  } else {
    if (error) error->fail("only a failed point has an error");
    if (!timing) n.fail("a point with status \"ok\" must have \"timing\"");
    p.timing = Object<kTimingFields>::read(*timing);
  }
}

constexpr Field<PointBase> kStatusField = {
    "status", Presence::kPointStatus, read_point_status,
    [](const PointBase& p) -> std::optional<Json> { return EnumOf<kPointStatusNames>::write(p.status); }};

bool ok(const PointBase& p) { return p.status == PointStatus::kOk && p.timing.has_value(); }

// A derived rate, written for points that have a timing.
template <auto Rate>
auto when_ok(const ClassOf<Rate>& p) -> std::optional<decltype((p.*Rate)())> {
  if (!ok(p)) return std::nullopt;
  return (p.*Rate)();
}

constexpr std::array kGemmShapeFields = {
    required<&GemmShape::dtype, OneOf<kGemmDtypeNames>>("dtype"),
    required<&GemmShape::m, Extent>("m"),
    required<&GemmShape::n, Extent>("n"),
    required<&GemmShape::k, Extent>("k")};

constexpr auto kGemmPointFields = concat(
    spliced<&GemmPoint::shape, kGemmShapeFields>(),
    std::array{inherited<GemmPoint, kTimingField>(),
               derived<&when_ok<&GemmPoint::rate>, RateOf<FlopRate>>("flops_per_s"),
               required<&GemmPoint::source, OneOf<kGemmSourceNames>>("source"),
               required<&GemmPoint::algo, FreeObject>("algo"),
               inherited<GemmPoint, kStatusField>(),
               inherited<GemmPoint, kErrorField>()});

constexpr std::array kMemoryPointFields = {
    required<&MemoryPoint::kernel, OneOf<kMemoryKernelNames>>("kernel"),
    required<&MemoryPoint::bytes, ByteCount>("bytes"),
    inherited<MemoryPoint, kTimingField>(),
    derived<&when_ok<&MemoryPoint::bandwidth>, RateOf<Bandwidth>>("bandwidth_bytes_per_s"),
    inherited<MemoryPoint, kStatusField>(),
    inherited<MemoryPoint, kErrorField>()};

constexpr std::array kLaunchPointFields = {
    required<&LaunchPoint::kernel, OneOf<kLaunchKernelNames>>("kernel"),
    inherited<LaunchPoint, kTimingField>(),
    inherited<LaunchPoint, kStatusField>(),
    inherited<LaunchPoint, kErrorField>()};

constexpr std::array kOverlapCollectiveFields = {
    required<&OverlapPoint::collective_op, OneOf<kCollectiveOpNames>>("op"),
    required<&OverlapPoint::collective_ranks, Count<1>>("ranks"),
    required<&OverlapPoint::collective_bytes, ByteCount>("bytes")};

constexpr std::array kOverlapPointFields = {
    required<&OverlapPoint::gemm, Object<kGemmShapeFields>>("gemm"),
    group<kOverlapCollectiveFields>("collective"),
    required<&OverlapPoint::alone, Seconds>("alone_s"),
    required<&OverlapPoint::beside, Seconds>("beside_s"),
    derived<&OverlapPoint::slowdown, NonNegative>("slowdown")};

constexpr std::array kLinkPointFields = {
    required<&LinkPoint::kind, OneOf<kLinkKindNames>>("kind"),
    required<&LinkPoint::src, Count<-1>>("src"),
    required<&LinkPoint::dst, Count<-1>>("dst"),
    required<&LinkPoint::bytes, ByteCount>("bytes"),
    inherited<LinkPoint, kTimingField>(),
    derived<&when_ok<&LinkPoint::bandwidth>, RateOf<Bandwidth>>("bandwidth_bytes_per_s"),
    required<&LinkPoint::link_class, OneOf<hw::kLinkClassNames>>("link_class"),
    inherited<LinkPoint, kStatusField>(),
    inherited<LinkPoint, kErrorField>()};

constexpr std::array kNcclChoiceFields = {
    required<&NcclChoice::algorithm, Text>("algorithm"),
    required<&NcclChoice::protocol, Text>("protocol"),
    required<&NcclChoice::channels, Count<0>>("channels")};

constexpr std::array kCollectivePointFields = {
    required<&CollectivePoint::op, OneOf<kCollectiveOpNames>>("op"),
    required<&CollectivePoint::ranks, Count<1>>("ranks"),
    required<&CollectivePoint::nodes, Count<1>>("nodes"),
    required<&CollectivePoint::bytes, ByteCount>("bytes"),
    required<&CollectivePoint::dtype, NonEmptyText>("dtype"),
    inherited<CollectivePoint, kTimingField>(),
    derived<&when_ok<&CollectivePoint::algbw>, RateOf<Bandwidth>>("algbw_bytes_per_s"),
    derived<&when_ok<&CollectivePoint::busbw>, RateOf<Bandwidth>>("busbw_bytes_per_s"),
    required<&CollectivePoint::link_class, OneOf<hw::kLinkClassNames>>("link_class"),
    required<&CollectivePoint::algorithm, OneOf<kNcclAlgorithmNames>>("algorithm"),
    required<&CollectivePoint::protocol, OneOf<kNcclProtocolNames>>("protocol"),
    required<&CollectivePoint::nccl_choice, Object<kNcclChoiceFields>>("nccl_choice"),
    inherited<CollectivePoint, kStatusField>(),
    inherited<CollectivePoint, kErrorField>()};

// ---- provenance, inventory, settings ---------------------------------------------------------

constexpr std::array kProvenanceFields = {
    required<&Provenance::kind, OneOf<kProvenanceKindNames>>("kind"),
    required<&Provenance::tool, Text>("tool"),
    required<&Provenance::command, Text>("command"),
    required<&Provenance::created, Text>("created"),
    required<&Provenance::host, Text>("host"),
    required<&Provenance::complete, Flag>("complete"),
    optional<&Provenance::refit, Text>("refit"),
    required<&Provenance::notes, Text>("notes")};

constexpr std::array kGpuFields = {
    required<&GpuInventory::index, Count<0>>("index"),
    required<&GpuInventory::node, Count<0>>("node"),
    required<&GpuInventory::name, Text>("name"),
    required<&GpuInventory::uuid, Text>("uuid"),
    required<&GpuInventory::sm_count, Count<0>>("sm_count"),
    required<&GpuInventory::compute_capability, Text>("compute_capability"),
    required<&GpuInventory::memory, ByteCount>("memory_bytes"),
    required<&GpuInventory::l2, ByteCount>("l2_bytes"),
    required<&GpuInventory::sm_clock_mhz, Count<0>>("sm_clock_mhz"),
    required<&GpuInventory::memory_clock_mhz, Count<0>>("memory_clock_mhz"),
    required<&GpuInventory::power_limit_w, NonNegative>("power_limit_w"),
    required<&GpuInventory::catalog_gpu, Text>("catalog_gpu")};

// An n x n matrix of C values, n the number of GPUs read before it.
template <class C>
struct PerGpuMatrix {
  using Value = std::vector<std::vector<typename C::Value>>;
  static Value read(const ConfigNode& n, const Inventory& so_far) {
    const std::size_t size = so_far.gpus.size();
    if (n.size() != size) n.fail_expected("an array of " + std::to_string(size) + " rows (one per GPU)");
    Value out;
    for (const ConfigNode& row : n.elements()) {
      if (row.size() != size) row.fail_expected("a row of " + std::to_string(size) + " values (one per GPU)");
      out.push_back(ListOf<C>::read(row));
    }
    return out;
  }
  static Json write(const Value& m) { return ListOf<ListOf<C>>::write(m); }
};

constexpr std::array kInventoryFields = {
    required<&Inventory::driver_version, Text>("driver_version"),
    required<&Inventory::cuda_runtime_version, Text>("cuda_runtime_version"),
    required<&Inventory::cublas_version, Text>("cublas_version"),
    required<&Inventory::nccl_version, Text>("nccl_version"),
    required<&Inventory::nodes, Count<1>>("nodes"),
    required<&Inventory::gpus, ListOf<Object<kGpuFields>>>("gpus"),
    required<&Inventory::peer_access, PerGpuMatrix<Flag>>("peer_access"),
    required<&Inventory::nvlink, PerGpuMatrix<Count<0>>>("nvlink"),
    required<&Inventory::environment, TextMap>("environment")};

constexpr std::array kSettingsFields = {
    required<&Settings::quick, Flag>("quick"),
    required<&Settings::min_samples, Count<10>>("min_samples"),
    required<&Settings::target_spread, NonNegative>("target_spread"),
    required<&Settings::time_limit, Seconds>("time_limit_s"),
    required<&Settings::l2_flush, ByteCount>("l2_flush_bytes"),
    required<&Settings::warmup, Seconds>("warmup_s")};

// ---- models ----------------------------------------------------------------------------------

// The upper end of a measured byte range: at least the min_bytes read before it.
template <auto MinBytes>
struct MaxBytes {
  using Value = Bytes;
  static Bytes read(const ConfigNode& n, const ClassOf<MinBytes>& so_far) {
    const Bytes b = ByteCount::read(n);
    if (b < so_far.*MinBytes) n.fail_expected("max_bytes >= min_bytes");
    return b;
  }
  static Json write(Bytes b) { return ByteCount::write(b); }
};

constexpr std::array kCollectiveFitFields = {
    required<&CollectiveFit::op, OneOf<kCollectiveOpNames>>("op"),
    required<&CollectiveFit::algorithm, OneOf<kNcclAlgorithmNames>>("algorithm"),
    required<&CollectiveFit::protocol, OneOf<kNcclProtocolNames>>("protocol"),
    required<&CollectiveFit::ranks, Count<1>>("ranks"),
    required<&CollectiveFit::link_class, OneOf<hw::kLinkClassNames>>("link_class"),
    required<&CollectiveFit::min_bytes, ByteCount>("min_bytes"),
    required<&CollectiveFit::max_bytes, MaxBytes<&CollectiveFit::min_bytes>>("max_bytes"),
    required<&CollectiveFit::alpha, Seconds>("alpha_s"),
    required<&CollectiveFit::beta_s_per_byte, NonNegative>("beta_s_per_byte"),
    required<&CollectiveFit::bus_bandwidth, RateOf<Bandwidth>>("bus_bandwidth_bytes_per_s"),
    required<&CollectiveFit::nominal, RateOf<Bandwidth>>("nominal_bytes_per_s"),
    required<&CollectiveFit::link_efficiency, NonNegative>("link_efficiency"),  // busbw over line rate: NVLS exceeds 1
    required<&CollectiveFit::r2, Number>("r2"),  // may be negative for a poor constrained fit
    required<&CollectiveFit::mape, NonNegative>("mape"),
    required<&CollectiveFit::loo_mape, NonNegative>("loo_mape"),
    required<both<&CollectiveFit::alpha_ci95_lo, &CollectiveFit::alpha_ci95_hi>, SecondsInterval>("alpha_ci95_s"),
    required<both<&CollectiveFit::beta_ci95_lo, &CollectiveFit::beta_ci95_hi>, NonNegativeInterval>(
        "beta_ci95_s_per_byte"),
    required<&CollectiveFit::points, Count<0>>("points")};

constexpr std::array kGemmTableEntryFields = {
    required<&GemmTableEntry::m, Extent>("m"),
    required<&GemmTableEntry::n, Extent>("n"),
    required<&GemmTableEntry::k, Extent>("k"),
    required<&GemmTableEntry::rate, PositiveRateOf<FlopRate>>("flops_per_s")};

constexpr std::array kGemmCurveFields = {
    required<&GemmModel::t0, Seconds>("t0_s"),
    required<&GemmModel::rate, PositiveRateOf<FlopRate>>("rate_flops_per_s")};

constexpr std::array kGemmModelFields = {
    required<&GemmModel::dtype, OneOf<kGemmDtypeNames>>("dtype"),
    required<&GemmModel::best, RateOf<FlopRate>>("best_flops_per_s"),
    group<kGemmCurveFields>("curve"),
    required<&GemmModel::table, ListOf<Object<kGemmTableEntryFields>>>("table")};

constexpr std::array kMemoryModelFields = {
    required<&MemoryModel::t0, Seconds>("t0_s"),
    required<&MemoryModel::bandwidth, PositiveRateOf<Bandwidth>>("bandwidth_bytes_per_s"),
    required<&MemoryModel::min_bytes, ByteCount>("min_bytes"),
    required<&MemoryModel::max_bytes, MaxBytes<&MemoryModel::min_bytes>>("max_bytes"),
    required<&MemoryModel::r2, Number>("r2"),
    required<&MemoryModel::mape, NonNegative>("mape")};

constexpr std::array kNetworkModelFields = {
    required<&NetworkClassModel::link_class, OneOf<hw::kLinkClassNames>>("link_class"),
    required<&NetworkClassModel::link_efficiency, Efficiency>("link_efficiency"),
    required<&NetworkClassModel::step_latency, Seconds>("step_latency_s"),
    optional<&NetworkClassModel::ll_step_latency, Seconds>("ll_step_latency_s"),
    defaulted<&NetworkClassModel::path_latency, Seconds>("path_latency_s"),
    defaulted<&NetworkClassModel::points, Count<0>>("points"),
    defaulted<&NetworkClassModel::mape, NonNegative>("mape"),
    required<&NetworkClassModel::from, Text>("from")};

constexpr std::array kCollectiveLaunchFields = {
    required<&CollectiveLaunchModel::latency, Seconds>("latency_s"),
    required<&CollectiveLaunchModel::status, OneOf<kLaunchStatusNames>>("status"),
    required<&CollectiveLaunchModel::from, Text>("from")};

constexpr std::array kModelsFields = {
    defaulted<&Models::collectives, ListOf<Object<kCollectiveFitFields>>>("collectives"),
    defaulted<&Models::gemm, ListOf<Object<kGemmModelFields>>>("gemm"),
    optional<&Models::memory, Object<kMemoryModelFields>>("memory"),
    optional<&Models::launch_overhead, Seconds>("launch_overhead_s"),
    optional<&Models::overlap_slowdown, Slowdown>("overlap_slowdown"),
    defaulted<&Models::network, ListOf<Object<kNetworkModelFields>>>("network"),
    optional<&Models::collective_launch, Object<kCollectiveLaunchFields>>("collective_launch")};

// ---- the document ----------------------------------------------------------------------------

constexpr const char* kSchemaName = "clustersim-profile";

void read_schema(const ConfigNode& root, std::string_view key, Profile&) {
  const ConfigNode schema = root.at(key);
  if (!schema.is_string() || schema.as_string() != kSchemaName) {
    schema.fail_expected(std::string("\"") + kSchemaName + "\"");
  }
}

void read_schema_version(const ConfigNode& root, std::string_view key, Profile& p) {
  const ConfigNode version = root.at(key);
  const std::int64_t v = version.as_int();
  if (v != kProfileSchemaVersion) {
    version.fail("profile schema version " + std::to_string(v) +
                 " is not supported by this clustersim (it reads version " +
                 std::to_string(kProfileSchemaVersion) + ")");
  }
  p.schema_version = static_cast<int>(v);
}

// Read before the other keys are checked: a newer file may have keys this reader does not know,
// and the version is the useful message then. Written as this reader's schema, whatever the
// profile says.
constexpr std::array kSchemaFields = {
    Field<Profile>{"schema", Presence::kRequired, read_schema,
                   [](const Profile&) -> std::optional<Json> { return kSchemaName; }},
    Field<Profile>{"schema_version", Presence::kRequired, read_schema_version,
                   [](const Profile&) -> std::optional<Json> { return kProfileSchemaVersion; }}};

constexpr std::array kPointsFields = {
    defaulted<&Profile::gemm, ListOf<Object<kGemmPointFields>>>("gemm"),
    defaulted<&Profile::memory, ListOf<Object<kMemoryPointFields>>>("memory"),
    defaulted<&Profile::launch, ListOf<Object<kLaunchPointFields>>>("launch"),
    defaulted<&Profile::overlap, ListOf<Object<kOverlapPointFields>>>("overlap"),
    defaulted<&Profile::links, ListOf<Object<kLinkPointFields>>>("links"),
    defaulted<&Profile::collectives, ListOf<Object<kCollectivePointFields>>>("collectives")};

constexpr std::array kContentFields = {
    required<&Profile::provenance, Object<kProvenanceFields>>("provenance"),
    required<&Profile::inventory, Object<kInventoryFields>>("inventory"),
    required<&Profile::settings, Object<kSettingsFields>>("settings"),
    group<kPointsFields>("points"),
    defaulted<&Profile::models, Object<kModelsFields>>("models")};

constexpr auto kProfileFields = concat(kSchemaFields, kContentFields);

}  // namespace

Profile parse_profile(const nlohmann::json& doc, const std::string& file_name) {
  const ConfigNode root(&doc, std::make_shared<const std::string>(file_name), "");
  if (!root.is_object()) root.fail_expected("a calibration profile (a JSON object)");
  Profile p;
  read_fields(root, std::span(kSchemaFields), p);
  check_keys<kProfileFields>(root);
  read_fields(root, std::span(kContentFields), p);
  // A measured point that succeeded took time: a zero median (an edited or broken file) would be
  // skipped by every fit and comparison and pass unnoticed.
  const auto check_timed = [&](const auto& points, const char* section) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const PointBase& b = points[i];
      if (b.status == PointStatus::kOk && b.timing && b.timing->median.count() <= 0) {
        throw ConfigError(file_name, "/points/" + std::string(section) + "/" + std::to_string(i) + "/timing/median_s",
                          "a point with status \"ok\" has a zero median time; a measured kernel takes time (mark the point failed, or remove it)");
      }
    }
  };
  check_timed(p.gemm, "gemm");
  check_timed(p.memory, "memory");
  check_timed(p.launch, "launch");
  check_timed(p.links, "links");
  check_timed(p.collectives, "collectives");
  // The inventory sizes the per-GPU matrices it holds (n x n): no larger than the largest cluster.
  if (static_cast<std::int64_t>(p.inventory.gpus.size()) > limits().gpus) {
    throw ConfigError(file_name, "/inventory/gpus", "more GPUs than the largest cluster (" + std::to_string(limits().gpus) + "); " + limit_hint("gpus"));
  }
  return p;
}

Profile load_profile(const std::string& path) {
  const ConfigDocument doc = ConfigDocument::load(path);
  return parse_profile(doc.json(), path);
}

nlohmann::json to_json(const Profile& p) {
  // nlohmann::json keeps object keys sorted, so the text depends only on the values.
  return write_fields(p, std::span(kProfileFields));
}

void save_profile(const Profile& p, const std::string& path, const std::string& option) {
  write_output_file(path, to_json(p).dump(2) + "\n", option);
}

}  // namespace cs::cal
