// Writing the protobuf wire format by hand (the inverse of core/protobuf_wire.h), for building
// Chakra traces in tests and benchmarks byte by byte.
#pragma once

#include <cstdint>
#include <string>

namespace cs::test::pbw {

inline std::string varint(std::uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}
inline std::string field_varint(std::uint32_t n, std::uint64_t v) { return varint(std::uint64_t{n} << 3) + varint(v); }
inline std::string field_bytes(std::uint32_t n, const std::string& b) {
  return varint((std::uint64_t{n} << 3) | 2) + varint(b.size()) + b;
}
// A message of a length-delimited stream: its length, then its bytes.
inline std::string record(const std::string& body) { return varint(body.size()) + body; }

}  // namespace cs::test::pbw
