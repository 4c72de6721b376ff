// NCCL bus bandwidth against published measurements (configs/validation/nccl-single-node.json,
// nccl-multi-node.json): every size of every record that has a busbw_GBps_by_size table,
// simulated on the record's bundled cluster, changed by the record's "cluster_overrides" (the
// node count of a multi-node record), with the record's "op" (default all_reduce), "ranks" (the
// first n GPUs; default all) and "algorithm" (what NCCL_ALGO forced; default `auto`, NCCL's choice).
// Records are `fit` (constants were fitted on them) or `check` (fitted on nothing); only check
// points validate anything. refit_nccl reruns each fit and prints what it gives, so that every
// fitted constant is reproducible from its records.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/units.h"
#include "sim/collectives/machine.h"

namespace cs::drv {

struct NcclPoint {
  std::string record;        // the record's id
  std::string use;           // "fit" or "check"
  std::string cluster;       // bundled cluster name
  int ranks = 0;             // GPUs the collective ran on
  Bytes size{0};             // nccl-tests' S (binary: "1M" = 2^20 bytes)
  std::string label;         // "1M", as published
  double published_busbw_GBps = 0;
  double predicted_busbw_GBps = 0;
  std::string algorithm;     // "ring/ll", "nvls/simple": what `auto` chose
  double error() const { return (predicted_busbw_GBps - published_busbw_GBps) / published_busbw_GBps; }
};

// What-ifs applied to every simulated machine: cluster-file overrides and hardware-catalog
// overrides (drivers/perturbation.h).
struct MachineOverrides {
  std::vector<std::string> cluster;
  std::vector<std::string> hardware;
};

// Every measured size of the document's records, in record then size order. `overrides_for`, when
// given, says what to change on each record's machine, from its cluster document (what-ifs on
// protocol values merge into the document's own sections: drivers/perturbation.h).
using OverridesFor = std::function<MachineOverrides(const nlohmann::json& cluster_document)>;
std::vector<NcclPoint> validate_nccl(const ConfigDocument& doc, const OverridesFor& overrides_for = {});

// The machine of a record's bundled cluster, with overrides.
coll::Machine nccl_machine(const std::string& cluster, const MachineOverrides& overrides);

struct RefitValue {
  std::string constant;  // its JSON path in its file ("/link_classes/nvlink/step_latency")
  std::string file;      // "configs/collectives/nccl-protocol.json"
  std::string record;    // the record it is fitted on
  std::string fitted;    // what the fit gives, as the file would write it ("12.0us")
  std::string in_use;    // what the file holds now
  std::string how;       // the procedure, one line
};

// Each constant the document's `fit` records name, refitted from them.
std::vector<RefitValue> refit_nccl(const ConfigDocument& doc);

}  // namespace cs::drv
