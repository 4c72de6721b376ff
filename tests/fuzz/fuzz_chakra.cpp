// Fuzzes the Chakra execution-trace reader (taskgraph/chakra_trace.h) and the protobuf wire
// reader under it (core/protobuf_wire.h): any byte string is parsed, then ordered by its data
// dependencies and by its control dependencies too, then imported onto a TaskGraph
// (taskgraph/chakra_import.h) as one rank and as one rank replicated to four, with re-timing.
//
// Contract under test: bad input only ever raises InputError naming a byte offset or a node (the
// import: a node, a process group, or --world); an accepted trace's order holds every node once,
// after its data dependencies; an imported graph validates. Any other exception, a crash, a
// sanitizer report or a broken invariant aborts the run and is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/errors.h"
#include "taskgraph/chakra_import.h"
#include "taskgraph/chakra_trace.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_chakra finding: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_order(const cs::tg::ChakraTrace& t, const std::vector<std::size_t>& order) {
  if (order.size() != t.nodes.size()) finding("the order misses nodes", std::to_string(order.size()));
  std::vector<std::size_t> position(order.size(), SIZE_MAX);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (order[k] >= order.size() || position[order[k]] != SIZE_MAX) finding("a node twice in the order", std::to_string(order[k]));
    position[order[k]] = k;
  }
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) index[t.nodes[i].id] = i;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    for (std::uint64_t d : t.nodes[i].data_deps) {
      if (position[index.at(d)] >= position[i]) finding("a node before its data dependency", std::to_string(t.nodes[i].id));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const cs::tg::ChakraTrace t = cs::tg::parse_chakra_trace(text, "fuzz.et");
    check_order(t, t.topological_order());
    try {
      t.topological_order(true);
    } catch (const cs::InputError& e) {
      if (e.json_path().rfind("node ", 0) != 0) finding("a control-order error without a node", e.message());
    }
    for (std::uint32_t world : {0u, 4u}) {
      cs::tg::ChakraImportOptions o;
      o.world = world;
      o.retime = world > 0;
      try {
        const cs::tg::ChakraImport imp = cs::tg::import_chakra(std::span(&t, 1), o);
        if (imp.report.nodes != t.nodes.size()) finding("the import report miscounts nodes", std::to_string(imp.report.nodes));
        if (imp.graph.size() + imp.report.skipped != t.nodes.size()) finding("nodes neither mapped nor skipped", std::to_string(imp.graph.size()));
      } catch (const cs::InputError& e) {
        const std::string& where = e.json_path();
        if (where.rfind("node ", 0) != 0 && where.rfind("pg_name ", 0) != 0) finding("an import error without a node or a group", where);
      }
    }
  } catch (const cs::InputError& e) {
    const std::string& where = e.json_path();
    if (where.rfind("byte ", 0) != 0 && where.rfind("node ", 0) != 0) finding("an error without a byte offset or a node", where);
  }
  return 0;
}
