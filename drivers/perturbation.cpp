#include "drivers/perturbation.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"
#include "core/unit_parse.h"

namespace cs::drv {
namespace {

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

std::string scaled_value(const SourcedFact& f, double factor) {
  if (is_number(f.value)) return number(std::strtod(f.value.c_str(), nullptr) * factor);
  try {
    return std::to_string(std::llround(static_cast<double>(parse_duration(f.value).count()) * factor)) + "ps";
  } catch (const UnitParseError&) {
  }
  try {
    return number(parse_bandwidth(f.value).value() * factor) + "B/s";
  } catch (const UnitParseError&) {
  }
  throw InternalError("cannot scale the value \"" + f.value + "\" of " + f.path);
}

double feasible_factor(const SourcedFact& f, double factor) {
  const bool fraction = f.path.ends_with("/efficiency") || f.path.find("/efficiency/") != std::string::npos;
  if (!fraction || !is_number(f.value)) return factor;
  const double v = std::strtod(f.value.c_str(), nullptr);
  // Efficiencies that are not fractions of a peak (kernel_launch, overlap_slowdown) are
  // durations or factors >= 1; only values in (0, 1] are capped.
  if (!(v > 0 && v <= 1)) return factor;
  return v * factor > 1 ? 1 / v : factor;
}

Perturbation set_value(const SourcedFact& f, const std::string& value, const nlohmann::json& cluster_document) {
  Perturbation p;
  if (f.file.rfind("configs/hardware/", 0) == 0) {
    p.hardware_overrides.push_back(f.path + "/value=" + value);
    return p;
  }
  // A protocol value: "/link_classes/<class>/<key>" or "/collective_model/<key>", merged into the
  // cluster file's section of that name (which a "--set /section=..." replaces whole).
  const std::string section = f.path.substr(1, f.path.find('/', 1) - 1);
  nlohmann::json merged = cluster_document.contains(section) ? cluster_document.at(section) : nlohmann::json::object();
  const nlohmann::json::json_pointer inside(f.path.substr(section.size() + 1));
  merged[inside] = is_number(value) ? nlohmann::json(std::strtod(value.c_str(), nullptr)) : nlohmann::json(value);
  p.cluster_overrides.push_back("/" + section + "=" + merged.dump());
  return p;
}

Perturbation scaled(const SourcedFact& f, double factor, const nlohmann::json& cluster_document) {
  return set_value(f, scaled_value(f, factor), cluster_document);
}

}  // namespace cs::drv
