// Field tables: the machinery behind the calibration profile's reader and writer
// (calibration/profile_io.cpp holds the tables, one per JSON object of the format). Each object's
// fields are declared once, and both directions walk that one table, so the keys read and the keys
// written cannot drift apart.
//
//   constexpr std::array kCurveFields = {
//       required<&GemmModel::t0, Seconds>("t0_s"),
//       required<&GemmModel::rate, RateOf<FlopRate>>("rate_flops_per_s")};
//   read_object<kCurveFields>(node, model);           // ConfigError naming the JSON path
//   nlohmann::json j = write_fields(model, kCurveFields);
//
// A field is a JSON key, how the key is present (Presence), and a reader and a writer: two plain
// functions that the factories below make from where the value lives in the struct (a member, two
// members, a getter for derived values) and a codec for its type. A codec C is how one value type
// looks in JSON: C::Value; `static Value read(const ConfigNode&)`, which fails at the node with
// the format's message (or `read(node, so_far)`, to check against the fields read before it); and
// `static nlohmann::json write(const Value&)`.
//
// Reading an object: its keys against the table (an unknown key is an error listing the table's
// keys in table order), then a point's status, then the other fields in table order, then the
// derived ones. The key lists and the tables are compile-time constants; a field costs two calls
// through function pointers.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/enum_names.h"
#include "core/units.h"

