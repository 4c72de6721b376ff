// Fuzzes everything that reads user text: the unit parsers, the JSON config reader with every
// ConfigNode accessor on every node, and --set overrides.
//
// Contract under test: bad input only ever raises the project's own input errors (InputError and
// its kinds, UnitParseError). Any other exception, an InternalError, a crash, a sanitizer report
// or a broken invariant below aborts the run and is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/errors.h"
#include "core/unit_parse.h"

namespace {

using cs::ConfigNode;

[[noreturn]] void finding(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz_config finding: %s: %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

void check(bool ok, const char* what, std::string_view detail) {
  if (!ok) finding(what, detail);
}

// Runs one unit parser; a rejection must name the input; an accepted value must be in range.
template <class F, class Valid>
void parse_unit(std::string_view text, F parse, Valid valid) {
  try {
    check(valid(parse(text)), "unit parser accepted an out-of-range value", text);
  } catch (const cs::UnitParseError& e) {
    // what() is a C string: an input with a NUL byte cannot appear in it whole.
    if (text.find('\0') != std::string_view::npos) return;
    check(std::string_view(e.what()).find(text) != std::string_view::npos,
          "unit parse error does not name the input", e.what());
  }
}

void fuzz_unit_parsers(std::string_view text) {
  parse_unit(text, cs::parse_bytes, [](cs::Bytes b) { return b.value() >= 0; });
  parse_unit(text, cs::parse_bandwidth,
             [](cs::Bandwidth b) { return std::isfinite(b.value()) && b.value() > 0; });
  parse_unit(text, cs::parse_duration, [](cs::Duration d) { return d.count() >= 0; });
  parse_unit(text, cs::parse_flop_rate,
             [](cs::FlopRate r) { return std::isfinite(r.value()) && r.value() > 0; });
  parse_unit(text, cs::parse_flops,
             [](cs::Flops f) { return std::isfinite(f.value()) && f.value() >= 0; });
}

// Runs one accessor. A ConfigError must carry a path that is "/" (the root) or resolves in the
// document: error paths are RFC 6901 pointers that people and tools follow.
template <class F>
void probe(const nlohmann::json& document, F accessor) {
  try {
    accessor();
  } catch (const cs::InputError& e) {
    const std::string& path = e.json_path();
    check(std::string_view(e.what()).rfind("config error", 0) == 0, "message lacks its prefix", e.what());
    if (path.empty() || path == "/") return;
    try {
      nlohmann::json::json_pointer pointer(path);
      check(document.contains(pointer), "error path does not resolve in the document", path);
    } catch (const nlohmann::json::exception&) {
      finding("error path is not a valid JSON pointer", path);
    }
  } catch (const cs::UnitParseError&) {
    finding("UnitParseError escaped the config reader without a location", "");
  }
}

void walk(const nlohmann::json& document, const ConfigNode& node, int depth) {
  if (depth > 200) return;
  // The node's own path must lead back to it.
  const nlohmann::json::json_pointer self(node.path());
  check(&document.at(self) == &node.json(), "node path does not lead back to the node", node.path());

  probe(document, [&] { (void)node.as_string(); });
  probe(document, [&] { (void)node.as_bool(); });
  probe(document, [&] { (void)node.as_int(); });
  probe(document, [&] { (void)node.as_int(-1000, 1000); });
  probe(document, [&] { (void)node.as_number(); });
  probe(document, [&] { (void)node.as_bytes(); });
  probe(document, [&] { (void)node.as_bandwidth(); });
  probe(document, [&] { (void)node.as_duration(); });
  probe(document, [&] { (void)node.as_flop_rate(); });
  probe(document, [&] { (void)node.as_flops(); });
  probe(document, [&] { (void)node.as_choice({"ring", "tree", ""}); });
  probe(document, [&] { (void)node.size(); });
  probe(document, [&] { node.expect_only({"name", "links", "a/b", "~"}); });
  probe(document, [&] { node.expect_only({}); });
  probe(document, [&] { (void)node.at("name"); });
  probe(document, [&] { (void)node.find("links"); });
  probe(document, [&] { (void)node.has(""); });
  probe(document, [&] { (void)node.at(std::size_t{0}); });
  probe(document, [&] { (void)node.at(std::size_t{1} << 40); });

  if (node.is_object()) {
    for (const auto& [key, child] : node.members()) {
      check(node.at(key).path() == child.path(), "at(key) and members() disagree", child.path());
      walk(document, child, depth + 1);
    }
  } else if (node.is_array()) {
    for (const ConfigNode& child : node.elements()) walk(document, child, depth + 1);
  }
}

void fuzz_config_document(std::string_view text) {
  try {
    const cs::ConfigDocument doc = cs::ConfigDocument::parse(text, "fuzz.json");
    walk(doc.json(), doc.root(), 0);
  } catch (const cs::ConfigError& e) {
    check(e.file() == "fuzz.json", "parse error names another file", e.what());
  }
}

void fuzz_override(std::string_view text) {
  nlohmann::json document = {{"topology", {{"name", "a"}, {"links", {1, 2, 3}}, {"x/y", {{"~", 1}}}}}};
  try {
    cs::apply_override(document, "fuzz.json", text);
  } catch (const cs::ConfigError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_unit_parsers(text);
  fuzz_config_document(text);
  fuzz_override(text);
  return 0;
}
