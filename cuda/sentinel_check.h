// Device-side sentinel checks (streams are cudaStream_t; the public cuda_backend.h stays
// CUDA-free): "any non-finite?" over a float buffer, accumulated into a device-resident bank of
// per-slot records and a per-step history, read back only when asked (fold boundary, halt,
// interactive step). Deterministic, with no float atomics: the flags are bitwise ORs, the counts
// integer sums and the first bad index a minimum (integer atomics only: ORs, a compare-and-swap and
// sums, whose order cannot change a result), so any launch configuration gives bit-identical
// results. The check only reads its buffer (and, at a first fire, copies it into a capture area
// when given one).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/slot_health.h"
#include "core/slot_table.h"
#include "slot_sink.h"

namespace nanscope::cuda {

// The current step's health on the device (sentinel.health), cleared by begin_step and packed into
// the step's status record by pack_step_record: each checked slot's row (core/slot_health.h) as the
// fused check leaves it, and the learner's words (measure_c51_rows, measure_crossings).
struct DeviceStepHealth {
  const float* rows;                    // [slots, kHealthFieldCount]; NaN: not measured
  const std::uint32_t* mass_bits;       // [slots]: 0 none, else float bits of the error + 1
  const unsigned long long* crossings;  // [2]: crossed pairs, ordered pairs (slot 14)
};

// One slot's record on the device (same meaning as the engine's SlotRecord).
struct DeviceSlotRecord {
  std::uint32_t kinds;      // sticky OR within the fold: 1 NaN, 2 +Inf, 4 -Inf
  std::int32_t first_step;  // -1 until the first fire
  std::int64_t count;       // non-finite elements at the first fire
  std::int32_t exec_position;
  std::int32_t pad;
};

// Copied byte for byte between device and host: the layout is part of the kernels' contract.
static_assert(sizeof(DeviceSlotRecord) == 24 && std::is_trivially_copyable_v<DeviceSlotRecord>);
static_assert(offsetof(DeviceSlotRecord, count) == 8 &&
              offsetof(DeviceSlotRecord, exec_position) == 16);

struct BankReadback {
  int slots = 0;
  std::vector<DeviceSlotRecord> records;  // [slots]
  // The history rows read, each history_row_bytes(slots) long (slot_sink.h): kinds(row, slot).
  std::vector<std::uint8_t> history;
  std::uint32_t step_status = 0;  // OR of every check of the current step (the one status word)
  int copies = 0;                 // the device-to-host copies the readback made

  std::size_t rows() const { return slots ? history.size() / history_row_bytes(slots) : 0; }
  std::uint8_t kinds(std::size_t row, int slot) const {
    return history[row * history_row_bytes(slots) + static_cast<std::size_t>(slot)];
  }
};

// What a bank holds: a record per slot of its table, `steps` history rows (a row per step of a
// fold), the health rows when `health`, and a capture arena of `capture_floats` floats, where a
// slot checked without its own capture area gets its buffer copied at its first fire in the fold
// while the arena has room (see DeviceBank::captured).
struct BankShape {
  int slots = kBuiltinSlotCount;
  int steps = 1;
  bool health = false;
  std::size_t capture_floats = 0;
};

class DeviceBank {
 public:
  // The built-in trainer's bank: its table's slots, `max_steps` history rows. With `health`, every
  // fused check also leaves its slot's health row for the step (a block reduction whose partials
  // the item's last block folds in block order: deterministic for a given grid, no float atomics).
  DeviceBank(int max_steps, cudaStream_t stream = nullptr, bool health = false)
      : DeviceBank(BankShape{kBuiltinSlotCount, max_steps, health, 0}, stream) {}
  // A bank of any width up to kMaxSlots.
  DeviceBank(const BankShape& shape, cudaStream_t stream);
  ~DeviceBank();
  DeviceBank(const DeviceBank&) = delete;
  DeviceBank& operator=(const DeviceBank&) = delete;