namespace cs::cal::fields {

using Json = nlohmann::json;

enum class Presence : std::uint8_t {
  kRequired,     // must be present; always written
  kOptional,     // may be absent (read as nothing); left out when it holds nothing (an empty
                 // std::optional or string)
  kDefaulted,    // may be absent (read as the default: an empty list, a default struct); always
                 // written
  kDerived,      // computed from other fields and written for people; on reading only checked
                 // (type and range), after every other field, and dropped
  kPointStatus,  // a measured point's status, error or timing, which decide each other: the
                 // status field reads all three, before the point's other fields
};

template <class T>
struct Field {
  using Struct = T;
  std::string_view key;
  Presence presence = Presence::kRequired;
  // Reads `key` of `object` into `out`; null for a key that another field of the table reads.
  void (*read)(const ConfigNode& object, std::string_view key, T& out) = nullptr;
  // The value to write under the key, or nothing to leave the key out.
  std::optional<Json> (*write)(const T& in) = nullptr;
};

// Two members that the JSON holds as one value (an interval [low, high]): both<&T::lo, &T::hi>.
template <auto First, auto Second>
struct MemberPair {
  static constexpr auto kFirst = First;
  static constexpr auto kSecond = Second;
};
template <auto First, auto Second>
inline constexpr MemberPair<First, Second> both{};

namespace detail {

template <class P>
struct OwnerOf;
template <class M, class C>
struct OwnerOf<M C::*> {  // a data member or a member function
  using type = C;
};
template <class R, class C>
struct OwnerOf<R (*)(const C&)> {  // a getter
  using type = C;
};
template <auto First, auto Second>
struct OwnerOf<MemberPair<First, Second>> : OwnerOf<decltype(First)> {};

template <class V>
inline constexpr bool kIsOptional = false;
template <class V>
inline constexpr bool kIsOptional<std::optional<V>> = true;

template <const auto& Fields>
using TableStruct = typename std::remove_cvref_t<decltype(Fields)>::value_type::Struct;

template <auto Place, class T>
decltype(auto) value_at(const T& in) {
  using P = std::remove_cv_t<decltype(Place)>;
  if constexpr (requires { P::kFirst; }) {
    return std::pair(in.*P::kFirst, in.*P::kSecond);
  } else {
    return (in.*Place);
  }
}

template <auto Place, class T, class V>
void store_at(T& out, V&& value) {
  using P = std::remove_cv_t<decltype(Place)>;
  if constexpr (requires { P::kFirst; }) {
    out.*P::kFirst = std::move(value.first);
    out.*P::kSecond = std::move(value.second);
  } else {
    out.*Place = std::forward<V>(value);
  }
}

}  // namespace detail

// The struct that a place (a member pointer, both<...>) or a getter belongs to.
template <auto Place>
using ClassOf = typename detail::OwnerOf<std::remove_cv_t<decltype(Place)>>::type;

// ---- reading and writing an object by its table ------------------------------------------------

template <const auto& Fields>
inline constexpr auto kKeysOf = [] {
  std::array<std::string_view, std::size(Fields)> keys{};
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = Fields[i].key;
  return keys;
}();

// Fails naming the first key of `object` that is not in the table (listing the table's keys).
template <const auto& Fields>
void check_keys(const ConfigNode& object) {
  object.expect_only(std::span<const std::string_view>(kKeysOf<Fields>));
}

// Reads the fields: a point's status first, then the others in table order, the derived ones last.
template <class T>
void read_fields(const ConfigNode& object, std::span<const Field<std::type_identity_t<T>>> fields, T& out) {
  constexpr auto stage = [](Presence p) {
    return p == Presence::kPointStatus ? 0 : p == Presence::kDerived ? 2 : 1;
  };
  for (const int s : {0, 1, 2}) {
    for (const Field<T>& f : fields) {
      if (f.read != nullptr && stage(f.presence) == s) f.read(object, f.key, out);
    }
  }
}

template <const auto& Fields>
void read_object(const ConfigNode& object, detail::TableStruct<Fields>& out) {
  check_keys<Fields>(object);
  read_fields(object, std::span(Fields), out);
}

template <class T>
Json write_fields(const T& in, std::span<const Field<std::type_identity_t<T>>> fields) {
  Json out = Json::object();
  for (const Field<T>& f : fields) {
    if (std::optional<Json> value = f.write(in)) out[std::string(f.key)] = std::move(*value);
  }
  return out;
}

// ---- codecs ------------------------------------------------------------------------------------

// The double nearest `v`, refused when not finite: JSON has no NaN or infinity (nlohmann would
// write null, which no reader takes back). InternalError: the profile's own values are wrong.
double finite(double v);

// A Duration as seconds in a double, 0 to kMaxProfileSeconds; exact to the picosecond both ways
// (profile_fields.cpp).
struct Seconds {
  using Value = Duration;
  static Duration read(const ConfigNode& n);
  static Json write(Duration d);
};

// An int from Min.
template <int Min>
struct Count {
  using Value = int;
  static int read(const ConfigNode& n) { return static_cast<int>(n.as_int(Min, std::numeric_limits<int>::max())); }
  static Json write(int v) { return v; }
};

// A GEMM dimension: an integer from 1 to 2^31 (so that 2 m n k FLOPs stay finite and exact).
struct Extent {
  using Value = std::int64_t;
  static std::int64_t read(const ConfigNode& n);
  static Json write(std::int64_t v) { return v; }
};

struct ByteCount {
  using Value = Bytes;
  static Bytes read(const ConfigNode& n);
  static Json write(Bytes b) { return b.value(); }
};

// A finite number >= 0.
struct NonNegative {
  using Value = double;
  static double read(const ConfigNode& n);
  static Json write(double v) { return finite(v); }
};

// A link efficiency: measured over the catalog's line rate, from 0.01 to 1 (above 1 the link ran
// faster than its line rate: the catalog or the point is wrong).
struct Efficiency {
  using Value = double;
  static double read(const ConfigNode& n);
  static Json write(double v) { return finite(v); }
};

// A slowdown factor (a GEMM beside a collective over alone): from 1 to 10, as the catalog's.
struct Slowdown {
  using Value = double;
  static double read(const ConfigNode& n);
  static Json write(double v) { return finite(v); }
};

// Any number (a fit's r2 may be negative).
struct Number {
  using Value = double;
  static double read(const ConfigNode& n) { return n.as_number(); }
  static Json write(double v) { return finite(v); }
};

// A rate (Bandwidth, FlopRate) in SI units, >= 0 (a measured point's: 0 when it failed).
template <class Q>
struct RateOf {
  using Value = Q;
  static Q read(const ConfigNode& n) { return Q{NonNegative::read(n)}; }
  static Json write(Q q) { return finite(q.value()); }
};

// A model's rate: > 0 (a zero rate would make every query take forever).
template <class Q>
struct PositiveRateOf {
  using Value = Q;
  static Q read(const ConfigNode& n) {
    const double v = NonNegative::read(n);
    if (!(v > 0)) n.fail_expected("a positive rate");
    return Q{v};
  }
  static Json write(Q q) { return finite(q.value()); }
};

// Two times [low, high] in seconds, 0 <= low <= high <= kMaxProfileSeconds.
struct SecondsInterval {
  using Value = std::pair<Duration, Duration>;
  static Value read(const ConfigNode& n);
  static Json write(const Value& v);
};

// Two numbers [low, high], 0 <= low <= high.
struct NonNegativeInterval {
  using Value = std::pair<double, double>;
  static Value read(const ConfigNode& n);
  static Json write(const Value& v);
};

struct Text {
  using Value = std::string;
  static std::string read(const ConfigNode& n) { return n.as_string(); }
  static Json write(const std::string& s) { return s; }
};

struct NonEmptyText {
  using Value = std::string;
  static std::string read(const ConfigNode& n);
  static Json write(const std::string& s) { return s; }
};

struct Flag {
  using Value = bool;
  static bool read(const ConfigNode& n) { return n.as_bool(); }
  static Json write(bool b) { return b; }
};

// A string from a closed vocabulary: an array of names, or an enum's name table
// (core/enum_names.h) whose names the struct keeps as strings. The error lists the names.
template <const auto& Names>
struct OneOf {
  using Value = std::string;
  static std::string read(const ConfigNode& n) {
    if constexpr (requires { Names[0].name; }) {
      return enum_name(Names, n.as_enum(Names));
    } else {
      return std::string(Names[n.as_choice(Names)]);
    }
  }
  static Json write(const std::string& s) { return s; }
};

// An enum, by its name table.
template <const auto& Names>
struct EnumOf {
  using Value = decltype(Names[0].value);
  static Value read(const ConfigNode& n) { return n.as_enum(Names); }
  static Json write(Value v) { return enum_name(Names, v); }
};

// A JSON object kept as it is (a GEMM point's cuBLASLt details).
struct FreeObject {
  using Value = Json;
  static Json read(const ConfigNode& n);
  static Json write(const Json& j) { return j; }
};

// An object of strings (the NCCL environment).
struct TextMap {
  using Value = std::map<std::string, std::string>;
  static Value read(const ConfigNode& n);
  static Json write(const Value& m) { return m; }
};

template <class C>
struct ListOf {
  using Value = std::vector<typename C::Value>;
  static Value read(const ConfigNode& n) {
    Value out;
    for (const ConfigNode& e : n.elements()) out.push_back(C::read(e));
    return out;
  }
  static Json write(const Value& v) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(C::write(e));
    return out;
  }
};

