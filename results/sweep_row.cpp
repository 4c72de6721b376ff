#include "results/sweep_row.h"

#include <array>

#include "results/report_input.h"
#include "results/stall_attribution.h"
#include "results/summary.h"

namespace cs::results {
namespace {

// Link tiers as summary.json names them (network.bytes_by_tier).
constexpr std::array<const char*, 4> kTierColumns = {"bytes_in_server", "bytes_endpoint_leaf", "bytes_leaf_spine", "bytes_spine_core"};

std::vector<std::string> make_columns() {
  std::vector<std::string> c = {"status", "reason", "cluster", "model", "gpus", "iteration_time_s", "samples_per_s",
                                "tokens_per_s", "tflops_per_gpu", "mfu", "memory_per_gpu_bytes", "memory_capacity_bytes"};
  for (int k = 0; k < kStallCount; ++k) c.push_back(std::string(to_string(static_cast<Stall>(k))) + "_s");
  for (const char* t : kTierColumns) c.emplace_back(t);
  for (const char* m : {"dominant_stall", "dominant_stall_share", "warnings"}) c.emplace_back(m);
  // Schema 2: energy and, with a goal, time and cost to train (docs/cost-model.md).
  for (const char* m : {"energy_per_iteration_j", "average_power_w", "time_to_train_s", "energy_to_train_j",
                        "cost_to_train_usd", "tokens_per_usd"}) {
    c.emplace_back(m);
  }
  // Schema 3: with an "availability" in the base experiment, the simulated ETTR and the time to
  // train with failures (summary.json "availability"; docs/availability.md).
  for (const char* m : {"ettr", "effective_time_to_train_s"}) c.emplace_back(m);
  return c;
}

// A CSV field (csv_quoted); empty for null.
std::string csv_field(const nlohmann::json& v) {
  if (v.is_null()) return "";
  return csv_quoted(v.is_string() ? v.get<std::string>() : v.dump());
}

// Fields of a CSV line, or -1 when a quoted field is not closed.
long csv_field_count(std::string_view line) {
  long fields = 1;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') ++i;
        else quoted = false;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      ++fields;
    }
  }
  return quoted ? -1 : fields;
}

}  // namespace

const char* to_string(PointStatus s) {
  switch (s) {
    case PointStatus::kOk: return "ok";
    case PointStatus::kInvalid: return "invalid";
    case PointStatus::kOutOfMemory: return "out_of_memory";
    case PointStatus::kError: return "error";
  }
  return "error";
}

const std::vector<std::string>& sweep_result_columns() {
  static const std::vector<std::string> columns = make_columns();
  return columns;
}

std::vector<nlohmann::json> sweep_result_cells(const TrainingRun& run) {
  const IterationResult& r = run.result;
  std::vector<nlohmann::json> c = {to_string(PointStatus::kOk), nullptr, run.cluster.name(), run.model.name, r.gpus,
                                   to_seconds(r.iteration), r.samples_per_s, r.tokens_per_s, r.tflops_per_gpu, r.mfu,
                                   r.memory.total.value(), r.memory.capacity.value()};
  for (double s : mean_stall_seconds(run.stalls)) c.emplace_back(s);
  for (std::int64_t b : bytes_by_tier(run)) c.emplace_back(b);
  c.emplace_back(r.largest_stall.stall ? nlohmann::json(to_string(*r.largest_stall.stall)) : nlohmann::json(nullptr));
  c.emplace_back(r.largest_stall.share);
  c.emplace_back(run.warnings.size());
  const auto& e = run.energy;
  const cost::GoalCost* g = e && e->goal ? &*e->goal : nullptr;
  c.emplace_back(e ? nlohmann::json(e->iteration.facility.value()) : nlohmann::json(nullptr));
  c.emplace_back(e ? nlohmann::json(e->iteration.average_power.value()) : nlohmann::json(nullptr));
  c.emplace_back(g ? nlohmann::json(g->seconds) : nlohmann::json(nullptr));
  c.emplace_back(g ? nlohmann::json(g->energy.value()) : nlohmann::json(nullptr));
  c.emplace_back(g ? nlohmann::json(g->cost().value()) : nlohmann::json(nullptr));
  c.emplace_back(g ? nlohmann::json(g->tokens_per_dollar()) : nlohmann::json(nullptr));
  const auto& a = run.availability;
  c.emplace_back(a ? nlohmann::json(a->ettr_simulated) : nlohmann::json(nullptr));
  c.emplace_back(a && a->effective_time_to_train_s ? nlohmann::json(*a->effective_time_to_train_s) : nlohmann::json(nullptr));
  return c;
}

std::vector<nlohmann::json> sweep_failure_cells(PointStatus status, std::string_view reason) {
  std::vector<nlohmann::json> c(sweep_result_columns().size(), nullptr);
  c[0] = to_string(status);
  c[1] = std::string(reason);
  return c;
}

std::string sweep_header(RowFormat format, const std::vector<std::string>& parameters) {
  if (format == RowFormat::kJsonLines) return "";
  std::string line = "point";
  for (const std::string& p : parameters) line += "," + csv_field(p);
  for (const std::string& c : sweep_result_columns()) line += "," + c;
  return line + "\n";
}

std::string sweep_row_key(RowFormat format, std::size_t point, const std::vector<std::string>& parameters,
                          const std::vector<nlohmann::json>& values) {
  std::string key;
  if (format == RowFormat::kCsv) {
    key = std::to_string(point);
    for (const nlohmann::json& v : values) key += "," + csv_field(v);
    return key;
  }
  key = "{\"point\":" + std::to_string(point);
  for (std::size_t i = 0; i < parameters.size(); ++i) key += "," + nlohmann::json(parameters[i]).dump() + ":" + values[i].dump();
  return key;
}

std::string sweep_row_rest(RowFormat format, const std::vector<nlohmann::json>& cells) {
  const std::vector<std::string>& columns = sweep_result_columns();
  std::string rest;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    rest += ",";
    rest += format == RowFormat::kCsv ? csv_field(cells[i]) : nlohmann::json(columns[i]).dump() + ":" + cells[i].dump();
  }
  return rest + (format == RowFormat::kCsv ? "\n" : "}\n");
}

bool is_whole_sweep_row(RowFormat format, std::string_view line, std::size_t parameters) {
  const std::size_t expected = 1 + parameters + sweep_result_columns().size();
  if (format == RowFormat::kCsv) return csv_field_count(line) == static_cast<long>(expected);
  const nlohmann::json row = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  return row.is_object() && row.size() == expected;
}

}  // namespace cs::results
