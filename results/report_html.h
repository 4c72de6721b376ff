// `clustersim report INPUT` (docs/report.md): one self-contained HTML page of charts and tables
// from what clustersim wrote. The kind of input is told from its content (results/report_kinds.h):
// a `clustersim run --out` folder or a sweep's results file (CSV or JSON Lines). Bad input is an
// InputError naming the file and the JSON path or line; nothing is written by this layer.
#pragma once

#include <string>

namespace cs::results {

// The whole HTML page for the input at `path`.
std::string report_html(const std::string& path);

}  // namespace cs::results
