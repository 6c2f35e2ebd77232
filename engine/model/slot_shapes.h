// The shape of every slot's buffer for a network's dimensions, once for both backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/dims.h"

namespace nanscope {

// Empty when the slot does not exist in this run (the IQN slots without the IQN head).
// `param_total` is the flat parameter allocation (slots 22 and 23).
std::vector<std::int64_t> slot_shape(const Dims& d, int slot, std::size_t param_total);
std::size_t element_count(const std::vector<std::int64_t>& shape);

}  // namespace nanscope
