#include "core/errors.h"

namespace cs {
namespace {

std::string compose(const std::string& file, const std::string& path, const std::string& msg) {
  std::string where;
  if (!file.empty()) where = " in " + file;
  if (!path.empty()) where += " at " + path;
  return "config error" + where + ": " + msg;
}

}  // namespace

InputError::InputError(std::string file, std::string json_path, std::string message)
    : std::runtime_error(compose(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

}  // namespace cs