// A struct, as the JSON object its table describes.
template <const auto& Fields>
struct Object {
  using Value = detail::TableStruct<Fields>;
  static Value read(const ConfigNode& n) {
    Value v;
    read_object<Fields>(n, v);
    return v;
  }
  static Json write(const Value& v) { return write_fields(v, std::span(Fields)); }
};

// ---- fields ------------------------------------------------------------------------------------

namespace detail {

template <class C, class T>
typename C::Value read_value(const ConfigNode& n, const T& so_far) {
  if constexpr (requires { C::read(n, so_far); }) {
    return C::read(n, so_far);
  } else {
    return C::read(n);
  }
}

}  // namespace detail

// A value at `Place` (a member pointer or `both<&T::lo, &T::hi>`) written with codec C.
template <Presence P, auto Place, class C>
constexpr Field<ClassOf<Place>> member_field(std::string_view key) {
  static_assert(P == Presence::kRequired || P == Presence::kOptional || P == Presence::kDefaulted);
  using T = ClassOf<Place>;
  Field<T> f;
  f.key = key;
  f.presence = P;
  f.read = [](const ConfigNode& object, std::string_view k, T& out) {
    if constexpr (P == Presence::kRequired) {
      detail::store_at<Place>(out, detail::read_value<C>(object.at(k), out));
    } else if (const std::optional<ConfigNode> value = object.find(k)) {
      detail::store_at<Place>(out, detail::read_value<C>(*value, out));
    }
  };
  f.write = [](const T& in) -> std::optional<Json> {
    const auto& value = detail::value_at<Place>(in);
    if constexpr (P == Presence::kOptional) {
      if constexpr (detail::kIsOptional<std::remove_cvref_t<decltype(value)>>) {
        if (!value) return std::nullopt;
        return C::write(*value);
      } else {
        if (value.empty()) return std::nullopt;
        return C::write(value);
      }
    } else {
      return C::write(value);
    }
  };
  return f;
}

