#include "core/limits.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "core/errors.h"
#include "core/unit_parse.h"

namespace cs {

Limits parse_limits(const std::string& text) {
  Limits l;
  const auto fail = [](const std::string& why) -> void {
    throw InputError("", "CLUSTERSIM_LIMITS", why + " (expected name=value,...: gpus, links, connections, streamed_connections, micro_batches, layer_passes, requests, jobs, file)");
  };
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("\"" + std::string(item) + "\" has no '='");
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "file") {
      try {
        l.file_bytes = parse_bytes(value);
      } catch (const UnitParseError& e) {
        fail(std::string("file: ") + e.what());
      }
      if (l.file_bytes.value() < 1) fail("file: expected a positive size");
      continue;
    }
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc{} || end != value.data() + value.size() || n < 1) {
      fail(std::string(name) + ": expected a positive integer; got \"" + std::string(value) + "\"");
    }
    if (name == "gpus") l.gpus = n;
    else if (name == "links") l.links = n;
    else if (name == "connections") l.connections = n;
    else if (name == "streamed_connections") l.streamed_connections = n;
    else if (name == "micro_batches") l.micro_batches = n;
    else if (name == "layer_passes") l.layer_passes = n;
    else if (name == "requests") l.requests = n;
    else if (name == "jobs") l.jobs = n;
    else fail("unknown limit \"" + std::string(name) + "\"");
  }
  return l;
}

const Limits& limits() {
  static const Limits l = [] {
    const char* env = std::getenv("CLUSTERSIM_LIMITS");
    return env == nullptr ? Limits{} : parse_limits(env);
  }();
  return l;
}

std::string limit_hint(const char* name) {
  return std::string("raise it with CLUSTERSIM_LIMITS=") + name + "=N (docs/cli.md, \"Limits\")";
}

}  // namespace cs
