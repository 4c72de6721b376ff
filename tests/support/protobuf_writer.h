// Protobuf fields as strings (core/protobuf_wire.h's writers), for building Chakra traces in
// tests and benchmarks byte by byte.
#pragma once

#include <cstdint>
#include <string>

#include "core/protobuf_wire.h"

namespace cs::test::pbw {

inline std::string varint(std::uint64_t v) {
  std::string out;
  pb::put_varint(out, v);
  return out;
}
inline std::string field_varint(std::uint32_t n, std::uint64_t v) {
  std::string out;
  pb::put_varint_field(out, n, v);
  return out;
}
inline std::string field_bytes(std::uint32_t n, const std::string& b) {
  std::string out;
  pb::put_bytes_field(out, n, b);
  return out;
}
inline std::string record(const std::string& body) {
  std::string out;
  pb::put_record(out, body);
  return out;
}

}  // namespace cs::test::pbw
