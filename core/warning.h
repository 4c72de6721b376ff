// Warnings: input values that are legal (the simulation runs) but outside what clustersim knows
// to exist, such as "200GBps" where "200Gbps" was meant (8x a known NIC rate), a switch with more
// ports than any known switch, a tensor-parallel group across servers. Library code never prints
// them: the loaders and drivers collect them (coll::Machine::warnings,
// results::TrainingRun::warnings), the front ends print one line each on stderr
// ("clustersim: warning: <file> at <path>: <message>") and list them in their JSON outputs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cs {

struct Warning {
  std::string file;       // the input file, as errors name it ("" for a command-line value)
  std::string json_path;  // RFC 6901 pointer of the value in `file`, or the option
  std::string message;    // one line, without the file and path
  bool operator==(const Warning&) const = default;
};

// "<file> at <path>: <message>" (the parts that are empty left out).
std::string to_string(const Warning& w);

// Appends `w` unless an equal warning is already listed: a file loaded several times (a scaling
// study, a validation table) warns once.
void add_warning(std::vector<Warning>& list, Warning w);
void add_warnings(std::vector<Warning>& list, const std::vector<Warning>& more);

// [{"file", "path", "message"}, ...], in list order; [] when there are none.
nlohmann::json warnings_json(const std::vector<Warning>& list);

// Sets `object`["warnings"] to warnings_json(list), `[]` when there is none: the key is always
// there, so a script reads it without a special case (docs/outputs.md).
void list_warnings_in(nlohmann::json& object, const std::vector<Warning>& list);

}  // namespace cs
