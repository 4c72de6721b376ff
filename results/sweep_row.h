// One row of a sweep's results file (docs/outputs.md, "Sweep results", schema 3): the point's
// number and parameters, its status, and the summary metrics of its training iteration. CSV and
// JSON Lines carry the same cells in the same order; a row is one line, so a results file can be
// appended to, resumed and merged line by line (drivers/sweep_output.h).
//
//   CSV:  point,<parameters...>,status,reason,<metrics...>      (a header line first)
//   JSONL {"point":0,"<parameter>":value,...,"status":"ok","reason":null,"<metric>":value,...}
//
// Numbers are written in their shortest round-trip form, so the same run gives the same bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/training_run.h"

namespace cs::results {

inline constexpr int kSweepSchemaVersion = 3;  // 2: energy and goal columns; 3: ettr

enum class RowFormat { kCsv, kJsonLines };

enum class PointStatus { kOk, kInvalid, kOutOfMemory, kError };
const char* to_string(PointStatus s);

// The columns after the parameters: "status", "reason", then the metrics, in order.
const std::vector<std::string>& sweep_result_columns();

// The cells of those columns for a point that ran, and for one that did not (metrics empty).
std::vector<nlohmann::json> sweep_result_cells(const TrainingRun& run);
std::vector<nlohmann::json> sweep_failure_cells(PointStatus status, std::string_view reason);

// The CSV header line ("point,<parameters>,<result columns>\n"); JSON Lines has none ("").
std::string sweep_header(RowFormat format, const std::vector<std::string>& parameters);

// The start of a point's row, which identifies it: its number and parameter values. A row is
// its key followed by sweep_row_rest(); a results file is checked against the keys it expects.
std::string sweep_row_key(RowFormat format, std::size_t point, const std::vector<std::string>& parameters,
                          const std::vector<nlohmann::json>& values);
std::string sweep_row_rest(RowFormat format, const std::vector<nlohmann::json>& cells);  // ends with '\n'

// Whether `line` (without its newline) is a whole row of this schema: the right number of CSV
// fields, or a JSON object with exactly the expected keys in order.
bool is_whole_sweep_row(RowFormat format, std::string_view line, std::size_t parameters);

}  // namespace cs::results
