// Where configuration files are found: a path (beside the file that names it, or as given), or
// the name of a file bundled with clustersim under configs/<kind>/ ("dgx-h100", "gpt-1.7b",
// "example-synthetic").
#pragma once

#include <string>

#include "workloads/model.h"

namespace cs::drv {

// A configuration file named by path (tried beside `base_dir` unless it is empty, then as given) or, without a
// '/', by the name of a bundled file, configs/<kind>/<name>.json ("dgx-h100", "gpt-1.7b").
// Returns `ref` itself when nothing is found (the loader then reports the missing file).
std::string resolve_config(const std::string& ref, const std::string& base_dir, const char* kind);

// A model reference as an experiment or the command line writes it (a file, a bundled name, or
// "hf:PATH/config.json"), resolved against `base_dir`; `where` names the file and JSON path (or
// option) for the error when nothing is found.
std::string resolve_model(const std::string& ref, const std::string& base_dir, const std::string& file,
                          const std::string& where);

// A calibration profile named by path or by the name of a bundled one (configs/calibration/);
// ConfigError at `file`, `where` listing the bundled names when there is no such file.
std::string resolve_profile(const std::string& ref, const std::string& base_dir, const std::string& file,
                            const std::string& where);

// Loads a model reference as resolve_model returns it: a model file or "hf:PATH/config.json".
wl::Model load_model_reference(const std::string& resolved);

}  // namespace cs::drv
