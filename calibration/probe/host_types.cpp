#include "calibration/probe/host_types.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace cs::probe {

float bf16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

float fp16_bits_to_float(std::uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  float v = 0;
  if (exponent == 0) {
    v = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    v = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return negative ? -v : v;
}

float fp8_e4m3_bits_to_float(std::uint8_t bits) {
  const bool negative = (bits & 0x80u) != 0;
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  float v = 0;
  if (exponent == 15 && mantissa == 7) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m/8 * 2^(1-7)
  } else {
    v = std::ldexp(static_cast<float>(mantissa + 8), exponent - 10);  // (1 + m/8) * 2^(e-7)
  }
  return negative ? -v : v;
}

}  // namespace cs::probe
