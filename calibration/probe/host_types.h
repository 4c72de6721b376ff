// Decoding the GPU's narrow floating-point formats on the host (the GEMM self-check reads its
// operands back). Pure C++: unit-tested without a GPU.
#pragma once

#include <cstdint>

namespace cs::probe {

float bf16_bits_to_float(std::uint16_t bits);     // bfloat16: the top half of a float
float fp16_bits_to_float(std::uint16_t bits);     // IEEE binary16
float fp8_e4m3_bits_to_float(std::uint8_t bits);  // OCP e4m3 (NVIDIA __nv_fp8_e4m3): bias 7, no
                                                  // infinities, S.1111.111 is NaN, max 448

}  // namespace cs::probe
