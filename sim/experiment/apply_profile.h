// A calibration profile applied to one simulation: its GPU must be the cluster's, its network
// models replace the link classes' efficiency and step latency, and what came from where is
// reported (summary.json "calibration", docs/outputs.md).
#pragma once

#include <nlohmann/json.hpp>

#include "calibration/profile_model.h"
#include "sim/compute/compute_model.h"
#include "topology/cluster.h"

namespace cs::exp {

struct Experiment;

// ConfigError (at `file`, `where`) unless the profile's GPU 0 is the cluster's GPU type.
void check_profile_gpu(const cal::ProfileModel& profile, const topo::Cluster& cluster, const std::string& path,
                       const std::string& file, const std::string& where);

// Checks that the profile was measured on the cluster's GPU type (ConfigError at the option or
// JSON path that named the profile otherwise), sets the link classes the profile has a network
// model for, and returns the "calibration" object without the compute tallies.
nlohmann::json apply_profile(const cal::ProfileModel& profile, const Experiment& e, topo::Cluster& cluster);

// Sets the link classes the profile has a network model for (efficiency, step latency) and
// returns, per class, the values now in force and their provenance ("measured" or "nominal").
nlohmann::json apply_network(const cal::ProfileModel& profile, topo::Cluster& cluster);

// Adds the compute model's tallies (how many ops took GEMM, memory, launch and overlap values
// from measured, interpolated, extrapolated or nominal numbers) to `calibration`.
void add_compute_tally(nlohmann::json& calibration, const compute::ProvenanceTally& tally);

}  // namespace cs::exp
