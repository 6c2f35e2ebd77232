// A training session: the bar series, its walk-forward folds, a backend and the sentinels,
// stepped phase by phase or step by step, with halts, breakpoints, the guard and fault injection
// (docs/slots.md). The GUI's engine thread and nanscope-run both drive one.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/event_kind.h"
#include "core/sentinel.h"
#include "data/bars.h"
#include "data/transitions.h"
#include "model/backend.h"
#include "model/check_bank.h"
#include "session/checkpoint_ring.h"
#include "session/injection.h"
#include "session/watch.h"

namespace nanscope {

struct StepRecord {
  int fold = 0;
  int step = 0;
  std::int64_t global_step = 0;
  StepLosses losses;
  StepFlags flags = StepFlags(kBuiltinSlotCount);  // this step's own flags per slot
  bool updated = true;                             // false when the guard skipped the update
  SlotSet checked = SlotSet(kBuiltinSlotCount);    // the slots checked at this step
  // Each slot's health (unmeasured: NaN).
  SlotHealthRows health = unmeasured_rows(kBuiltinSlotCount);
};

// A slot's largest finite absolute value over a fold's steps, and the first step that reached it.
struct SlotPeak {
  double abs_max = -1;  // -1: never measured
  int step = -1;
};

struct FoldSummary {
  int fold = 0;
  int steps = 0;
  double loss_first = 0, loss_last = 0;
  double c51_first = 0, c51_last = 0;
  bool nonfinite_loss = false;
  FoldFlags flags;  // the fold's readback (final once the fold has ended)
  std::array<SlotPeak, kBuiltinSlotCount> peaks{};  // from the slots' health
};

// Something the run stopped on or noticed: halts, breakpoints, first fires, watch trips.
struct Event {
  int fold = 0;
  int step = 0;
  EventKind kind = EventKind::Manual;
  int entry_slot = -1;             // the entry point at that moment (-1: none)
  std::string dump;                // dump file written for it, if any
  std::optional<WatchTrip> watch;  // a watch event's trip: condition, group, value, threshold
};

struct SessionOptions {
  std::vector<Injection> injections;  // in addition to config.inject.faults
  std::set<int> breakpoints;          // stop after the first step in which one of these fires
  std::string out_dir;                // run file and dumps go here; empty: no files
  // Run whole steps as the backend's step graph where it has one (Backend::set_step_graph; phase
  // stepping always runs phase by phase).
  bool graph = false;
  // The scenario preset the config started from ("healthy", "lr-explosion", ...), recorded in the
  // run file (root attribute `scenario`) so that a file names what it ran; empty: none given.
  std::string scenario;
};

// A value a slot injection overwrote at the current step (slot, element, the value before).
struct InjectedValue {
  int slot;
  std::size_t index;
  double value;
};

// Puts back into `batch` the values that slot injections into the batch or the taus overwrote:
// the batch as sampled, which is what a step's context holds.
void undo_batch_injections(const Dims& dims, const std::vector<InjectedValue>& injected,
                           BatchContext& batch);

enum class StopReason { Finished, Halted, StepsDone, FoldEnd, AnyFire, SlotFired, Cancelled };

// AnyFire stops after a step in which some slot fired for the first time in its fold (a new fire,
// not one that keeps firing), recording the halt_nan event `halt.on_fire = "step"` records;
// SlotFires after a step in which that slot fired.
struct RunUntil {
  enum class Kind { End, Steps, FoldEnd, AnyFire, SlotFires } kind = Kind::End;
  std::int64_t steps = 0;  // for Steps
  int slot = -1;           // for SlotFires
};

class Session {
 public:
  // Loads the bars, plans the folds and validates injections against this run; throws
  // ConfigError / DataError / MissingInputError / UsageError.
  Session(const Config& config, std::unique_ptr<Backend> backend, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Config& config() const { return config_; }
  Backend& backend() { return *backend_; }
  const BarSeries& bars() const { return bars_; }
  const std::vector<FoldWindow>& windows() const { return windows_; }
  const SentinelBank& bank() const { return bank_; }

  bool finished() const { return fold_ >= config_.run.folds; }
  int fold() const { return fold_; }
  int step_in_fold() const { return step_; }
  std::int64_t global_step() const { return global_step_; }
  Phase next_phase() const { return static_cast<Phase>(next_phase_); }
  bool mid_step() const { return next_phase_ != 0; }

  // Runs the next phase; completes the step after the optimizer. Returns the phase it ran.
  Phase step_phase();
  // Runs the rest of the current step (a whole step when between steps).
  void step();
  // Runs steps until the condition holds, a halt, the end of the run, or `cancel` returns true
  // (asked between steps). `after_step` sees every completed step. The run file is rewritten
  // when it returns.
  StopReason run(RunUntil until = {}, const std::function<bool()>& cancel = {},
                 const std::function<void(const StepRecord&)>& after_step = {});
  // The same, leaving the run file as it is (it is still rewritten at every fold end): for a
  // caller that runs in short pieces (the workbench's engine thread) and writes it when it stops.
  StopReason run_piece(RunUntil until, const std::function<bool()>& cancel,
                       const std::function<void(const StepRecord&)>& after_step = {});

  void set_breakpoints(std::set<int> slots) { options_.breakpoints = std::move(slots); }
  // The step graph on or off from the next step on (backends without one ignore it).
  void set_graph(bool on) {
    options_.graph = on;
    backend_->set_step_graph(on);
  }
  bool graph() const { return options_.graph && backend_->supports_step_graph(); }
  // Turns a slot's check on or off from the next check on; the config (and the run file's copy of
  // it) records the change in sentinel.disabled / sentinel.undefer.
  void set_checked(int slot, bool on);
  const std::set<int>& breakpoints() const { return options_.breakpoints; }

  const std::vector<StepRecord>& history() const { return history_; }
  const std::vector<FoldSummary>& folds() const { return folds_; }
  const std::vector<Event>& events() const { return events_; }
  // Every watch condition that tripped (each also an event of kind watch), in order.
  const std::vector<WatchTrip>& watch_trips() const { return watch_trips_; }
  // The halt (or breakpoint) that stopped the last run, if any.
  const std::optional<Event>& halt() const { return halt_; }

  // The run's entry point: the first fold with one (folds are chronological).
  using Entry = RunEntry;
  std::optional<Entry> entry() const;
  std::optional<Entry> backward_entry() const;

  // Files (when SessionOptions::out_dir is set): the run file's path, and every dump written.
  std::string run_file_path() const;
  const std::vector<std::string>& dump_paths() const;
  // Rewrites the run file now (it is also rewritten at every fold boundary and when run() ends).
  void write_run_file();

  // Time travel (docs/files.md, "Checkpoints"): the states kept so far, oldest first; the latest
  // one at or before a step of a fold; one read back to the host.
  const std::vector<CheckpointMark>& checkpoints() const { return ring_.marks(); }
  std::optional<CheckpointMark> checkpoint_at_or_before(int fold, int step) const {
    return ring_.at_or_before(fold, step);
  }
  Checkpoint read_checkpoint(const CheckpointMark& mark) const;
  // Puts a session that records nothing at a checkpoint: the next step is the checkpoint's, run
  // from its state, with the fold's records starting there (session/materialize.h). Throws
  // UsageError for a recording session or a fold or step the run lacks.
  void resume_at(const Checkpoint& checkpoint);
  // Called at every slot's check site, after its check (the buffer as the check saw it), in steps
  // that run phase by phase (a replayed step graph calls nothing); empty: none.
  void set_check_hook(std::function<void(int slot)> hook) { check_hook_ = std::move(hook); }
  // What the slot injections of the current (or just finished) step overwrote.
  const std::vector<InjectedValue>& injected_this_step() const { return injected_; }

 private:
  class Observer;
  struct Recording;
  void open_recording();
  void record_injected(int slot, std::size_t index, double original);
  std::string record_dump(StepOutcome& outcome, int entry_slot);
  void require_runnable() const;
  template <class F>
  auto stopping_on_device_error(F&& work);
  Phase run_next_phase();
  bool slot_injection_due() const;
  bool must_report_each_step() const;
  void complete_steps(std::vector<StepOutcome> outcomes);
  void complete_step(StepOutcome& outcome);
  void advance_step();
  StopReason run_steps(RunUntil until, const std::function<bool()>& cancel,
                       const std::function<void(const StepRecord&)>& after_step);
  void begin_fold();
  void load_fold_data();
  void begin_step();
  void finish_step();
  void end_fold();
  void validate_injections();
  void apply_param_injections();

  Config config_;
  std::unique_ptr<Backend> backend_;
  SessionOptions options_;
  std::vector<Injection> injections_;
  BarSeries bars_;
  std::vector<FoldWindow> windows_;
  SentinelBank bank_;  // the fold's records, from the backend bank's outcomes
  std::unique_ptr<Observer> observer_;
  CheckpointRing ring_;
  int transitions_fold_ = -1;  // the fold whose transitions the backend holds
  std::vector<InjectedValue> injected_;
  std::function<void(int)> check_hook_;
  Watches watches_;
  std::vector<WatchTrip> watch_trips_;
  int fold_ = 0, step_ = 0, next_phase_ = 0;
  std::int64_t global_step_ = 0;
  bool fold_loaded_ = false;
  int collapse_streak_ = 0;
  std::vector<StepRecord> history_;
  std::vector<FoldSummary> folds_;
  std::vector<Event> events_;
  std::optional<Event> halt_;
  std::unique_ptr<Recording> rec_;
  std::string device_failure_;  // a device error stopped the session for good
  // The running run() needs no step's outcome at the step's end (the bank may hand steps over
  // later), and whether it stops at a new first fire (RunUntil::AnyFire).
  bool outcomes_may_wait_ = false;
  bool until_new_fire_ = false;
};

}  // namespace nanscope
