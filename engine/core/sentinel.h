// Sentinel checks and their bookkeeping: slot states, the "any non-finite?" scan of a buffer, and
// the per-fold bank of flags with its entry-point rules (docs/slots.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/slot_table.h"

namespace nanscope {

// Flag bits (HDF5 /folds/flags, JSON "kinds").
enum KindBits : std::uint8_t { kKindNaN = 1, kKindPosInf = 2, kKindNegInf = 4 };
std::vector<std::string> kind_names(std::uint8_t kinds);  // {"nan", "posinf", "neginf"} subset

// A step's own flags: one byte of kinds per slot of the table.
using StepFlags = std::vector<std::uint8_t>;

// Whether a step's own flags hold any fire.
inline bool any_fired(const StepFlags& step_flags) {
  for (std::uint8_t k : step_flags)
    if (k) return true;
  return false;
}

// Slot states with their HDF5 codes.
enum class SlotState : std::uint8_t {
  Clean = 0,
  Fired = 1,
  Absent = 2,
  Deferred = 3,
  Disabled = 4
};
inline constexpr int kSlotStateCount = 5;  // the codes /folds/state may hold: 0 to this - 1
const char* state_name(SlotState s);

// What a check of a run's slot does before anything fired: Clean means "checked". As wide as the
// run's table.
struct SlotSetup {
  SlotSetup() = default;
  explicit SlotSetup(int slots)
      : state(static_cast<std::size_t>(slots), SlotState::Clean),
        reason(static_cast<std::size_t>(slots)) {}
  std::vector<SlotState> state;
  std::vector<std::string> reason;  // why a slot is absent, deferred or disabled
  int size() const { return static_cast<int>(state.size()); }
  bool checked(int slot) const {
    return slot >= 0 && slot < size() && state[static_cast<std::size_t>(slot)] == SlotState::Clean;
  }
  // The checked slots (the run file's /steps/checked row, a step graph's key).
  SlotSet checked_set() const {
    SlotSet m(size());
    for (int s = 0; s < size(); ++s)
      if (checked(s)) m.set(s);
    return m;
  }
  // Turns a slot's check on (clean) or off (disabled) from now on; absent slots stay absent.
  void set_checked(int slot, bool on) {
    SlotState& s = state[static_cast<std::size_t>(slot)];
    if (s == SlotState::Absent) return;
    s = on ? SlotState::Clean : SlotState::Disabled;
    reason[static_cast<std::size_t>(slot)] = on ? "" : "turned off by the user";
  }
};
// nanscope's own trainer's setup under a config (deferrals, sentinel.undefer and .disabled, the
// IQN head).
SlotSetup slot_setup(const Config& config);

// Result of scanning one buffer. Reads only; never writes the buffer.
struct ScanResult {
  std::uint8_t kinds = 0;
  std::int64_t count = 0;  // non-finite elements
  std::int64_t first_bad_index = -1;
};
// Float32, float64, bfloat16 and float16 buffers, each in its own type.
template <class T>
ScanResult scan_nonfinite(const T* data, std::size_t count);

// A buffer's values by kind, with the finite range and sum and the first bad indices: the one
// census the dump writer's attributes and the inspector's statistics read (the checks themselves
// only need scan_nonfinite).
struct Census {
  std::uint8_t kinds = 0;
  std::int64_t nan = 0, posinf = 0, neginf = 0, finite = 0;
  double finite_min = 0, finite_max = 0, finite_sum = 0;  // meaningful when finite > 0
  std::vector<std::int64_t> first_bad;                    // up to `keep_bad` flat indices
  std::int64_t nonfinite() const { return nan + posinf + neginf; }
};
// Float32 buffers and, in their own type, float64, bfloat16 and float16 ones (an SDK trainer's
// dump keeps a float64 buffer's type).
template <class T>
Census census(const T* data, std::size_t count, std::size_t keep_bad = 1);

// Per slot in a fold.
struct SlotRecord {
  SlotState state = SlotState::Clean;
  std::uint8_t kinds = 0;        // sticky OR of the kinds seen in the fold
  std::int64_t first_step = -1;  // step of first fire within the fold
  std::int64_t count = 0;        // non-finite elements at first fire
  int exec_position = -1;        // position of the check in that step's execution order
};

// The backward stage a first firing check of bw_d_h_s2 names: "main", "aux" or "iqn" (slot 33, 34,
// 35), and the path it points at, for people.
const char* backward_stage(int slot);
const char* backward_stage_description(int slot);

struct BackwardEntry {
  int slot;  // 33, 34 or 35
  int step;
  const char* stage() const { return backward_stage(slot); }
};

// A fold's readback: what the GUI, the JSON summary and the HDF5 run file show. `slots` is as wide
// as the run's table.
struct FoldFlags {
  int fold = 0;
  int steps = 0;
  std::vector<SlotRecord> slots;
  std::optional<int> entry_slot;  // earliest firing step, lowest dataflow rank
  std::optional<int> entry_step;
  std::optional<BackwardEntry> backward_entry;
  bool any_fired() const { return entry_slot.has_value(); }
};

// The entry-point rules, in one place. Among the slots whose first fire in the fold was `step`,
// the one that names the entry point: the lowest dataflow rank.
std::optional<int> first_by_rank(const SlotTable& table, const std::vector<SlotRecord>& slots,
                                 std::int64_t step);
// Fills a fold's entry point (its earliest firing step, first_by_rank there) and, for nanscope's
// own table, its backward entry (the first of 33/34/35 to fire) from its slot records.
void derive_entries(const SlotTable& table, FoldFlags& fold);
// A run's entry point: the first fold (folds are chronological) that has one; likewise its backward
// entry. `flags(k)` is fold k's readback, k < `folds`.
struct RunEntry {
  int slot = -1, fold = 0, step = 0;
};
std::optional<RunEntry> run_entry(std::size_t folds,
                                  const std::function<const FoldFlags&(std::size_t)>& flags);
std::optional<RunEntry> run_backward_entry(
    std::size_t folds, const std::function<const FoldFlags&(std::size_t)>& flags);

// The guard's rule, in one place: with `guard.enabled`, a step in which a check fired makes no
// update (parameters, moments and Adam's t stay bit-identical). The CUDA optimizer applies it on
// the device from the step's status word; StepOutcome::updated reports it for both backends.
inline bool guard_allows_update(const Config& config, bool step_fired) {
  return !(config.guard.enabled && step_fired);
}

// Flags of one fold, accumulated step by step: sticky within the fold, reset at its boundary. The
// setup is as wide as the table.
class SentinelBank {
 public:
  SentinelBank(SlotTableRef table, SlotSetup setup);
  const SlotSetup& setup() const { return setup_; }
  const SlotTable& table() const { return *table_; }

