#include "drivers/trace_workload.h"

#include <filesystem>

#include "core/config.h"
#include "core/errors.h"

namespace cs::drv {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The ranks' trace files: the listed ones, or PREFIX.0.et, PREFIX.1.et, ... while they exist.
std::vector<std::string> trace_files(const std::vector<std::string>& inputs) {
  if (inputs.size() > 1 || ends_with(inputs[0], ".et")) return inputs;
  std::vector<std::string> files;
  for (std::size_t r = 0;; ++r) {
    const std::string f = inputs[0] + "." + std::to_string(r) + ".et";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f, ec)) break;
    files.push_back(f);
  }
  if (files.empty()) throw InputError(inputs[0] + ".0.et", "", "no such trace file (a prefix names PREFIX.0.et, PREFIX.1.et, ...)");
  return files;
}

}  // namespace

TraceWorkload load_trace_workload(const TraceSource& source) {
  if (source.inputs.empty()) throw InputError("", "--trace", "no trace given");
  std::optional<tg::IssueOrder> issue;
  if (!source.issue.empty()) {
    issue = parse_enum(tg::kIssueOrderNames, source.issue);
    if (!issue) throw InputError("", "--issue", "expected stream_order, ready_first or dependencies, not \"" + source.issue + "\"");
  }
  if (source.inputs.size() == 1 && ends_with(source.inputs[0], ".json")) {
    if (source.world || !source.comm_groups.empty() || source.retime || source.recorded_communication || source.control_dependencies) {
      throw InputError(source.inputs[0], "", "--world, --comm-groups, --retime, --recorded-communication and --control-dependencies apply to Chakra traces, not to a TaskGraph file");
    }
    const ConfigDocument doc = ConfigDocument::load(source.inputs[0]);
    TraceWorkload w{tg::TaskGraph::from_json(doc.json(), source.inputs[0]), {source.inputs[0]}, std::nullopt};
    if (issue) w.graph.set_issue_order(*issue);
    return w;
  }
  const std::vector<std::string> files = trace_files(source.inputs);
  std::vector<tg::ChakraTrace> traces;
  traces.reserve(files.size());
  for (const std::string& f : files) traces.push_back(tg::read_chakra_trace(f));
  tg::ChakraImportOptions o;
  o.retime = source.retime;
  o.recorded_communication = source.recorded_communication;
  o.control_dependencies = source.control_dependencies;
  o.issue = issue;
  o.world = source.world;
  if (!source.comm_groups.empty()) o.comm_groups = tg::read_comm_groups(source.comm_groups);
  tg::ChakraImport imp = tg::import_chakra(traces, o);
  return TraceWorkload{std::move(imp.graph), files, std::move(imp.report)};
}

nlohmann::json import_report_json(const tg::ChakraImportReport& r) {
  nlohmann::json by_type = nlohmann::json::object();
  for (std::size_t t = 0; t < r.by_type.size(); ++t) {
    if (r.by_type[t] > 0) by_type[tg::chakra_node_type_name(t)] = r.by_type[t];
  }
  nlohmann::json unknown = nlohmann::json::object();
  for (const auto& [type, count] : r.unknown_types) unknown[std::to_string(type)] = count;
  return {{"ranks", r.ranks},
          {"nodes", r.nodes},
          {"by_type", by_type},
          {"unknown_types", unknown},
          {"became",
           {{"host_ops", r.host_ops},
            {"kernels_recorded", r.kernels_recorded},
            {"kernels_computed", r.kernels_computed},
            {"collectives", r.collectives},
            {"communication_recorded", r.communication_recorded},
            {"point_to_point", r.point_to_point},
            {"memory_ops", r.memory_ops},
            {"skipped", r.skipped}}},
          {"data_dependencies", r.data_dependencies},
          {"control_dependencies", r.control_dependencies},
          {"control_dependencies_enforced", r.control_enforced},
          {"annotations", r.annotations},
          {"groups", r.groups}};
}

}  // namespace cs::drv
