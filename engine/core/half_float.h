// The 16-bit float types a trainer's buffers may hold, bfloat16 and IEEE float16, read from their
// bits: both paths check them in their own type (no float32 copy of the buffer is made), and each
// value widens to float exactly (every bfloat16 and float16 value is a float32 value, NaN
// payloads included), so a check sees the values a float32 buffer of the same values would hold.
// The widening is one definition for the host and the CUDA kernels (NANSCOPE_HD).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace nanscope {

// The float32 bits of a bfloat16's: float32's sign, exponent and the top 7 bits of its mantissa.
NANSCOPE_HD inline std::uint32_t bf16_to_f32_bits(std::uint16_t h) {
  return static_cast<std::uint32_t>(h) << 16;
}

// The float32 bits of an IEEE binary16's (5 exponent bits, bias 15; 10 mantissa bits).
NANSCOPE_HD inline std::uint32_t f16_to_f32_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f;
  const std::uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f)  // infinities and NaNs, the payload kept in the top mantissa bits
    return sign | 0x7f800000u | (mantissa << 13);
  if (exponent != 0)  // normal: rebias 15 -> 127
    return sign | ((exponent + 112) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;  // a zero keeps its sign
    // Subnormal (m x 2^-24), normal in float32: shift the leading one up to bit 10.
#ifdef __CUDA_ARCH__
  const int shift = __clz(mantissa) - 21;
#else
  const int shift = __builtin_clz(mantissa) - 21;
#endif
  return sign | (static_cast<std::uint32_t>(113 - shift) << 23) |
         ((mantissa << shift) & 0x3ff) << 13;
}

NANSCOPE_HD inline float f32_from_bits(std::uint32_t wide) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(wide);
#else
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
#endif
}

// A bfloat16 value.
struct BFloat16 {
  std::uint16_t bits = 0;
  static constexpr int kMantissaBits = 7;
  static constexpr std::uint16_t kExponentMask = 0x7f80;
  NANSCOPE_HD explicit operator float() const { return f32_from_bits(bf16_to_f32_bits(bits)); }
};

// An IEEE 754 binary16 value.
struct Float16 {
  std::uint16_t bits = 0;
  static constexpr int kMantissaBits = 10;
  static constexpr std::uint16_t kExponentMask = 0x7c00;
  NANSCOPE_HD explicit operator float() const { return f32_from_bits(f16_to_f32_bits(bits)); }
};

// Whether a 16-bit value is NaN or infinite, from its exponent bits alone (all ones).
template <class H>
constexpr bool half_nonfinite(H x) {
  return (x.bits & H::kExponentMask) == H::kExponentMask;
}
template <class H>
constexpr bool half_nan(H x) {
  return half_nonfinite(x) && (x.bits & ((1u << H::kMantissaBits) - 1)) != 0;
}

}  // namespace nanscope
