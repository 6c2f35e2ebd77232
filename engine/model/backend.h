// The interface every trainer backend implements (CPU here, CUDA in cuda/). Both run the same
// phases in the same order and pass the same slots at the same call sites, where each checks them
// with its own bank (model/check_bank.h); the session drives phases and steps and never knows
// which backend it holds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/backend_names.h"
#include "core/config.h"
#include "core/element_type.h"
#include "core/half_float.h"
#include "core/sentinel.h"
#include "core/slot_table.h"
#include "core/step_losses.h"
#include "data/transitions.h"
#include "model/dims.h"
#include "model/param_layout.h"

namespace nanscope {

class CheckBank;

struct SlotView;
// Calls f with the view's data as a pointer to its element type: the one place a view's type is
// dispatched on.
template <class F>
decltype(auto) with_elements(const SlotView& v, F&& f);

// A read-only window on a slot's buffer. `count` is the buffer's own element count, including any
// zero padding. Empty (data == nullptr) when the slot does not exist this run.
struct SlotView {
  const void* data = nullptr;
  std::size_t count = 0;
  ElementType type = ElementType::Float32;
  std::vector<std::int64_t> shape;
  bool exists() const { return data != nullptr; }
  bool is_f64() const { return type == ElementType::Float64; }
  // Element i, widened exactly.
  double at(std::size_t i) const;
  std::size_t element_bytes() const;
};

template <class F>
decltype(auto) with_elements(const SlotView& v, F&& f) {
  switch (v.type) {
    case ElementType::Float64:
      return f(static_cast<const double*>(v.data));
    case ElementType::BFloat16:
      return f(static_cast<const BFloat16*>(v.data));
    case ElementType::Float16:
      return f(static_cast<const Float16*>(v.data));
    case ElementType::Float32:
      break;
  }
  return f(static_cast<const float*>(v.data));
}

inline double SlotView::at(std::size_t i) const {
  return with_elements(*this, [i](const auto* x) {
    if constexpr (std::is_arithmetic_v<std::remove_cv_t<std::remove_pointer_t<decltype(x)>>>)
      return static_cast<double>(x[i]);
    else
      return static_cast<double>(static_cast<float>(x[i]));  // a 16-bit value, exactly
  });
}

inline std::size_t SlotView::element_bytes() const {
  return with_elements(*this, [](const auto* x) { return sizeof *x; });
}

// The checks' scan of a slot's buffer, in its storage type.
inline ScanResult scan_view(const SlotView& v) {
  return with_elements(v, [&v](const auto* x) { return scan_nonfinite(x, v.count); });
}

struct StepKey {
  std::uint64_t seed = 1;
  int fold = 0;
  int step = 0;
  std::int64_t global_step = 0;
};

// A backend's losses() are the batch means of the loss terms of the last forward pass, the last
// global gradient norm (the one clipping used) and the per-group norms as the grad_norm slot holds
// them (core/step_losses.h).

// Parameters, target network and Adam state in layout order (existing parameters only), as
// doubles: what a dump stores as "the state before the step" and what a replay restores.
struct StateSnapshot {
  std::vector<double> params, target, adam_m, adam_v;
  std::int64_t adam_t = 0;
};

// A kept state for time travel: the state before step `step` of fold `fold`. With it, the seed,
// the fold and the step (every draw and the data cursor follow from them) and the run's
// injections, that step and every later one of the fold can be recomputed bit for bit.
struct Checkpoint {
  int fold = 0, step = 0;
  std::int64_t global_step = 0;
  StateSnapshot state;
};

// A named array of the step's batch context (obs, actions, returns, ..., tau samples).
struct NamedArray {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::vector<double> values;
  bool integer = false;  // stored as int32 (actions)
};
using BatchContext = std::vector<NamedArray>;

// The session's hook at the slot call sites of the spec (fault injection, and watching): a backend
// calls `produced` right after the producer wrote a slot's buffer (before any consumer reads it)
// and `check` at the slot's check site, after its own bank checked the slot there.
class SlotObserver {
 public:
  virtual ~SlotObserver() = default;
  virtual void produced(int slot) { (void)slot; }
  virtual void check(int slot) { (void)slot; }
  // Whether `produced(slot)` writes the slot's buffer at the current step. A producer kernel may
  // check its own output in place of the check site only when nothing writes the buffer between.
  virtual bool overwrites(int slot) {
    (void)slot;
    return false;
  }
  // Whether `produced` writes some buffer at the current step: such a step runs live, phase by
  // phase, never as replayed recorded work.
  virtual bool writes_this_step() { return false; }
};

// A value a fault injection overwrote (element index in the slot's buffer, old value).
struct Overwritten {
  std::size_t index;
  double value;
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

  // Time travel (session/checkpoints.h): a ring of trainer states kept where the state lives.
  // Here the host's copy (the CPU backend); the CUDA backend keeps them in device memory and copies
  // device to device in stream order, so that the steps between two checkpoints pay nothing.
  // One checkpoint's size, as the ring's budget (history.memory_mb) counts it.
  virtual std::size_t checkpoint_bytes() const {
    return 4 * layout().total() * sizeof(double) + sizeof(std::int64_t);
  }
  // Makes room for `capacity` checkpoints; the kept ones are dropped.
  virtual void reserve_checkpoints(int capacity) {
    host_checkpoints_.assign(static_cast<std::size_t>(capacity), StateSnapshot{});
  }
  // Copies the state as it is now into ring entry `index` (in [0, capacity)).
  virtual void keep_checkpoint(int index) {
    read_state(host_checkpoints_.at(static_cast<std::size_t>(index)));
  }
  virtual void read_checkpoint(int index, StateSnapshot& out) const {
    out = host_checkpoints_.at(static_cast<std::size_t>(index));
  }

  // The backend's checks: its bank (model/check_bank.h).
  virtual CheckBank& checks() = 0;
  // Runs a whole step, its phases in order. With the step graph on (a backend that supports one),
  // the backend may record a step's work once and replay it for the next steps.
  virtual void run_step(const StepKey& key) {
    for (int p = 0; p < kPhaseCount; ++p) run_phase(static_cast<Phase>(p), key);
  }
  virtual bool supports_step_graph() const { return false; }
  virtual void set_step_graph(bool on) { (void)on; }
  // Diagnostics for tests and benches: copies from the device to the host so far, and how many
  // times the step's work was recorded.
  virtual std::int64_t device_to_host_copies() const { return 0; }
  virtual int step_graph_captures() const { return 0; }

 private:
  std::vector<StateSnapshot> host_checkpoints_;
};

// The CPU reference backend, float32 or float64 storage per config.model.precision.
std::unique_ptr<Backend> make_cpu_backend(const Config& config);

}  // namespace nanscope