  void begin_fold(int fold);
  void begin_step(int step);
  // Records a check's result at the slot's call site (checked slots only). Returns true when this
  // is the slot's first fire in the fold.
  bool record(int slot, const ScanResult& r);
  // The same with the check's execution position given: a bank that counted the call sites itself
  // (a device's) hands its results over in any order.
  bool record_at(int slot, const ScanResult& r, int exec_position);
  void end_step();
  // Turns a slot's check on (clean; also takes a deferred slot out of deferral) or off (disabled)
  // from now on. Absent slots stay absent. A slot that already fired in the fold keeps its record.
  void set_checked(int slot, bool on);

  std::uint8_t step_flags(int slot) const { return step_flags_[static_cast<std::size_t>(slot)]; }
  const StepFlags& step_flags() const { return step_flags_; }
  bool step_fired() const { return step_fired_; }
  const SlotRecord& slot_record(int slot) const { return slots_[static_cast<std::size_t>(slot)]; }
  FoldFlags readback() const;

 private:
  SlotTableRef table_;
  SlotSetup setup_;
  int fold_ = 0, step_ = 0, exec_ = 0, steps_ = 0;
  bool step_fired_ = false;
  std::vector<SlotRecord> slots_;
  StepFlags step_flags_;
  std::vector<int> fired_this_step_;  // which step flags to clear at the next step's start
};

}  // namespace nanscope
