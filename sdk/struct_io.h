// The struct-size rule of the C ABI (nanscope.h, docs/sdk.md "ABI policy"), its one home: a struct
// the caller passes in is read through its struct_size, and a result is written through it.
// - Smaller than ABI 1's first struct: NS_ERR_VERSION (no program was ever built with it).
// - From ABI 1's size up to this library's: the fields the caller's struct lacks read as zero (an
//   older program); a result is written up to the caller's size.
// - Larger (a newer header): accepted when every byte this library does not know is zero; a
//   result is written up to this library's size and the rest left as the caller had it.
// Reserved fields must be zero, so that a later version may give them a meaning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "nanscope/nanscope.h"
#include "sdk_session.h"

namespace nanscope::sdk {

// The sizes of ABI 1's first structs: the oldest a caller may pass.
template <class T>
constexpr std::size_t kAbi1Size = 0;
template <>
inline constexpr std::size_t kAbi1Size<ns_session_options> = offsetof(ns_session_options,
                                                                      watch_overflow_margin);
template <>
inline constexpr std::size_t kAbi1Size<ns_slot_desc> = sizeof(ns_slot_desc);
template <>
inline constexpr std::size_t kAbi1Size<ns_step_result> = offsetof(ns_step_result, halt_step);

// A struct_size no struct of any version has: refused before its bytes are read.
inline constexpr std::uint32_t kMostStructSize = 4096;

// Layouts are LP64's with no hidden padding (every byte is a field or a reserved field).
static_assert(sizeof(ns_session_options) == 104 && offsetof(ns_session_options, overwrite) == 72 &&
              kAbi1Size<ns_session_options> == 80);
static_assert(sizeof(ns_slot_desc) == 144 && offsetof(ns_slot_desc, shape) == 80);
static_assert(sizeof(ns_step_result) == 36 && kAbi1Size<ns_step_result> == 28);
static_assert(sizeof(ns_session) == 8 && std::is_trivially_copyable_v<ns_session>);
static_assert(sizeof(ns_status) == 4);

template <class T>
std::uint32_t checked_struct_size(std::uint32_t size, const char* what) {
  if (size < kAbi1Size<T>)
    throw Error(NS_ERR_VERSION, fmt::format("{}.struct_size is {}, less than the {} bytes of ABI "
                                            "1's struct (set it to sizeof, or use the _INIT "
                                            "initialiser)",
                                            what, size, kAbi1Size<T>));
  if (size > kMostStructSize || size % alignof(T) != 0)
    throw Error(NS_ERR_VERSION, fmt::format("{}.struct_size {} is not a size (a whole number of "
                                            "{}-byte units, at most {})",
                                            what, size, alignof(T), kMostStructSize));
  return size;
}

// The caller's struct as this library's: the part the caller did not have zeroed.
template <class T>
T read_struct(const T* in, const char* what) {
  if (!in) throw Error(NS_ERR_ARGUMENT, fmt::format("{} is NULL", what));
  const std::uint32_t size = checked_struct_size<T>(in->struct_size, what);
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (std::uint32_t i = sizeof(T); i < size; ++i)
    if (bytes[i] != 0)
      throw Error(NS_ERR_VERSION,
                  fmt::format("{} sets fields after byte {} that this library (nanscope {}.{}, ABI "
                              "{}) does not know",
                              what, sizeof(T), NS_VERSION_MAJOR, NS_VERSION_MINOR, NS_ABI_VERSION));
  T out;
  std::memset(static_cast<void*>(&out), 0, sizeof out);
  std::memcpy(static_cast<void*>(&out), in, size < sizeof(T) ? size : sizeof(T));
  return out;
}

// The reserved fields of a struct read by read_struct, which must be zero.
inline void refuse_reserved(std::uint32_t value, const char* what) {
  if (value != 0)
    throw Error(NS_ERR_VERSION, fmt::format("{} is {}: reserved fields must be 0 (a later "
                                            "version's field this library does not know?)",
                                            what, value));
}

// A result's struct_size, checked before the call does anything (0 for a NULL result).
template <class T>
std::uint32_t result_size(const T* result, const char* what) {
  return result ? checked_struct_size<T>(result->struct_size, what) : 0;
}

// Writes `r` into the caller's struct up to the smaller size; struct_size stays the caller's.
template <class T>
void write_result(T* result, std::uint32_t size, const T& r) {
  if (!result) return;
  T out = r;
  out.struct_size = size;
  std::memcpy(static_cast<void*>(result), &out, size < sizeof(T) ? size : sizeof(T));
}

}  // namespace nanscope::sdk
