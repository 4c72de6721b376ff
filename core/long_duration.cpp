#include "core/long_duration.h"

#include <cstdio>

#include "core/errors.h"

namespace cs {
// parse_long_duration is in unit_parse.cpp, beside the other unit strings it shares its reader with.

LongDuration as_long_duration(const ConfigNode& node) {
  if (!node.is_string()) node.fail_expected("a duration such as \"50700h\", \"54d\" or \"30s\"");
  try {
    return parse_long_duration(node.as_string());
  } catch (const UnitParseError& e) {
    node.fail(e.what());
  }
}

std::string format_long_duration(LongDuration d) {
  const double s = d.value();
  char buf[64];
  if (s >= 2 * 86400.0) {
    std::snprintf(buf, sizeof buf, "%.1f d", s / 86400);
  } else if (s >= 2 * 3600.0) {
    std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  } else if (s >= 120.0) {
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  }
  return buf;
}

}  // namespace cs
