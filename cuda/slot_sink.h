// Where a kernel that produces a slot buffer adds that buffer's non-finite values into the
// sentinel bank itself, as it writes them (no CUDA types here). The fused check reads every
// checked buffer once more after its producer wrote it; a producer that checks the values it holds
// in registers anyway makes that read unnecessary. Same record as the fused check of the finished
// buffer: integer ORs, a compare-and-swap for the first step and a sum for the count.
#pragma once

#include <cstdint>

namespace nanscope::cuda {

struct DeviceSlotRecord;

struct SlotSink {
  DeviceSlotRecord* records = nullptr;  // null: the producer checks nothing
  unsigned char* history = nullptr;     // [steps, 36] per-step kinds
  std::uint32_t* status = nullptr;      // [0] the step's status word, [1] its first-fire word
  const int* step = nullptr;            // the current step (device memory)
  int slot = -1;
  int exec = 0;  // the check's execution position within the step

  bool on() const { return records != nullptr; }  // host side (kernels test `records`)
};

}  // namespace nanscope::cuda
