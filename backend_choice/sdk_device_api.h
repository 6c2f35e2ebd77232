// The SDK's device path as the CUDA plugin serves it (docs/sdk.md, "Device buffers"): libnanscope
// checks a trainer's device buffers with the CUDA backend's own device bank (cuda/sentinel_check.h:
// its fused check, first-fire capture and status word) through this CUDA-free interface, so that
// the library loads and runs its host path where no CUDA is installed. Streams are the trainer's
// cudaStream_t passed as void*; every call that takes one only enqueues on it (legal inside the
// trainer's stream capture) unless it says it synchronises.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/element_type.h"
#include "core/slot_health.h"
#include "core/slot_table.h"

namespace nanscope {

// A session of device buffers takes as many slots as one of host buffers (kMaxSlots): the device
// bank is as wide as the session's table. Its first-fire copies share one arena of at most this
// many bytes (a slot whose buffer no longer fits when it first fires is not copied).
inline constexpr std::uint64_t kSdkCaptureBudgetBytes = std::uint64_t{256} << 20;

// A slot's record in the device bank (the meaning of the engine's SlotRecord; first_step counts
// from the rows of the last read).
struct SdkSlotRecord {
  std::uint32_t kinds = 0;  // sticky within the fold: 1 NaN, 2 +Inf, 4 -Inf
  std::int32_t first_step = -1;
  std::int64_t count = 0;  // non-finite elements at the first fire
  std::int32_t exec_position = -1;
};

// What the device ran since the last read: the steps begun, each one's row of kinds (at most
// `rows` of the shape: later steps share the last row), the records, and the last step's health
// rows ([slots, kHealthFieldCount], NaN where not measured).
struct SdkDeviceRead {
  std::uint32_t steps = 0;
  int slots = 0;
  std::vector<std::uint8_t> rows;      // [rows, slots]: kinds(row, slot)
  std::vector<SdkSlotRecord> records;  // [slots]
  std::vector<float> health;

  std::size_t row_count() const {
    return slots ? rows.size() / static_cast<std::size_t>(slots) : 0;
  }
  std::uint8_t kinds(std::size_t row, int slot) const {
    return rows[row * static_cast<std::size_t>(slots) + static_cast<std::size_t>(slot)];
  }
};

struct SdkDeviceItem {
  int slot = 0;
  std::uint64_t address = 0;  // device memory of `count` values of `type`
  std::uint64_t count = 0;
  ElementType type = ElementType::Float32;  // float32, bfloat16 or float16
};

// The bank's shape: the session's slots, history rows between reads, health on, and the floats of
// the first-fire copies' arena (0: no copies).
struct SdkDeviceShape {
  int slots = 1;
  int rows = 4096;
  bool health = false;
  std::uint64_t capture_floats = 0;
};

class SdkDeviceChecks {
 public:
  virtual ~SdkDeviceChecks() = default;
  // "" when [address, address + bytes) is device memory of the current device in one allocation;
  // otherwise what it is ("host memory", "past the end of its allocation", ...).
  virtual std::string pointer_problem(std::uint64_t address, std::uint64_t bytes) = 0;
  // Whether `stream` is being captured into a graph.
  virtual bool capturing(void* stream) = 0;
  // The bank and the capture areas, once the slot table is fixed (allocates; outside any capture).
  virtual void prepare(const SdkDeviceShape& shape) = 0;
  // Clears the fold's records, rows and capture state (synchronises; outside any capture).
  virtual void begin_fold() = 0;
  // Graph-capturable: the next step counted on the device; the fused check of `items` (distinct
  // slots) with their first fires copied into the capture areas.
  virtual void begin_step(void* stream) = 0;
  virtual void check(const std::vector<SdkDeviceItem>& items, void* stream) = 0;
  // Waits for `stream`, reads what ran since the last read and starts counting again (outside any
  // capture).
  virtual SdkDeviceRead read(void* stream) = 0;
  // A slot's first-fire copy (its `count` values as floats, as the check saw them at its first
  // fire in the fold; empty when the arena had no room left for it), and `count` floats at a
  // device address once `stream` is done, copied to the host (synchronous).
  virtual std::vector<float> captured(int slot, std::uint64_t count) = 0;
  virtual std::vector<float> copy_out(void* stream, std::uint64_t address, std::uint64_t count) = 0;
  // The value of element type `type` at a device address once `stream` is done, widened exactly
  // (synchronous): a role slot's element 0.
  virtual double read_value(void* stream, std::uint64_t address, ElementType type) = 0;
  // The current device's name (the run file's device).
  virtual std::string device_name() = 0;
  // The device status word of the step (non-zero once a check in it fired): the guard word; and
  // a device word that stays 0 (the guard word of a session without the guard).
  virtual std::uint64_t status_word() = 0;
  virtual std::uint64_t zero_word() = 0;
};

}  // namespace nanscope
