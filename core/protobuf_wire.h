// Reading and writing the protobuf wire format (protobuf.dev/programming-guides/encoding), for
// inputs and outputs that are protobuf messages (Chakra execution traces). A message is a sequence of fields, each a key
// varint (field number << 3 | wire type) and a value:
//   0 VARINT  a base-128 varint, least significant group first, at most 10 bytes
//   1 I64     8 bytes, little-endian
//   2 LEN     a varint length, then that many bytes (strings, bytes, sub-messages, packed lists)
//   5 I32     4 bytes, little-endian
// Groups (wire types 3 and 4, deprecated) and types 6-7 are errors. Every error names the file
// and the byte offset where the bad value starts ("byte 1234"): an InputError, exit 2. Nothing is
// copied: fields point into the caller's buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cs::pb {

enum class WireType : std::uint8_t { kVarint = 0, kI64 = 1, kLen = 2, kI32 = 5 };

struct Field {
  std::uint32_t number = 0;
  WireType type = WireType::kVarint;
  std::uint64_t value = 0;   // VARINT, I64, I32: the raw bits
  std::string_view bytes;    // LEN: the payload
  std::uint64_t offset = 0;  // of the field's key, from the start of the file
  std::uint64_t payload = 0; // LEN: of the payload's first byte
};

class Reader {
 public:
  // `data` starts at byte `offset` of `file` (for error messages).
  Reader(std::string_view data, std::uint64_t offset, const std::string& file) : data_(data), base_(offset), file_(&file) {}

  bool done() const { return pos_ >= data_.size(); }
  std::uint64_t offset() const { return base_ + pos_; }  // of the next byte
  // The next field; an InputError on a truncated or malformed one.
  Field next();
  // A varint at the current position (the framing of length-delimited streams).
  std::uint64_t varint();
  // The next `n` bytes, after checking that they are there.
  std::string_view take(std::uint64_t n, const char* what);

  // A packed list of varints (the payload of a LEN field), or one varint field's value.
  static std::vector<std::uint64_t> varints(const Field& f, const std::string& file);
  [[noreturn]] void fail(std::uint64_t offset, const std::string& why) const;

 private:
  std::string_view data_;
  std::uint64_t base_;
  const std::string* file_;
  std::size_t pos_ = 0;
};

// Writing: a value's bytes, appended to `out` (clustersim's Chakra export, and tests that build
// traces byte by byte).
void put_varint(std::string& out, std::uint64_t v);
void put_varint_field(std::string& out, std::uint32_t number, std::uint64_t v);
void put_bytes_field(std::string& out, std::uint32_t number, std::string_view bytes);
// A message of a length-delimited stream: its length, then its bytes.
void put_record(std::string& out, std::string_view message);

// ZigZag decoding of sint32/sint64 values.
constexpr std::int64_t zigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

}  // namespace cs::pb
