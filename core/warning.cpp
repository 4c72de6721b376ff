#include "core/warning.h"

#include <algorithm>

namespace cs {

std::string to_string(const Warning& w) {
  std::string where = w.file;
  if (!w.json_path.empty()) where += (where.empty() ? "at " : " at ") + w.json_path;
  return where.empty() ? w.message : where + ": " + w.message;
}

void add_warning(std::vector<Warning>& list, Warning w) {
  if (std::find(list.begin(), list.end(), w) == list.end()) list.push_back(std::move(w));
}

void add_warnings(std::vector<Warning>& list, const std::vector<Warning>& more) {
  for (const Warning& w : more) add_warning(list, w);
}

nlohmann::json warnings_json(const std::vector<Warning>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const Warning& w : list) out.push_back({{"file", w.file}, {"path", w.json_path}, {"message", w.message}});
  return out;
}

void list_warnings_in(nlohmann::json& object, const std::vector<Warning>& list) {
  object["warnings"] = warnings_json(list);
}

}  // namespace cs
