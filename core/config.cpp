#include "core/config.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "core/input_file.h"
#include "core/unit_parse.h"

namespace cs {

std::string json_pointer_append(const std::string& pointer, std::string_view token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

ConfigNode::ConfigNode(const nlohmann::json* value, std::shared_ptr<const std::string> file,
                       std::string path)
    : value_(value), file_(std::move(file)), path_(std::move(path)) {}

std::string ConfigNode::describe_value() const {
  const auto& v = *value_;
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return std::string("the boolean ") + (v.get<bool>() ? "true" : "false");
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "the number " + v.dump();
    case nlohmann::json::value_t::string: {
      std::string s = v.dump();
      if (s.size() > 60) s = s.substr(0, 57) + "...\"";
      return "the string " + s;
    }
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

void ConfigNode::fail_expected(std::string_view expected) const {
  throw ConfigError(*file_, path_.empty() ? "/" : path_,
                    "expected " + std::string(expected) + "; got " + describe_value());
}

void ConfigNode::fail(std::string_view message) const {
  throw ConfigError(*file_, path_.empty() ? "/" : path_, std::string(message));
}

ConfigNode ConfigNode::at(std::string_view key) const {
  if (!value_->is_object()) fail_expected("an object");
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing required key \"" + std::string(key) + "\"");
  return ConfigNode(&*it, file_, json_pointer_append(path_, key));
}

std::optional<ConfigNode> ConfigNode::find(std::string_view key) const {
  if (!value_->is_object()) fail_expected("an object");
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return ConfigNode(&*it, file_, json_pointer_append(path_, key));
}

bool ConfigNode::has(std::string_view key) const { return find(key).has_value(); }

std::vector<std::pair<std::string, ConfigNode>> ConfigNode::members() const {
  if (!value_->is_object()) fail_expected("an object");
  std::vector<std::pair<std::string, ConfigNode>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.emplace_back(it.key(), ConfigNode(&it.value(), file_, json_pointer_append(path_, it.key())));
  }
  return out;
}

void ConfigNode::expect_only(std::initializer_list<std::string_view> allowed) const {
  expect_only(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void ConfigNode::expect_only(std::span<const std::string_view> allowed) const {
  if (!value_->is_object()) fail_expected("an object");
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    bool ok = false;
    for (auto a : allowed) ok = ok || a == it.key();
    if (ok) continue;
    std::string list;
    for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw ConfigError(*file_, json_pointer_append(path_, it.key()),
                      "unknown key \"" + it.key() + "\" (allowed: " + list + ")");
  }
}

ConfigNode ConfigNode::at(std::size_t index) const {
  if (!value_->is_array()) fail_expected("an array");
  if (index >= value_->size()) fail("index " + std::to_string(index) + " is out of range");
  return ConfigNode(&(*value_)[index], file_, path_ + "/" + std::to_string(index));
}

std::size_t ConfigNode::size() const {
  if (!value_->is_array()) fail_expected("an array");
  return value_->size();
}

std::vector<ConfigNode> ConfigNode::elements() const {
  const std::size_t n = size();
  std::vector<ConfigNode> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(at(i));
  return out;
}

std::string ConfigNode::as_string() const {
  if (!value_->is_string()) fail_expected("a string");
  return value_->get<std::string>();
}

bool ConfigNode::as_bool() const {
  if (!value_->is_boolean()) fail_expected("true or false");
  return value_->get<bool>();
}

std::int64_t ConfigNode::as_int() const {
  if (value_->is_number_integer() && !value_->is_number_unsigned()) return value_->get<std::int64_t>();
  if (value_->is_number_unsigned() && value_->get<std::uint64_t>() <= INT64_MAX) {
    return static_cast<std::int64_t>(value_->get<std::uint64_t>());
  }
  fail_expected("an integer");
}

std::int64_t ConfigNode::as_int(std::int64_t min, std::int64_t max) const {
  const std::int64_t v = as_int();
  if (v < min || v > max) {
    fail_expected("an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return v;
}

double ConfigNode::as_number() const {
  if (!value_->is_number()) fail_expected("a number");
  return value_->get<double>();
}

namespace {
template <class F>
auto parse_unit_string(const ConfigNode& node, std::string_view expected, F parse) {
  if (!node.is_string()) node.fail_expected(expected);
  try {
    return parse(node.json().get_ref<const std::string&>());
  } catch (const UnitParseError& e) {
    node.fail(e.what());
  }
}
}  // namespace

Bytes ConfigNode::as_bytes() const {
  return parse_unit_string(*this, "a size such as \"80GiB\"", parse_bytes);
}
Bandwidth ConfigNode::as_bandwidth() const {
  return parse_unit_string(*this, "a bandwidth such as \"400Gbps\"", parse_bandwidth);
}
Duration ConfigNode::as_duration(Duration max) const {
  const Duration d = parse_unit_string(*this, "a duration such as \"1.5us\"", parse_duration);
  if (d > max) fail("duration " + json().dump() + " is out of range (at most " + format_duration(max) + ")");
  return d;
}
FlopRate ConfigNode::as_flop_rate() const {
  return parse_unit_string(*this, "a FLOP rate such as \"989TFLOP/s\"", parse_flop_rate);
}
Flops ConfigNode::as_flops() const {
  return parse_unit_string(*this, "a FLOP count such as \"3.2PFLOP\"", parse_flops);
}

std::size_t ConfigNode::as_choice(std::initializer_list<std::string_view> names) const {
  return as_choice(std::span<const std::string_view>(names.begin(), names.size()));
}

std::size_t ConfigNode::as_choice(std::span<const std::string_view> names) const {
  std::string list;
  for (auto n : names) list += (list.empty() ? "\"" : ", \"") + std::string(n) + "\"";
  if (!value_->is_string()) fail_expected("one of " + list);
  const auto& s = value_->get_ref<const std::string&>();
  std::size_t i = 0;
  for (auto n : names) {
    if (n == s) return i;
    ++i;
  }
  fail_expected("one of " + list);
}

ConfigDocument::ConfigDocument(std::shared_ptr<const nlohmann::json> value,
                               std::shared_ptr<const std::string> file)
    : value_(std::move(value)), file_(std::move(file)) {}

ConfigDocument ConfigDocument::load(const std::string& path, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return load(path);
  nlohmann::json json = load(path).json();
  for (const std::string& o : overrides) apply_override(json, path, o);
  return from_json(std::move(json), path);
}

namespace {

// Line and column (1-based) of byte `offset` of `text`, for people.
std::string line_and_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// Where the parser is, for the JSON pointer of a duplicate key: one frame per open object or
// array, holding the keys seen so far (objects) or the index of the current element (arrays).
constexpr int kMaxJsonDepth = 64;

struct ParseFrame {
  bool object = false;
  std::vector<std::string> keys;
  std::string key;
  std::int64_t index = -1;
};

std::string pointer_of(const std::vector<ParseFrame>& frames) {
  std::string p;
  for (const ParseFrame& f : frames) {
    if (f.object) {
      if (!f.key.empty() || !f.keys.empty()) p = json_pointer_append(p, f.key);
    } else if (f.index >= 0) {
      p += "/" + std::to_string(f.index);
    }
  }
  return p;
}

}  // namespace

ConfigDocument ConfigDocument::parse(std::string_view text, std::string name) {
  // nlohmann's reader stops at a NUL byte as at the end of the text: refuse it instead.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw ConfigError(name, "/", "invalid JSON: a NUL byte at " + line_and_column(text, nul));
  }
  // Duplicate keys: nlohmann keeps the last; a file that says two things is refused.
  std::vector<ParseFrame> frames;
  std::string duplicate;
  using Event = nlohmann::json::parse_event_t;
  const auto element_starts = [&frames] {
    if (!frames.empty() && !frames.back().object) ++frames.back().index;
  };
  // Depth is capped: a 40 MB file of nested brackets took 3.6 GB (docs/cli.md, "Limits").
  struct TooDeep {};
  nlohmann::json::parser_callback_t track = [&](int depth, Event event, nlohmann::json& value) {
    if (depth > kMaxJsonDepth) throw TooDeep{};
    switch (event) {
      case Event::object_start:
        element_starts();
        frames.push_back({true, {}, {}, -1});
        break;
      case Event::array_start:
        element_starts();
        frames.push_back({false, {}, {}, -1});
        break;
      case Event::object_end:
      case Event::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case Event::key: {
        ParseFrame& f = frames.back();
        std::string key = value.get<std::string>();
        if (duplicate.empty() && std::find(f.keys.begin(), f.keys.end(), key) != f.keys.end()) {
          f.key = key;
          duplicate = pointer_of(frames);
        }
        f.keys.push_back(key);
        f.key = std::move(key);
        break;
      }
      case Event::value:
        element_starts();
        break;
    }
    return true;
  };
  try {
    auto j = nlohmann::json::parse(text.begin(), text.end(), track, /*allow_exceptions=*/true,
                                   /*ignore_comments=*/false);
    if (!duplicate.empty()) throw ConfigError(name, duplicate, "duplicate key (JSON objects name each key once)");
    return from_json(std::move(j), std::move(name));
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into line and column for people.
    throw ConfigError(name, "/", "invalid JSON at " + line_and_column(text, e.byte > 0 ? e.byte - 1 : 0));
  } catch (const nlohmann::json::out_of_range&) {
    // A number beyond the range of a double ("1e400"); nlohmann gives no position for it.
    throw ConfigError(name, "/", "invalid JSON: a number is out of range");
  } catch (const TooDeep&) {
    throw ConfigError(name, pointer_of(frames), "nested more than " + std::to_string(kMaxJsonDepth) + " levels deep (configuration files need a few)");
  }
}

ConfigDocument ConfigDocument::from_json(nlohmann::json value, std::string name) {
  return ConfigDocument(std::make_shared<const nlohmann::json>(std::move(value)),
                        std::make_shared<const std::string>(std::move(name)));
}

ConfigDocument ConfigDocument::load(const std::string& path) { return parse(read_input_file(path), path); }

ConfigNode ConfigDocument::root() const { return ConfigNode(value_.get(), file_, ""); }

void apply_override(nlohmann::json& document, const std::string& file, std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || assignment.empty() || assignment.front() != '/') {
    throw ConfigError(file, "--set", "an override must read /json/pointer=value; got \"" +
                                         std::string(assignment) + "\"");
  }
  const std::string pointer(assignment.substr(0, eq));
  const std::string text(assignment.substr(eq + 1));
  nlohmann::json value;
  try {
    value = ConfigDocument::parse(text, file).json();
  } catch (const ConfigError& e) {
    // Not JSON: a string. JSON that names a key twice is refused, as in a file.
    if (e.json_path() != "/") throw ConfigError(file, pointer + e.json_path(), e.message());
    value = text;
  }
  try {
    nlohmann::json::json_pointer ptr(pointer);
    if (!document.contains(ptr.parent_pointer())) {
      throw ConfigError(file, pointer, "cannot override: the parent of this path does not exist");
    }
    // nlohmann pads an array with nulls up to the index ("/links/1000000000" allocates 16 GB):
    // an index may name an element or the end of the array, no further.
    if (document.at(ptr.parent_pointer()).is_array()) {
      const std::string& token = ptr.back();
      std::uint64_t index = 0;
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec == std::errc::result_out_of_range ||
          (ec == std::errc{} && end == token.data() + token.size() &&
           index > document.at(ptr.parent_pointer()).size())) {
        throw ConfigError(file, pointer, "cannot override: index " + token + " is past the end of the array");
      }
    }
    document[ptr] = std::move(value);
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(file, pointer, "cannot override this path");
  }
}

}  // namespace cs
