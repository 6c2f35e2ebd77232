// The model's sizes travel to the kernels as `Dims` itself, by value (it is trivially copyable),
// and every one-thread-per-element launch sizes its grid here.
#pragma once

#include <cstddef>
#include <type_traits>

#include "model/dims.h"

namespace nanscope::cuda {

static_assert(std::is_trivially_copyable_v<Dims>, "kernels take Dims by value");

// Blocks of `block` threads covering n elements.
inline unsigned grid(std::size_t n, int block = 128) {
  return static_cast<unsigned>((n + block - 1) / block);
}

}  // namespace nanscope::cuda
