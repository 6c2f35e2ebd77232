// The 16-bit float types a trainer's buffers may hold, bfloat16 and IEEE float16, read from their
// bits: the host path checks them in their own type (no float32 copy of the buffer is made), and
// each value widens to float exactly (every bfloat16 and float16 value is a float32 value, NaN
// payloads included), so a check sees the values a float32 buffer of the same values would hold.
#pragma once

#include <cstdint>
#include <cstring>

namespace nanscope {

// A bfloat16: float32's sign, exponent and the top 7 bits of its mantissa.
struct BFloat16 {
  std::uint16_t bits = 0;
  static constexpr int kMantissaBits = 7;
  static constexpr std::uint16_t kExponentMask = 0x7f80;
  explicit operator float() const {
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &wide, sizeof f);
    return f;
  }
};

// An IEEE 754 binary16: 5 exponent bits (bias 15), 10 mantissa bits.
struct Float16 {
  std::uint16_t bits = 0;
  static constexpr int kMantissaBits = 10;
  static constexpr std::uint16_t kExponentMask = 0x7c00;
  explicit operator float() const {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1f;
    std::uint32_t mantissa = bits & 0x3ff;
    std::uint32_t wide;
    if (exponent == 0x1f) {  // infinities and NaNs, the payload kept in the top mantissa bits
      wide = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {  // normal: rebias 15 -> 127
      wide = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {  // a zero keeps its sign
      wide = sign;
    } else {  // subnormal (m x 2^-24): normal in float32
      int shift = 0;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      wide = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
    }
    float f;
    std::memcpy(&f, &wide, sizeof f);
    return f;
  }
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
