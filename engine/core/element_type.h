// The element types nanscope checks, and each one's limits: what the health row's overflow margin
// and underflow share measure against (docs/slots.md, "Slot health"). Compiled by the host
// compiler and by nvcc, so that both backends use the same numbers.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace nanscope {

// The backends' float32 (float64 in the CPU backend's float64 mode) and, from an SDK trainer,
// bfloat16 and float16 too.
enum class ElementType : std::uint8_t { Float32, Float64, BFloat16, Float16 };

// A type's largest finite value and its smallest normal one.
struct TypeLimits {
  double largest = 0, smallest_normal = 0;
};

NANSCOPE_HD constexpr TypeLimits type_limits(ElementType t) {
  switch (t) {
    case ElementType::Float64:
      return {1.7976931348623157e308, 2.2250738585072014e-308};
    case ElementType::BFloat16:  // (2 - 2^-7) x 2^127; float32's smallest normal
      return {3.3895313892515355e38, 1.1754943508222875e-38};
    case ElementType::Float16:  // 65504; 2^-14
      return {65504.0, 6.103515625e-05};
    case ElementType::Float32:
      break;
  }
  return {3.4028234663852886e38, 1.1754943508222875e-38};  // (2 - 2^-23) x 2^127
}

}  // namespace nanscope
