// The two-pass reference check of a buffer into a DeviceBank (reference_check.cu): same records as
// the bank's fused check, by a simpler path. For the GPU tests and bench/sentinel only.
#pragma once

#include <cstddef>
#include <memory>

#include "../sentinel_check.h"

namespace nanscope::cuda {

class ReferenceCheck {
 public:
  ReferenceCheck();
  ~ReferenceCheck();
  // Checks `n` floats at `data` (device memory) for `slot` on the bank's stream, taking the bank's
  // next execution position. `blocks` 0 picks a grid from the size; any value gives the same
  // result.
  void operator()(DeviceBank& bank, int slot, const float* data, std::size_t n, int blocks = 0);

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace nanscope::cuda
