#include "core/errors.h"

namespace cs {
namespace {

std::string compose(const std::string& file, const std::string& path, const std::string& msg) {
  std::string where;
  // A file name of kilobytes (a generated path, a mistake) is shortened to keep the line readable.
  if (!file.empty()) where = " in " + (file.size() > 240 ? file.substr(0, 237) + "..." : file);
  if (!path.empty()) where += " at " + path;
  return "config error" + where + ": " + msg;
}

}  // namespace

InputError::InputError(std::string file, std::string json_path, std::string message)
    : std::runtime_error(compose(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

std::string escape_control(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace cs
