// One table of names per enum, read both ways: an enum value's name for output, and the value of
// a name for input (command-line options, configuration files through ConfigNode::as_enum).
//
//   inline constexpr EnumName<Color> kColorNames[] = {{Color::kRed, "red"}, {Color::kBlue, "blue"}};
//   const char* to_string(Color c) { return enum_name(kColorNames, c); }
//   std::optional<Color> c = parse_enum(kColorNames, "blue");
//
// The order of a table is the order in which error messages list the accepted names.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cs {

template <class E>
struct EnumName {
  E value;
  std::string_view name;  // a string literal, so name.data() is null-terminated
};

// The name of `value`, or "unknown" when the table lacks it.
template <class E, std::size_t N>
constexpr const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name.data();
  }
  return "unknown";
}

template <class E, std::size_t N>
constexpr std::optional<E> parse_enum(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& e : table) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

// The names alone, in table order (for ConfigNode::expect_only over a table's names).
template <class E, std::size_t N>
constexpr std::array<std::string_view, N> enum_names(const EnumName<E> (&table)[N]) {
  std::array<std::string_view, N> names{};
  for (std::size_t i = 0; i < N; ++i) names[i] = table[i].name;
  return names;
}

// "a, b, c": the accepted names, for messages.
template <class E, std::size_t N>
std::string enum_name_list(const EnumName<E> (&table)[N], std::string_view separator = ", ") {
  std::string out;
  for (const EnumName<E>& e : table) {
    if (!out.empty()) out += separator;
    out += e.name;
  }
  return out;
}

}  // namespace cs
