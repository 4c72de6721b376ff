// Reading and importing Chakra execution traces (docs/performance.md, "Chakra traces"): nodes
// read (parsed and ordered) and imported (read, then mapped onto a TaskGraph) per second
// of the MLCommons sample (tests/data/chakra/sample.0.et: 3,664 nodes, 2.98 MB, 50 data
// dependencies and long shape strings per node) and of a synthetic trace of 10^6 small nodes (a
// compute chain with one data dependency and two attributes each), in memory. Reports, never
// asserts.
#include <chrono>
#include <cstdio>
#include <string>

#include "core/huge_pages.h"
#include "core/input_file.h"
#include "taskgraph/chakra_import.h"
#include "taskgraph/chakra_trace.h"
#include "tests/support/protobuf_writer.h"

namespace {

using cs::test::pbw::field_bytes;
using cs::test::pbw::field_varint;
using cs::test::pbw::record;
using cs::test::pbw::varint;

void report(const char* name, const std::string& data, int repeats, bool import) {
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t nodes = 0;
  for (int i = 0; i < repeats; ++i) {
    const cs::tg::ChakraTrace t = cs::tg::parse_chakra_trace(data, name);
    if (import) {
      nodes += cs::tg::import_chakra(std::span(&t, 1), {}).graph.size();
    } else {
      nodes += t.topological_order().size();
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const char* what = import ? "import" : "read";
  std::printf("chakra %s %s: %zu nodes (%.1f MB) x %d in %.3f s: %.2f M nodes/s, %.0f MB/s\n", what, name, nodes / static_cast<std::size_t>(repeats),
              static_cast<double>(data.size()) / 1e6, repeats, wall, static_cast<double>(nodes) / wall / 1e6,
              static_cast<double>(data.size()) * repeats / wall / 1e6);
  std::printf("{\"bench\":\"chakra_%s\",\"case\":\"%s\",\"nodes\":%zu,\"bytes\":%zu,\"wall_s\":%.4f}\n", what, name,
              nodes / static_cast<std::size_t>(repeats), data.size(), wall / repeats);
}

}  // namespace

int main(int, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  const std::string sample = cs::read_input_file(std::string(CS_SOURCE_DIR) + "/tests/data/chakra/sample.0.et");
  report("mlcommons-sample", sample, 20, false);
  report("mlcommons-sample", sample, 20, true);
  std::string synthetic = record(field_bytes(1, "0.0.4"));
  const std::string attrs = field_bytes(10, field_bytes(1, "num_ops") + field_varint(9, 1 << 30)) +
                            field_bytes(10, field_bytes(1, "tensor_size") + field_varint(9, 1 << 20));
  for (std::uint64_t id = 0; id < 1000000; ++id) {
    std::string n = field_varint(1, id) + field_bytes(2, "gemm") + field_varint(3, 4) + field_varint(7, 10);
    if (id > 0) n += field_bytes(5, varint(id - 1));
    synthetic += record(n + attrs);
  }
  report("synthetic-1M", synthetic, 3, false);
  report("synthetic-1M", synthetic, 3, true);
  return 0;
}
