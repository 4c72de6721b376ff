// Command-line rules shared by clustersim and clustersim-calibrate (docs/cli.md):
//  - an option given an empty value ("--out ''", "--model ''") is an error, never "not given";
//  - errors and warnings are printed on one line with control bytes escaped (escape_control).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace cs::cli {

// Throws CLI::ValidationError naming the first option of a parsed (sub)command whose value is
// an empty string. Flags are exempt: they take no value.
inline void reject_empty_values(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0) continue;  // a flag
    for (const std::string& v : opt->results()) {
      if (v.empty()) {
        const std::string name = opt->get_name().empty() ? opt->get_name(true, true) : opt->get_name();
        throw CLI::ValidationError(name, "expected a value; got an empty string");
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) reject_empty_values(*sub);
}

}  // namespace cs::cli
