// Where a kernel that produces a slot buffer adds that buffer's non-finite values into the
// sentinel bank itself, as it writes them (no CUDA types here). The fused check reads every
// checked buffer once more after its producer wrote it; a producer that checks the values it holds
// in registers anyway makes that read unnecessary. Same record as the fused check of the finished
// buffer: integer ORs, a compare-and-swap for the first step and a sum for the count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nanscope::cuda {

struct DeviceSlotRecord;

// A step's history row holds one byte of kinds per slot, padded to whole 32-bit words: a check
// ORs its byte in through the aligned word that holds it (atomicOr has no byte form), so every
// row must start on a word boundary whatever the table's width.
inline constexpr std::size_t kHistoryWord = 4;
static_assert(kHistoryWord == sizeof(std::uint32_t) && kHistoryWord % alignof(std::uint32_t) == 0,
              "a history row's stride must keep each row aligned for the device's 32-bit atomics");
constexpr std::size_t history_row_bytes(int slots) {
  return (static_cast<std::size_t>(slots) + kHistoryWord - 1) / kHistoryWord * kHistoryWord;
}
static_assert(history_row_bytes(36) == 36 && history_row_bytes(37) == 40 &&
              history_row_bytes(4096) % kHistoryWord == 0);

struct SlotSink {
  DeviceSlotRecord* records = nullptr;  // null: the producer checks nothing
  unsigned char* history = nullptr;     // [steps, row_bytes] per-step kinds
  std::uint32_t* status = nullptr;      // [0] the step's status word, [1] its first-fire word
  const int* step = nullptr;            // the current step (device memory)
  int slot = -1;
  int exec = 0;            // the check's execution position within the step
  unsigned row_bytes = 0;  // history_row_bytes of the bank's width

  bool on() const { return records != nullptr; }  // host side (kernels test `records`)
};

}  // namespace nanscope::cuda