template <auto Place, class C>
constexpr auto required(std::string_view key) {
  return member_field<Presence::kRequired, Place, C>(key);
}
template <auto Place, class C>
constexpr auto optional(std::string_view key) {
  return member_field<Presence::kOptional, Place, C>(key);
}
template <auto Place, class C>
constexpr auto defaulted(std::string_view key) {
  return member_field<Presence::kDefaulted, Place, C>(key);
}

// A value computed by `Get` (a member function or a getter; one returning std::optional leaves
// the key out when empty), checked with codec C on reading.
template <auto Get, class C>
constexpr Field<ClassOf<Get>> derived(std::string_view key) {
  using T = ClassOf<Get>;
  Field<T> f;
  f.key = key;
  f.presence = Presence::kDerived;
  f.read = [](const ConfigNode& object, std::string_view k, T&) {
    if (const std::optional<ConfigNode> value = object.find(k)) C::read(*value);
  };
  f.write = [](const T& in) -> std::optional<Json> {
    const auto value = std::invoke(Get, in);
    if constexpr (detail::kIsOptional<std::remove_cvref_t<decltype(value)>>) {
      if (!value) return std::nullopt;
      return C::write(*value);
    } else {
      return C::write(value);
    }
  };
  return f;
}

// A required JSON object whose fields are the struct's own (a GEMM model's "curve").
template <const auto& Fields>
constexpr Field<detail::TableStruct<Fields>> group(std::string_view key) {
  using T = detail::TableStruct<Fields>;
  return {key, Presence::kRequired,
          [](const ConfigNode& object, std::string_view k, T& out) { read_object<Fields>(object.at(k), out); },
          [](const T& in) -> std::optional<Json> { return write_fields(in, std::span(Fields)); }};
}

namespace detail {

template <auto Member, const auto& Fields, std::size_t I>
constexpr Field<ClassOf<Member>> spliced_field() {
  using T = ClassOf<Member>;
  return {Fields[I].key, Fields[I].presence,
          [](const ConfigNode& object, std::string_view k, T& out) { Fields[I].read(object, k, out.*Member); },
          [](const T& in) { return Fields[I].write(in.*Member); }};
}

}  // namespace detail

// The fields of the struct at `Member`, with their keys in the containing object (a GEMM point's
// shape: its dtype, m, n, k beside the point's other keys).
template <auto Member, const auto& Fields>
constexpr auto spliced() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array{detail::spliced_field<Member, Fields, I>()...};
  }(std::make_index_sequence<std::size(Fields)>{});
}

// BaseField, a field of a base class of T, in T's table (a measured point's status fields).
template <class T, const auto& BaseField>
constexpr Field<T> inherited() {
  Field<T> f{BaseField.key, BaseField.presence, nullptr,
             [](const T& in) { return BaseField.write(in); }};
  if constexpr (BaseField.read != nullptr) {
    f.read = [](const ConfigNode& object, std::string_view k, T& out) { BaseField.read(object, k, out); };
  }
  return f;
}

// The tables one after another.
template <class T, std::size_t... N>
constexpr std::array<Field<T>, (N + ...)> concat(const std::array<Field<T>, N>&... tables) {
  std::array<Field<T>, (N + ...)> out{};
  auto at = out.begin();
  ((at = std::copy(tables.begin(), tables.end(), at)), ...);
  return out;
}

}  // namespace cs::cal::fields
