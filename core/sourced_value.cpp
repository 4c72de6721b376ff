#include "core/sourced_value.h"

#include <string>
#include <string_view>

namespace cs {
namespace {

constexpr std::string_view kStatusKinds[] = {"datasheet", "secondary", "standard",
                                             "derived", "assumed", "fitted"};
// Kinds that are not a reading of a published document must say why.
constexpr std::string_view kStatusKindsWithReason[] = {"derived", "assumed", "fitted"};

void check_status(const ConfigNode& node) {
  const std::string s = node.as_string();
  const std::size_t end = s.find_first_of(":( ");
  const std::string_view kind = std::string_view(s).substr(0, end);
  bool known = false;
  for (auto k : kStatusKinds) known = known || k == kind;
  if (!known) {
    node.fail_expected(
        "a status starting with datasheet, secondary, standard, derived, assumed or fitted");
  }
  for (auto k : kStatusKindsWithReason) {
    if (k != kind) continue;
    const bool has_reason = end != std::string::npos && s[end] == ':' &&
                            s.find_first_not_of(' ', end + 1) != std::string::npos;
    if (!has_reason) node.fail_expected("\"" + std::string(kind) + ": <reason>\"");
  }
}

}  // namespace

ConfigNode sourced_value(const ConfigNode& node, std::vector<SourcedFact>* facts) {
  node.expect_only({"value", "source", "status", "note"});
  const ConfigNode source = node.at("source");
  if (source.as_string().empty()) source.fail_expected("a non-empty source (a URL or document)");
  const ConfigNode status = node.at("status");
  check_status(status);
  if (auto note = node.find("note")) note->as_string();
  const ConfigNode value = node.at("value");
  if (facts != nullptr) {
    const std::string s = status.as_string();
    facts->push_back({node.path(), node.file(), value.is_string() ? value.as_string() : value.json().dump(),
                      s.substr(0, s.find_first_of(":( ")), s, source.as_string()});
  }
  return value;
}

}  // namespace cs
