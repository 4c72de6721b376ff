// Sourced values: the form of every number in the compiled-in catalogs (configs/hardware,
// configs/collectives), a value with its provenance:
//
//   {"value": "450GB/s", "source": "<URL or document>", "status": "datasheet", "note": "..."}
//
// status starts with one of datasheet, secondary, standard (a reading of a published document),
// derived, assumed or fitted; the last three must say why after a colon ("fitted: once, on ...").
// docs/hardware-catalog.md has the policy.
#pragma once

#include "core/config.h"

namespace cs {

// Checks the provenance of a sourced value (ConfigError at the offending key) and returns its
// "value" node.
ConfigNode sourced_value(const ConfigNode& node);

}  // namespace cs
