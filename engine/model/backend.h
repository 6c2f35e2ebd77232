// The interface every trainer backend implements (CPU here, CUDA in cuda/). Both run the same
// phases in the same order and pass the same slots at the same call sites; the session drives
// phases and never knows which backend it holds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/sentinel.h"
#include "core/slot_table.h"
#include "data/transitions.h"
#include "model/dims.h"
#include "model/param_layout.h"

namespace nanscope {

// A read-only window on a slot's buffer. `count` is the buffer's own element count, including any
// zero padding. Empty (data == nullptr) when the slot does not exist this run.
struct SlotView {
  const void* data = nullptr;
  std::size_t count = 0;
  bool is_f64 = false;  // float64 mode of the CPU backend; otherwise float32
  std::vector<std::int64_t> shape;
  bool exists() const { return data != nullptr; }
  double at(std::size_t i) const {
    return is_f64 ? static_cast<const double*>(data)[i] : static_cast<const float*>(data)[i];
  }
};

// The checks' scan of a slot's buffer, in its storage type.
inline ScanResult scan_view(const SlotView& v) {
  return v.is_f64 ? scan_nonfinite(static_cast<const double*>(v.data), v.count)
                  : scan_nonfinite(static_cast<const float*>(v.data), v.count);
}

struct StepKey {
  std::uint64_t seed = 1;
  int fold = 0;
  int step = 0;
  std::int64_t global_step = 0;
};

// Batch means of the loss terms of the last forward pass, the last global gradient norm (the one
// clipping used) and the per-group norms as the grad_norm slot holds them.
struct StepLosses {
  double total = 0, c51 = 0, mse = 0, cql = 0, iqn = 0, aux = 0, ens = 0;
  double grad_norm = 0;
  std::array<double, kGroupCount> group_norm{};
};

// Parameters, target network and Adam state in layout order (existing parameters only), as
// doubles: what a dump stores as "the state before the step" and what a replay restores.
struct StateSnapshot {
  std::vector<double> params, target, adam_m, adam_v;
  std::int64_t adam_t = 0;
};

// A named array of the step's batch context (obs, actions, returns, ..., tau samples).
struct NamedArray {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::vector<double> values;
  bool integer = false;  // stored as int32 (actions)
};
using BatchContext = std::vector<NamedArray>;

// Called by a backend at the slot call sites of the spec: `produced` right after the producer
// wrote a slot's buffer (before any consumer reads it), `check` at the slot's check call site.
class SlotObserver {
 public:
  virtual ~SlotObserver() = default;
  virtual void produced(int slot) { (void)slot; }
  virtual void check(int slot) { (void)slot; }
  // Asked by a device backend before a kernel that can check its own output runs: may it check
  // `slot` in place instead of the check site? Yes only when the slot is checked at this step and
  // nothing writes the buffer between its producer and its check site (no slot injection), so
  // the producer sees what the check site would. The check site is still called.
  virtual bool producer_checks(int slot) {
    (void)slot;
    return false;
  }
  // Asked by the optimizer phase after the gradient norms are checked, before the update.
  virtual bool allow_update() { return true; }
};

// A value a fault injection overwrote (element index in the slot's buffer, old value).
struct Overwritten {
  std::size_t index;
  double value;
};

// Implemented by backends whose checks run on the device (CUDA). The session enqueues checks
// through it at the call sites; flags, per-step history and per-step status records (status word,
// losses, norms) accumulate on the device. The session reads a step's record when it must act on
// it within the step (halts, breakpoints, dumps), the step's per-slot detail only when something
// fired, and otherwise every step of the fold at once at its end. The guard runs on the device.
class DeviceSentinel {
 public:
  virtual ~DeviceSentinel() = default;
  struct StepReport {
    std::uint32_t status = 0;  // OR of the step's check kinds
    StepLosses losses;
  };
  // A step's own kinds per slot and, for slots whose first fire in the fold is that step, the
  // non-finite count at that fire (-1 otherwise).
  struct StepDetail {
    std::array<std::uint8_t, kSlotCount> kinds{};
    std::array<std::int64_t, kSlotCount> first_count{};
  };
  virtual void begin_fold() = 0;  // clears the device's flags (no copy)
  virtual void begin_step(int step) = 0;
  virtual void check(int slot) = 0;  // enqueues the check of the slot's device buffer
  // The OR of every check of the step so far (one status word copy).
  virtual std::uint32_t status_now() = 0;
  // The current step's record (one copy).
  virtual StepReport end_step() = 0;
  virtual StepDetail step_detail() = 0;  // the current step, checks so far
  // Steps first..last of the current fold, which ran without being read: their records, kinds
  // and first-fire counts (a few copies for all of them).
  virtual std::vector<std::pair<StepReport, StepDetail>> read_steps(int first, int last) = 0;
  // Runs the whole step as one CUDA graph. The graph is captured when there is none yet, when the
  // fold's data changed, or when `checked` (bit i set: slot i is checked) differs from the captured
  // set; during a capture the observer sees exactly the calls of an ungraphed step, and a replay
  // makes none.
  virtual void run_step_graphed(const StepKey& key, std::uint64_t checked) = 0;
  // A bit of `checked` beyond the slots: set when the step keeps the state before the update
  // (recording, read at the step's end), so a graph captured without that work is not replayed
  // for a step that needs it, nor the other way round.
  static constexpr std::uint64_t kGraphKeepsState = std::uint64_t{1} << 63;
  virtual int graph_captures() const = 0;
  // Device-to-host copies made so far (every readback, slot view, state or parameter read).
  virtual std::int64_t device_to_host_copies() const = 0;

