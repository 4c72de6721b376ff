// Reading configuration files with errors that name the file and the JSON path.
//
//   ConfigDocument doc = ConfigDocument::load("cluster.json");
//   ConfigNode root = doc.root();
//   root.expect_only({"name", "links"});               // unknown keys are errors
//   Bandwidth bw = root.at("links").at(3).at("bandwidth").as_bandwidth();
//
// A failure throws ConfigError whose message reads
//   config error in cluster.json at /links/3/bandwidth: expected a bandwidth such as "400Gbps"; got the number 400
// Three stages keep errors early and testable: parse (JSON -> typed specs, here), validate
// (cross-field checks, in each module's spec code), build (specs -> runtime objects).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/errors.h"
#include "core/unit_parse.h"
#include "core/units.h"

namespace cs {

class ConfigNode {
 public:
  ConfigNode(const nlohmann::json* value, std::shared_ptr<const std::string> file, std::string path);

  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }  // RFC 6901 pointer; "" is the root
  const nlohmann::json& json() const { return *value_; }

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_string() const { return value_->is_string(); }
  bool is_number() const { return value_->is_number(); }

  // Object members. at() fails when the key is missing; find() returns nothing.
  ConfigNode at(std::string_view key) const;
  std::optional<ConfigNode> find(std::string_view key) const;
  bool has(std::string_view key) const;
  std::vector<std::pair<std::string, ConfigNode>> members() const;
  // Fails naming the first key not in `allowed` (and listing the allowed ones).
  void expect_only(std::initializer_list<std::string_view> allowed) const;
  void expect_only(std::span<const std::string_view> allowed) const;

  // Array elements.
  ConfigNode at(std::size_t index) const;
  std::size_t size() const;  // of an array (fails on anything else)
  std::vector<ConfigNode> elements() const;

  // Scalars.
  std::string as_string() const;
  bool as_bool() const;
  std::int64_t as_int() const;
  std::int64_t as_int(std::int64_t min, std::int64_t max) const;  // range-checked
  double as_number() const;
  Bytes as_bytes() const;
  Bandwidth as_bandwidth() const;
  // A latency by default: at most 1 s (unit_parse.h, kMaxLatency); other durations name their
  // own maximum.
  Duration as_duration(Duration max = kMaxLatency) const;
  FlopRate as_flop_rate() const;
  Flops as_flops() const;
  // One of `names`; the error lists them. Returns the index of the match.
  std::size_t as_choice(std::initializer_list<std::string_view> names) const;
  std::size_t as_choice(std::span<const std::string_view> names) const;
  // One of the names of an enum's name table (core/enum_names.h), as the enum's value.
  template <class E, std::size_t N>
  E as_enum(const EnumName<E> (&table)[N]) const {
    const std::array<std::string_view, N> names = enum_names(table);
    return table[as_choice(std::span<const std::string_view>(names))].value;
  }

  // Throws ConfigError at this node: "expected <expected>; got <what is here>".
  [[noreturn]] void fail_expected(std::string_view expected) const;
  // Throws ConfigError at this node with a free message.
  [[noreturn]] void fail(std::string_view message) const;

 private:
  std::string describe_value() const;
  const nlohmann::json* value_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

// Owns a parsed JSON document and the file name errors report.
class ConfigDocument {
 public:
  // Reads and parses a file; unreadable files, files larger than limits().file_bytes, broken JSON,
  // a NUL byte and a duplicate key are ConfigErrors naming the line or the path.
  static ConfigDocument load(const std::string& path);
  // The same, then "--set /json/pointer=value" overrides applied in order (apply_override).
  static ConfigDocument load(const std::string& path, const std::vector<std::string>& overrides);
  // Parses text; `name` is what errors call the file.
  static ConfigDocument parse(std::string_view text, std::string name);
  // Wraps an already-built value (generated configurations, tests).
  static ConfigDocument from_json(nlohmann::json value, std::string name);

  ConfigNode root() const;
  const std::string& name() const { return *file_; }
  const nlohmann::json& json() const { return *value_; }

 private:
  ConfigDocument(std::shared_ptr<const nlohmann::json> value, std::shared_ptr<const std::string> file);
  std::shared_ptr<const nlohmann::json> value_;
  std::shared_ptr<const std::string> file_;
};

// Appends an RFC 6901-escaped token to a JSON pointer.
std::string json_pointer_append(const std::string& pointer, std::string_view token);

// Applies "--set /json/pointer=value" overrides to a document; the value is parsed as JSON when it
// is valid JSON and taken as a string otherwise. A pointer whose parent does not exist is an error.
void apply_override(nlohmann::json& document, const std::string& file, std::string_view assignment);

}  // namespace cs
