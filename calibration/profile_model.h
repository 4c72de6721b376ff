// The simulator's view of a calibration profile: durations of GEMMs, memory-bound kernels and
// collectives computed from the profile's fitted models, each with the provenance of the number
// (docs/calibration-profile.md, "How the simulator uses a profile").
//
//   ProfileModel pm(load_profile("h200.json"));      // models as written by fit_models
//   Estimate e = pm.gemm({"bf16", 4096, 4096, 8192});  // e.time, e.provenance
//
// The profile's models must already be fitted (fit.h, fit_models); a query for a model the
// profile lacks throws InputError (GEMM) or returns nothing (the optional ones).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "calibration/profile.h"
#include "core/units.h"

namespace cs::cal {

// Where an estimate comes from. (Named EstimateProvenance because cs::cal::Provenance is the
// profile's provenance record; ProfileModel::Provenance is an alias.)
enum class EstimateProvenance : std::uint8_t {
  kMeasured,      // a measured point, or a fit inside the measured range
  kInterpolated,  // between measured GEMM shapes
  kExtrapolated,  // a fit or curve beyond the measured range
  kNominal,       // not from the profile (the catalog); set by callers that fall back
};
const char* to_string(EstimateProvenance p);  // "measured", "interpolated", ...

struct Estimate {
  Duration time{0};
  EstimateProvenance provenance = EstimateProvenance::kMeasured;
};

class ProfileModel {
 public:
  using Provenance = EstimateProvenance;

  explicit ProfileModel(Profile p);

  const Profile& profile() const { return profile_; }

  bool has_gemm(const std::string& dtype) const;
  // The time of one GEMM (2mnk FLOP):
  //   the shape is in the table              -> its rate, measured;
  //   inside the table's (m, n, k) box        -> an interpolated rate, interpolated: trilinear in
  //      (log m, log n, log k) of log(work rate) when the table is a full grid (the work rate:
  //      see GemmIndex::work); else a local plane
  //      fitted to log(rate) over the 8 nearest shapes in (log m, log n, log k), weighted by
  //      1 / distance^2 and kept within their rates (with fewer than 5 shapes, or shapes that do
  //      not span the three axes, their 1 / distance^2 weighted mean);
  //   outside                                 -> the curve t0 + F / rate, extrapolated.
  // Throws InputError when the profile has no GEMM model for the dtype.
  Estimate gemm(const GemmShape& s) const;
  // A GEMM known only by its FLOP count: the curve, extrapolated.
  Estimate gemm_flops(const std::string& dtype, Flops f) const;
  FlopRate best_gemm_rate(const std::string& dtype) const;

  // t0 + b / bandwidth: measured inside the measured byte range, else extrapolated; nothing when
  // the profile has no memory model.
  std::optional<Estimate> memory(Bytes b) const;
  std::optional<Duration> launch_overhead() const;
  std::optional<double> overlap_slowdown() const;
  // nullptr when the profile has no network model for the class.
  const NetworkClassModel* network(const std::string& link_class) const;

  // alpha + beta bytes of the fit of (op, algorithm, protocol, ranks, link_class) whose size range
  // holds `bytes` (measured); between two segments, the nearer one in log size (measured); below
  // the first or above the last segment, that segment (extrapolated). Nothing when no fit.
  std::optional<Estimate> collective(const std::string& op, const std::string& algorithm,
                                     const std::string& protocol, int ranks,
                                     const std::string& link_class, Bytes bytes) const;

 private:
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  struct GemmIndex {
    std::size_t model = 0;                 // index in profile_.models.gemm
    std::map<Shape, FlopRate> exact;       // table entries with a positive rate
    // What is interpolated: the rate of the work once a fixed overhead (launch and setup, the
    // curve's t0 capped at half the fastest time) is taken out, F / (t - overhead); an
    // interpolated time is overhead + F / work rate. Small GEMMs, whose time is mostly that
    // overhead, then interpolate as well as large ones.
    std::map<Shape, FlopRate> work;
    Duration overhead{0};
    std::int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};  // the table's (m, n, k) box
    bool grid = false;                     // every combination of the distinct m, n, k present
    std::vector<std::int64_t> axes[3];     // distinct m, n, k (grid only)
  };
  using CollectiveKey = std::tuple<std::string, std::string, std::string, int, std::string>;

  const GemmIndex& gemm_index(const std::string& dtype) const;
  FlopRate interpolate(const GemmIndex& g, const GemmShape& s) const;
  Duration curve_time(const GemmModel& m, Flops f) const;

  Profile profile_;
  std::map<std::string, GemmIndex> gemm_;
  std::map<CollectiveKey, std::vector<std::size_t>> collectives_;  // fits by min_bytes
};

}  // namespace cs::cal
