// A backend's checks and what they hand the session (docs/building.md, "A check's path").
//
// Each backend owns one bank: the CPU backend's (CpuCheckBank) scans each slot at its call site;
// the CUDA backend implements the bank itself over its device bank (DeviceBank: the fused checks,
// the readbacks and first-fire capture). The bank
// keeps the fold's per-slot records where the checks run, counts the execution positions of the
// call sites itself and decides the guard; the session receives finished step outcomes, in step
// order, and never learns how or when the checks ran. It keeps the fold/step state machine, halts
// and breakpoints, fold summaries and the recording.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/sentinel.h"
#include "core/slot_health.h"
#include "model/backend.h"

namespace nanscope {

// A slot's buffer as its check saw it at the slot's first fire in the fold.
struct CapturedSlot {
  int slot = -1;
  std::vector<std::int64_t> shape;
  std::vector<float> values;  // float64 buffers of the CPU backend are stored as float32
  ScanResult scan;            // kinds, count and first bad index of the buffer
  // A float64 buffer kept in its own type (an SDK trainer's: its dump is float64); `values` is
  // empty then.
  std::vector<double> values64;
};

// What a dump replays: the state before the step and the step's batch and draws.
struct StepContext {
  StateSnapshot state;
  BatchContext batch;
};

// One step's checks, finished.
struct StepOutcome {
  int step = 0;
  std::int64_t global_step = 0;
  StepFlags kinds = StepFlags(kBuiltinSlotCount);  // this step's own kinds per slot
  // For a slot whose first fire in the fold was this step: its non-finite count then, and the
  // check's position in the step's call-site order (every call site counts, checked or not);
  // -1 otherwise.
  std::array<std::int64_t, kBuiltinSlotCount> first_count;
  std::array<int, kBuiltinSlotCount> first_exec;
  StepLosses losses;
  // Each checked slot's health at its check (sentinel.health; unmeasured otherwise), and each
  // parameter group's update norm over its weight norm after the update (NaN unless the
  // update_ratio watch asks for it).
  SlotHealthRows health = unmeasured_rows(kBuiltinSlotCount);
  std::array<double, kGroupCount> update_ratio;
  bool updated = true;  // the update ran: the guard's answer before it ran, never recomputed
  // With capture on and a first fire in the step: the first-firing slots' buffers and the context.
  std::vector<CapturedSlot> captured;
  std::optional<StepContext> context;

  StepOutcome() {
    first_count.fill(-1);
    first_exec.fill(-1);
    update_ratio.fill(std::numeric_limits<double>::quiet_NaN());
  }
  bool fired() const {
    for (auto k : kinds)
      if (k) return true;
    return false;
  }
};

class CheckBank {
 public:
  virtual ~CheckBank() = default;
  // A fold begins: every record cleared, the slots checked as `setup` says.
  virtual void begin_fold(const SlotSetup& setup) = 0;
  // Turns a slot's check on or off from the next check on (SentinelBank::set_checked).
  virtual void set_checked(int slot, bool on) = 0;
  // Recording: outcomes with a first fire carry the slots' buffers and the step's context.
  virtual void set_capture(bool on) = 0;
  // Whether the session needs this step's outcome at its end (it halts, breaks or watches there,
  // steps interactively, or writes a dump that needs what an injection overwrote). Otherwise the
  // bank may hold the step and hand it over later, with a later step's or at take_held().
  virtual void set_report_each_step(bool on) = 0;
  virtual void begin_step(const StepKey& key) = 0;
  // After the step's last phase: the outcomes ready, in step order (held ones first).
  virtual std::vector<StepOutcome> end_step() = 0;
  // Every outcome still held (the fold's end, a stop).
  virtual std::vector<StepOutcome> take_held() = 0;
  // A slot's check outside a phase, at the call site a caller runs itself (a replay installs its
  // batch instead of sampling it, then checks it).
  virtual void check_now(int slot) = 0;
};

}  // namespace nanscope
