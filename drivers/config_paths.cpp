#include "drivers/config_paths.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/errors.h"
#include "workloads/hf_config.h"
#include "workloads/model.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::drv {

namespace fs = std::filesystem;

namespace {
// A path that cannot even be examined (too long, a loop of links) is "not there": the loader
// then reports it naming the file and the path.
bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec) && !ec;
}
}  // namespace

std::string resolve_config(const std::string& ref, const std::string& base_dir, const char* kind) {
  if (ref.empty() || fs::path(ref).is_absolute()) return ref;
  if (!base_dir.empty()) {
    const fs::path beside = fs::path(base_dir) / ref;
    if (path_exists(beside)) return beside.string();
  }
  if (path_exists(ref)) return ref;
  const fs::path bundled = fs::path(CS_CONFIG_DIR) / kind / (ref + ".json");
  if (ref.find('/') == std::string::npos && path_exists(bundled)) return bundled.string();
  return ref;
}

std::string resolve_profile(const std::string& ref, const std::string& base_dir, const std::string& file,
                            const std::string& where) {
  if (ref.empty()) throw ConfigError(file, where, "expected a profile file or a bundled profile name; got an empty string");
  const std::string path = resolve_config(ref, base_dir, "calibration");
  if (path_exists(path)) return path;
  std::vector<std::string> names;
  const fs::path dir = fs::path(CS_CONFIG_DIR) / "calibration";
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError(file, where, "no profile file \"" + ref + "\" and no bundled profile of that name (bundled: " + list + ")");
}

std::string resolve_model(const std::string& ref, const std::string& base_dir, const std::string& file,
                          const std::string& where) {
  if (ref.empty() || ref == "hf:") throw ConfigError(file, where, "expected a model file or a bundled model name; got an empty string");
  const bool hf = ref.rfind("hf:", 0) == 0;
  const std::string path = hf ? "hf:" + resolve_config(ref.substr(3), base_dir, "models") : resolve_config(ref, base_dir, "models");
  if (!path_exists(hf ? path.substr(3) : path)) {
    std::string names;
    for (const auto& n : wl::bundled_model_names()) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError(file, where, "no model file \"" + ref + "\" and no bundled model of that name (bundled: " + names + ")");
  }
  return path;
}

wl::Model load_model_reference(const std::string& resolved) {
  return resolved.rfind("hf:", 0) == 0 ? wl::model_from_hf_config(resolved.substr(3)) : wl::load_model(resolved);
}

}  // namespace cs::drv
