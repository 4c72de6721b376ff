// A calibration profile applied to one simulation: its GPU must be the cluster's; its network
// models give the efficiency and the Simple and LL step latencies of the link classes it
// measured, and its
// collective launch model the launch latency of every collective, as a new protocol-parameter
// value for the network layout (the cluster is never changed); and what came from where is
// reported (summary.json "calibration", docs/outputs.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile_model.h"
#include "sim/collectives/protocol_params.h"
#include "sim/compute/compute_model.h"
#include "topology/cluster.h"

namespace cs::drv {

// ConfigError (at `file`, `where`) unless the profile's GPU 0 is the cluster's GPU type.
void check_profile_gpu(const cal::ProfileModel& profile, const topo::Cluster& cluster, const std::string& path,
                       const std::string& file, const std::string& where);

struct CalibratedProtocol {
  coll::ProtocolParams protocol;  // `base` with the measured classes (and the launch latency) replaced
  // Per class, the values now in force and their provenance ("measured" or "nominal"), for the
  // "calibration"/"link_classes" object of summary.json.
  nlohmann::json link_classes;
  // The launch latency in force, its provenance ("measured", "assumed" or "nominal") and where
  // it came from: "calibration"/"collective_launch".
  nlohmann::json collective_launch;
};
CalibratedProtocol calibrate_protocol(const cal::ProfileModel& profile, const coll::ProtocolParams& base);

// The "calibration" object of summary.json without the compute tallies: the profile (named by
// `profile_path`), its kind, date and GPU, the link classes and the collective launch latency.
nlohmann::json calibration_summary(const cal::ProfileModel& profile, const std::string& profile_path,
                                   const CalibratedProtocol& calibrated);

// Adds the compute model's tallies (how many ops took GEMM, memory, launch and overlap values
// from measured, interpolated, extrapolated or nominal numbers) to `calibration`.
void add_compute_tally(nlohmann::json& calibration, const compute::ProvenanceTally& tally);

}  // namespace cs::drv
