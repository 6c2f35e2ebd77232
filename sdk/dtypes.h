// The SDK's element types: their sizes and names, one home for both paths and every call.
#pragma once

#include <cstddef>

#include "model/backend.h"
#include "nanscope/nanscope.h"

namespace nanscope::sdk {

inline std::size_t element_bytes(ns_dtype t) {
  switch (t) {
    case NS_F32:
      return 4;
    case NS_F64:
      return 8;
    case NS_BF16:
    case NS_F16:
      return 2;
  }
  return 0;
}

inline ElementType element_type(ns_dtype t) {
  switch (t) {
    case NS_F32:
      return ElementType::Float32;
    case NS_F64:
      return ElementType::Float64;
    case NS_BF16:
      return ElementType::BFloat16;
    case NS_F16:
      return ElementType::Float16;
  }
  return ElementType::Float32;
}

inline const char* dtype_name(ns_dtype t) {
  switch (t) {
    case NS_F32:
      return "float32";
    case NS_F64:
      return "float64";
    case NS_BF16:
      return "bfloat16";
    case NS_F16:
      return "float16";
  }
  return "?";
}

}  // namespace nanscope::sdk
