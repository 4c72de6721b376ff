// Sourced values: the form of every number in the compiled-in catalogs (configs/hardware,
// configs/collectives), a value with its provenance:
//
//   {"value": "450GB/s", "source": "<URL or document>", "status": "datasheet", "note": "..."}
//
// status starts with one of datasheet, secondary, standard (a reading of a published document),
// derived, assumed or fitted; the last three must say why after a colon ("fitted: once, on ...").
// docs/hardware-catalog.md has the policy. The readers keep what each value says of itself
// (SourcedFact), so that a run can list the assumed and fitted values its prediction rests on.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace cs {

// What a sourced value says of itself, or, once a user or a measurement replaced it, what replaced
// it.
struct SourcedFact {
  std::string path;    // JSON path of the sourced value in its document: "/gpus/H100-SXM/efficiency/gemm"
  std::string file;    // the document: "configs/hardware/gpus.json"
  std::string value;   // as written: "0.72", "12us"
  std::string kind;    // the status's first word (datasheet, secondary, standard, derived, assumed,
                       // fitted), or "user" (set by an override) or "measured" (a calibration profile)
  std::string status;  // the whole status: "assumed: assumed equal to the A100 fraction ..."
  std::string source;
  // An assumption or a fit rather than a reading or a derivation: what a prediction resting on it
  // should say.
  bool is_judgement() const { return kind == "assumed" || kind == "fitted"; }
};

// Checks the provenance of a sourced value (ConfigError at the offending key) and returns its
// "value" node; with `facts`, appends what the value says of itself.
ConfigNode sourced_value(const ConfigNode& node, std::vector<SourcedFact>* facts = nullptr);

}  // namespace cs
