#include "core/protobuf_wire.h"

#include "core/errors.h"

namespace cs::pb {

void Reader::fail(std::uint64_t offset, const std::string& why) const {
  throw InputError(*file_, "byte " + std::to_string(offset), why);
}

std::uint64_t Reader::varint() {
  const std::uint64_t start = offset();
  std::uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= data_.size()) fail(start, "a truncated varint (the data ends inside it)");
    const auto b = static_cast<std::uint8_t>(data_[pos_++]);
    if (shift == 63 && (b & 0x7e) != 0) fail(start, "a varint wider than 64 bits");
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  fail(start, "a varint longer than 10 bytes");
}

std::string_view Reader::take(std::uint64_t n, const char* what) {
  if (n > data_.size() - pos_) {
    fail(offset(), std::string(what) + " of " + std::to_string(n) + " bytes runs past the end (" +
                       std::to_string(data_.size() - pos_) + " left)");
  }
  const std::string_view out = data_.substr(pos_, static_cast<std::size_t>(n));
  pos_ += static_cast<std::size_t>(n);
  return out;
}

Field Reader::next() {
  Field f;
  f.offset = offset();
  const std::uint64_t key = varint();
  const auto type = static_cast<unsigned>(key & 7);
  if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) fail(f.offset, "a field number out of range (" + std::to_string(key >> 3) + ")");
  f.number = static_cast<std::uint32_t>(key >> 3);
  auto little_endian = [&](int n) {
    const std::string_view b = take(static_cast<std::uint64_t>(n), "a fixed-width value");
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(b[static_cast<std::size_t>(i)]);
    return v;
  };
  switch (type) {
    case 0:
      f.type = WireType::kVarint;
      f.value = varint();
      break;
    case 1:
      f.type = WireType::kI64;
      f.value = little_endian(8);
      break;
    case 2: {
      f.type = WireType::kLen;
      const std::uint64_t n = varint();
      f.payload = offset();
      f.bytes = take(n, "a length-delimited field");
      break;
    }
    case 5:
      f.type = WireType::kI32;
      f.value = little_endian(4);
      break;
    default:
      fail(f.offset, "wire type " + std::to_string(type) + " of field " + std::to_string(f.number) +
                         " (groups and unknown types are not protobuf 3)");
  }
  return f;
}

std::vector<std::uint64_t> Reader::varints(const Field& f, const std::string& file) {
  if (f.type == WireType::kVarint) return {f.value};
  if (f.type != WireType::kLen) {
    throw InputError(file, "byte " + std::to_string(f.offset), "field " + std::to_string(f.number) + ": expected varints");
  }
  Reader r(f.bytes, f.payload, file);
  std::vector<std::uint64_t> out;
  while (!r.done()) out.push_back(r.varint());
  return out;
}

void put_varint(std::string& out, std::uint64_t v) {
  do {
    out += static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
}

void put_varint_field(std::string& out, std::uint32_t number, std::uint64_t v) {
  put_varint(out, std::uint64_t{number} << 3);
  put_varint(out, v);
}

void put_bytes_field(std::string& out, std::uint32_t number, std::string_view bytes) {
  put_varint(out, (std::uint64_t{number} << 3) | 2);
  put_varint(out, bytes.size());
  out += bytes;
}

void put_record(std::string& out, std::string_view message) {
  put_varint(out, message.size());
  out += message;
}

}  // namespace cs::pb