  int slots() const { return shape_.slots; }
  void reset_fold();          // device-side clear (no host copy)
  void begin_step(int step);  // host-side counters only; clears the status word on device
  // The fused check: every item in one launch, however many (large buffers spread over the whole
  // GPU; a warp that finds non-finite values adds them into the slot's record with integer atomics,
  // a clean warp writes nothing). Same records as checking the items one by one in this order. Each
  // item is read in its own element type. An
  // item with a `capture` area gets its buffer copied there (`count` floats) by device code at the
  // slot's first fire in the fold; one without, into the bank's capture arena while it has room.
  // The launch reads its items from a table in device memory that the bank keeps per distinct list
  // (fused_tables.h): a list met again, as in every step of a trainer, is not uploaded again, and
  // one met while `stream` is captured stays as long as the bank, since the graph may launch it.
  struct GroupItem {
    int slot;
    const void* data;  // `count` values of `type` (float32, bfloat16 or float16)
    std::size_t count;
    float* capture = nullptr;  // `count` floats (16-bit values widened)
    int exec = -1;  // the check's execution position in the step (-1: taken at the launch)
    ElementType type = ElementType::Float32;
  };
  // On `stream` (the bank's by default): launches with distinct slots may run side by side.
  void check_group(const std::vector<GroupItem>& items) { check_group(items, stream_); }
  void check_group(const std::vector<GroupItem>& items, cudaStream_t stream);
  // A check's execution position in the step, taken when a check is due but enqueued later.
  int take_exec() { return exec_++; }
  // Where a producer kernel adds `slot`'s non-finite values itself, at execution position `exec`
  // (-1: the next one): the record it leaves is the fused check's over the finished buffer.
  SlotSink sink(int slot, int exec = -1);
  // After producers that checked their own output: copies each item's buffer (`count` floats from
  // `data`) into its `capture` area if its slot fired for the first time in this step. One small
  // launch that reads one word while clean. Graph-capturable.
  void copy_first_fires(const std::vector<GroupItem>& items);
  // The learner's health fields of a checked slot's buffer, enqueued (slots 6, 7 and 8: the
  // largest |row mass - 1| over `rows` rows of `atoms`; slot 14: the crossed and ordered quantile
  // pairs against the taus [B, N]). Integer atomics only (a maximum over float bits, sums).
  void measure_c51_rows(int slot, const float* data, std::size_t rows, int atoms,
                        cudaStream_t stream);
  void measure_crossings(const float* quantiles, const float* taus, int B, int N, int A,
                         cudaStream_t stream);
  bool health() const { return health_; }
  std::size_t tables_uploaded() const;  // the fused check's tables copied to the device so far
  // Every launch made so far outside a capture has finished (the caller synchronised the streams
  // it launched on): their tables' memory may be reused without waiting for those streams again.
  void launches_done();
  DeviceStepHealth step_health() const;
  // For a caller that replays captured steps without the host in between (the SDK's device path):
  // the step is counted on the device. begin_counted_step (graph-capturable) takes the next history
  // row, the last one at most (later steps share it), and counts one more step begun; rewind
  // (outside any capture; synchronises `stream`) clears the first `used_rows` rows and starts
  // again before row 0 with none begun.
  void begin_counted_step(cudaStream_t stream);
  void rewind(cudaStream_t stream, std::size_t used_rows);
  // The steps begun since the rewind, and the current step's health rows ([slots,
  // kHealthFieldCount], NaN where not measured), read on the bank's stream.
  std::uint32_t steps_begun();
  std::vector<float> read_health_rows();
  // The records and history rows first..first+rows-1, on the bank's stream.
  BankReadback readback_rows(std::size_t first, std::size_t rows) { return read_rows(first, rows); }
  BankReadback readback();  // synchronises the stream; the only device-to-host copies
  // The records and the current step's history row only (history holds that one row).
  BankReadback readback_step();
  // `count` floats of `slot`'s buffer as the check saw it at its first fire in the fold, from the
  // capture arena; empty when it was not copied there (no first fire, its own capture area, or the
  // arena had no room left for it). Synchronises the bank's stream.
  std::vector<float> captured(int slot, std::size_t count);
  // The device address of the status word (the OR of the current step's checks) and of the
  // current step (set by begin_step).
  const std::uint32_t* status_word() const;
  const int* step_word() const;
  // Non-zero once a slot has fired for the first time in the fold during the current step.
  const std::uint32_t* first_fire_word() const;
  cudaStream_t stream() const { return stream_; }

 private:
  // The records, history rows first..first+rows-1 and the status word.
  BankReadback read_rows(std::size_t first, std::size_t rows);
  void check_slot(int slot, const char* who) const;
  void launch_group(const GroupItem* items, std::size_t count, cudaStream_t stream);
  // One kernel launch of the items `which` (all of element type `type`) with their positions.
  void launch_typed(const GroupItem* items, const std::vector<int>& exec,
                    const std::vector<std::size_t>& which, int exec_base, ElementType type,
                    cudaStream_t stream);
  void enqueue_begin_step(int step, cudaStream_t stream);
  struct Impl;
  BankShape shape_;
  std::unique_ptr<Impl> impl_;
  cudaStream_t stream_;
  bool health_ = false;
  int step_ = 0, exec_ = 0;
};

// Number of SMs of the current device (for grid sizing and the benches).
int device_sm_count();

}  // namespace nanscope::cuda