  // ---- First-fire capture, for recording without a per-step readback ----
  // With capture on, device code copies a slot's buffer at its first fire in the fold (as its check
  // saw it), and keeps the replay context of every step with a first fire (the state before the
  // step, its batch and draws), doing nothing while clean. Returns how many steps may run between
  // two read_steps calls (the context areas it holds); 0: no capture here (read every step).
  virtual int enable_capture(bool on) {
    (void)on;
    return 0;
  }
  // After read_steps: the buffer captured at the slot's first fire in the current fold.
  virtual SlotView captured_slot(int slot) {
    (void)slot;
    return {};
  }
  // After read_steps, until the next step runs: the context of `step` if the read range held a
  // first fire there (false otherwise).
  virtual bool captured_context(int step, StateSnapshot& state, BatchContext& batch) {
    (void)step, (void)state, (void)batch;
    return false;
  }
};

enum class BackendKind { Cpu, Cuda };
template <>
struct EnumNames<BackendKind> {
  static constexpr std::array<std::string_view, 2> kNames = {"cpu", "cuda"};
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  std::string name() const { return std::string(name_of(kind())); }  // as files and JSON spell it
  virtual std::string device_name() const = 0;                       // CPU model or GPU name
  virtual const Dims& dims() const = 0;
  virtual const ParamLayout& layout() const = 0;

  // Initialises the online network from the seed, copies it to the target, zeroes Adam.
  virtual void reset_parameters() = 0;
  // Makes a fold's transitions the sampling pool.
  virtual void load_fold(const TransitionSet& transitions) = 0;
  virtual void run_phase(Phase phase, const StepKey& key) = 0;

  virtual SlotView slot(int index) = 0;
  // Fault injection: sets one element (or every element) of a slot's buffer to `value`, right
  // after its producer wrote it; returns what was overwritten.
  virtual std::vector<Overwritten> inject_slot(int index, std::optional<std::size_t> element,
                                               double value) = 0;
  virtual StepLosses losses() const = 0;
  virtual void set_observer(SlotObserver* observer) = 0;

  // Parameter access by name (values as double), for injection, dumps and tests.
  virtual std::vector<double> read_param(const std::string& name, bool target = false) const = 0;
  virtual void write_param(const std::string& name, const std::vector<double>& values) = 0;
  virtual std::int64_t adam_step() const = 0;

  virtual void read_state(StateSnapshot& out) const = 0;
  virtual void write_state(const StateSnapshot& in) = 0;
  // Keeps a copy of the state as it is now (taken just before the optimizer's update when a run
  // records dumps) and reads it back; the CUDA backend keeps it on the device.
  virtual void keep_state() = 0;
  virtual void read_kept_state(StateSnapshot& out) const = 0;
  // The batch and draws of the current step (after the sample phase): obs, actions, returns,
  // next_obs, done, next_bar and, with the IQN head, tau, tau_target, tau_greedy.
  virtual BatchContext batch_context() const = 0;
  // Installs a batch instead of sampling one (replay); run the phases after Sample next.
  virtual void set_batch(const BatchContext& batch) = 0;
  // Non-null when the slot checks run on the device.
  virtual DeviceSentinel* device_sentinel() { return nullptr; }
};

// The CPU reference backend, float32 or float64 storage per config.model.precision.
std::unique_ptr<Backend> make_cpu_backend(const Config& config);

}  // namespace nanscope
