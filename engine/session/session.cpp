#include "session/recording.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "model/slot_shapes.h"

namespace nanscope {

namespace {
std::array<bool, kGroupCount> groups_present(const ParamLayout& layout) {
  std::array<bool, kGroupCount> present{};
  for (const ParamEntry* e : layout.existing()) present[static_cast<std::size_t>(e->group)] = true;
  return present;
}
}  // namespace

// The session's hands in the backend: slot injections right after a producer. The checks are the
// backend's own (its bank); the session receives their outcomes.
class Session::Observer final : public SlotObserver {
 public:
  explicit Observer(Session& s) : s_(s) {}

  void produced(int slot) override {
    for (const Injection& inj : s_.injections_) {
      if (!injects_now(inj, slot)) continue;
      for (const Overwritten& o : s_.backend_->inject_slot(slot, inj.element, inj.value()))
        s_.record_injected(slot, o.index, o.value);
    }
  }

  bool overwrites(int slot) override {
    return std::any_of(s_.injections_.begin(), s_.injections_.end(),
                       [&](const Injection& inj) { return injects_now(inj, slot); });
  }

  bool writes_this_step() override { return s_.slot_injection_due(); }

  void check(int slot) override {
    if (s_.check_hook_) s_.check_hook_(slot);
  }

 private:
  bool injects_now(const Injection& inj, int slot) const {
    return inj.target == Injection::Target::Slot && inj.slot == slot && inj.fold == s_.fold_ &&
           inj.step == s_.step_;
  }

  Session& s_;
};

Session::Session(const Config& config, std::unique_ptr<Backend> backend, SessionOptions options)
    : config_(config),
      backend_(std::move(backend)),
      options_(std::move(options)),
      bank_(SlotTable::builtin(), slot_setup(config)),
      observer_(std::make_unique<Observer>(*this)),
      ring_(config_, CheckpointRing::capacity_for(config_, backend_->checkpoint_bytes())),
      watches_(config_.watch, groups_present(backend_->layout())) {
  for (const auto& spec : config_.inject.faults) {
    try {
      injections_.push_back(parse_injection(spec));
    } catch (const UsageError& e) {
      throw ConfigError(fmt::format("config: key 'inject.faults': {}", e.what()));
    }
  }
  // Every injection is part of the run's recorded config (run file, dumps): offline, a fire can be
  // told from an injected one, and a replay knows what the step had that it does not reproduce.
  for (const auto& inj : options_.injections) {
    injections_.push_back(inj);
    config_.inject.faults.push_back(inj.spec);
  }
  validate_injections();
  bars_ = load_bars(config_);
  windows_ =
      plan_folds(static_cast<int>(bars_.bars.size()), config_.run.folds, config_.data.n_step);
  backend_->set_observer(observer_.get());
  backend_->set_step_graph(options_.graph);
  if (ring_.capacity() > 0) backend_->reserve_checkpoints(ring_.capacity());
  open_recording();
}

Session::~Session() {
  backend_->set_observer(nullptr);
}

void Session::validate_injections() {
  for (const Injection& inj : injections_) {
    auto fail = [&](const std::string& what) {
      return UsageError(fmt::format("--inject '{}': {}", inj.spec, what));
    };
    if (inj.fold >= config_.run.folds)
      throw fail(
          fmt::format("fold {} is beyond the run (run.folds = {})", inj.fold, config_.run.folds));
    if (inj.step >= config_.run.steps_per_fold)
      throw fail(fmt::format("step {} is beyond the fold (run.steps_per_fold = {})", inj.step,
                             config_.run.steps_per_fold));
    std::size_t count = 0;
    if (inj.target == Injection::Target::Slot) {
      if (bank_.setup().state[inj.slot] == SlotState::Absent)
        throw fail(fmt::format("slot {} {} does not exist in this run ({})", inj.slot,
                               builtin_slot(inj.slot).name, bank_.setup().reason[inj.slot]));
      count = element_count(slot_shape(backend_->dims(), inj.slot, backend_->layout().total()));
    } else {
      const ParamEntry* e = backend_->layout().find(inj.param);
      if (!e) throw fail(fmt::format("unknown parameter '{}' (see --list-params)", inj.param));
      count = e->count;
    }
    if (inj.element && *inj.element >= count)
      throw fail(fmt::format("element {} is out of range (the buffer has {} elements)",
                             *inj.element, count));
  }
}

void Session::begin_fold() {
  if (fold_ > 0 && config_.run.reinit_per_fold) backend_->reset_parameters();
  load_fold_data();
  bank_.begin_fold(fold_);
  backend_->checks().begin_fold(bank_.setup());
  watches_.begin_fold();
  FoldSummary f;
  f.fold = fold_;
  f.flags = bank_.readback();  // every slot clean or off: a fold that has not stepped yet
  folds_.push_back(f);
  fold_loaded_ = true;
}

void Session::load_fold_data() {
  if (transitions_fold_ == fold_) return;
  backend_->load_fold(build_transitions(bars_, windows_[static_cast<std::size_t>(fold_)], config_));
  transitions_fold_ = fold_;
}

void Session::apply_param_injections() {
  for (const Injection& inj : injections_) {
    if (inj.target != Injection::Target::Param || inj.fold != fold_ || inj.step != step_) continue;
    std::vector<double> p = backend_->read_param(inj.param);
    if (inj.element)
      p[*inj.element] = inj.value();
    else
      std::fill(p.begin(), p.end(), inj.value());
    backend_->write_param(inj.param, p);
  }
}

void Session::begin_step() {
  CheckBank& checks = backend_->checks();
  checks.set_report_each_step(must_report_each_step());
  checks.begin_step(StepKey{config_.run.seed, fold_, step_, global_step_});
  injected_.clear();
  // The state before the step and before its parameter injections (a recomputation makes them).
  if (ring_.due(step_)) backend_->keep_checkpoint(ring_.take(fold_, step_, global_step_));
  apply_param_injections();
}

// Whether the step about to run must hand its outcome over at its end: outside a run() that can
// wait (see run_steps), and at a step with a slot injection when recording (its dump needs the
// values the injection overwrote, which the session holds for the current step only).
bool Session::must_report_each_step() const {
  return !outcomes_may_wait_ || (rec_ && slot_injection_due());
}

Phase Session::step_phase() {
  return run_next_phase();
}

// Refuses work after a device error (for good: a new session goes on) and at the end of the run.
void Session::require_runnable() const {
  if (!device_failure_.empty())
    throw DeviceError(
        "the session stopped on a device error; a new session (the CPU backend, or the device once "
        "it has recovered) goes on (" +
        device_failure_ + ")");
  if (finished())
    throw UsageError("the run has finished; start it again (Stop in the workbench) to run again");
}

// Runs `work`; a device error it raises stops the session (recorded, then passed on).
template <class F>
auto Session::stopping_on_device_error(F&& work) {
  try {
    return work();
  } catch (const DeviceError& e) {
    device_failure_ = e.what();
    throw;
  }
}

Checkpoint Session::read_checkpoint(const CheckpointMark& mark) const {
  Checkpoint c{mark.fold, mark.step, mark.global_step, {}};
  backend_->read_checkpoint(mark.ring_index, c.state);
  return c;
}

void Session::resume_at(const Checkpoint& cp) {
  if (rec_) throw UsageError("a session that records a run cannot resume at a checkpoint");
  if (cp.fold < 0 || cp.fold >= config_.run.folds || cp.step < 0 ||
      cp.step >= config_.run.steps_per_fold)
    throw UsageError(
        fmt::format("checkpoint at fold {} step {} is outside the run ({} folds of {} "
                    "steps)",
                    cp.fold, cp.step, config_.run.folds, config_.run.steps_per_fold));
  stopping_on_device_error([&] {
    backend_->checks().take_held();  // a previous piece's outcomes belong to its own steps
    history_.clear();
    folds_.clear();
    events_.clear();
    watch_trips_.clear();
    halt_.reset();
    collapse_streak_ = 0;
    fold_ = cp.fold;
    step_ = cp.step;
    next_phase_ = 0;
    global_step_ = cp.global_step;
    begin_fold();
    backend_->write_state(cp.state);
  });
}

Phase Session::run_next_phase() {
  require_runnable();
  return stopping_on_device_error([&] {
    if (!fold_loaded_) begin_fold();
    if (next_phase_ == 0) begin_step();
    const Phase phase = static_cast<Phase>(next_phase_);
    backend_->run_phase(phase, StepKey{config_.run.seed, fold_, step_, global_step_});
    if (++next_phase_ == kPhaseCount) finish_step();
    return phase;
  });
}

void Session::step() {
  if (next_phase_ != 0) {  // the rest of a step stepped phase by phase
    do {
      run_next_phase();
    } while (next_phase_ != 0);
    return;
  }
  require_runnable();
  stopping_on_device_error([&] {
    if (!fold_loaded_) begin_fold();
    begin_step();
    backend_->run_step(StepKey{config_.run.seed, fold_, step_, global_step_});
    finish_step();
  });
}

bool Session::slot_injection_due() const {
  for (const Injection& inj : injections_)
    if (inj.target == Injection::Target::Slot && inj.fold == fold_ && inj.step == step_)
      return true;
  return false;
}

void Session::finish_step() {
  next_phase_ = 0;
  complete_steps(backend_->checks().end_step());
  advance_step();
}

void Session::advance_step() {
  ++global_step_;
  if (++step_ == config_.run.steps_per_fold) end_fold();
}

void Session::complete_steps(std::vector<StepOutcome> outcomes) {
  for (StepOutcome& o : outcomes) complete_step(o);
}

// The host's bookkeeping of a step the backend's bank has finished: the fold's records, history,
// fold summary, first-fire events and dumps, halts and breakpoints.
void Session::complete_step(StepOutcome& o) {
  bank_.begin_step(o.step);
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    const auto i = static_cast<std::size_t>(s);
    if (o.kinds[i])
      bank_.record_at(s, ScanResult{o.kinds[i], std::max<std::int64_t>(0, o.first_count[i]), -1},
                      o.first_exec[i]);
  }
  bank_.end_step();
  StepRecord rec{fold_,
                 o.step,
                 o.global_step,
                 o.losses,
                 bank_.step_flags(),
                 o.updated,
                 bank_.setup().checked_set(),
                 o.health};
  history_.push_back(rec);

  FoldSummary& f = folds_.back();
  if (f.steps == 0) {
    f.loss_first = rec.losses.total;
    f.c51_first = rec.losses.c51;
  }
  f.loss_last = rec.losses.total;
  f.c51_last = rec.losses.c51;
  ++f.steps;
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    const double a = abs_max(o.health[static_cast<std::size_t>(s)]);
    SlotPeak& p = f.peaks[static_cast<std::size_t>(s)];
    if (a > p.abs_max) p = SlotPeak{a, o.step};  // NaN compares false: unmeasured steps are skipped
  }
  const bool loss_bad = !std::isfinite(rec.losses.total);
  const bool new_loss_bad = loss_bad && !f.nonfinite_loss;  // the fold's first non-finite loss
  f.nonfinite_loss = f.nonfinite_loss || loss_bad;
  f.flags = bank_.readback();

  // A first fire in this fold: the entry point at this step.
  const std::optional<int> first = first_by_rank(bank_.table(), f.flags.slots, o.step);
  if (first)
    events_.push_back(
        Event{fold_, o.step, EventKind::FirstFire, *first, record_dump(o, *first), std::nullopt});

  const int entry = f.flags.entry_slot.value_or(-1);
  auto stop = [&](EventKind kind) {
    const std::string dump = first ? events_.back().dump : std::string();
    halt_ = Event{fold_, o.step, kind, entry, dump, std::nullopt};
    events_.push_back(*halt_);
  };
  // A breakpoint stops once per slot and fold: after the step in which its slot first fired in
  // the fold; halting at a fire stops at a new first fire (or the fold's first non-finite loss),
  // so that running on after a stop goes to the next new thing, not the same fire again.
  // Watch conditions: each trip a warning event naming its slot; a halt only with halt.on_watch.
  const std::vector<WatchTrip> trips = watches_.step(fold_, o);
  for (const WatchTrip& t : trips) {
    watch_trips_.push_back(t);
    events_.push_back(Event{fold_, o.step, EventKind::Watch, t.slot, std::string(), t});
  }
  bool hit_break = false;
  for (int s : options_.breakpoints) hit_break = hit_break || f.flags.slots[s].first_step == o.step;
  const bool new_fire = first.has_value() || new_loss_bad;
  if (hit_break)
    stop(EventKind::Breakpoint);
  else if (new_fire && (until_new_fire_ ||
                        (options_.breakpoints.empty() && config_.halt.on_fire == HaltOnFire::Step)))
    stop(EventKind::HaltNan);
  else if (!trips.empty() && config_.halt.on_watch)
    stop(EventKind::HaltWatch);

  // Grad collapse: the watched group's norm (slot 21 holds [global, groups...]).
  if (config_.halt.collapse_patience > 0) {
    const double norm =
        rec.losses.group_norm[static_cast<std::size_t>(config_.halt.collapse_group)];
    collapse_streak_ = norm < config_.halt.collapse_eps ? collapse_streak_ + 1 : 0;
    if (collapse_streak_ >= config_.halt.collapse_patience && !halt_) {
      stop(EventKind::HaltGradCollapse);
      collapse_streak_ = 0;
    }
  }
}

void Session::end_fold() {
  complete_steps(backend_->checks().take_held());
  FoldSummary& f = folds_.back();
  f.flags = bank_.readback();
  const int last = step_ - 1;
  if (options_.breakpoints.empty() && config_.halt.on_fire == HaltOnFire::FoldEnd && !halt_ &&
      (f.flags.any_fired() || f.nonfinite_loss)) {
    std::string dump;  // the dump of the fold's entry step
    for (const auto& e : events_)
      if (e.kind == EventKind::FirstFire && e.fold == fold_ &&
          e.step == f.flags.entry_step.value_or(-1))
        dump = e.dump;
    halt_ =
        Event{fold_, last, EventKind::HaltNan, f.flags.entry_slot.value_or(-1), dump, std::nullopt};
    events_.push_back(*halt_);
  }
  step_ = 0;
  ++fold_;
  fold_loaded_ = false;
  write_run_file();
}

StopReason Session::run(RunUntil until, const std::function<bool()>& cancel,
                        const std::function<void(const StepRecord&)>& after_step) {
  StopReason reason;
  try {
    reason = run_steps(until, cancel, after_step);
  } catch (const DeviceError&) {
    // The steps that finished before the device failed are the user's evidence: the run file
    // says so much (host-side history only; the device is not touched again).
    try {
      write_run_file();
    } catch (const Error&) {
    }
    throw;
  }
  write_run_file();  // the run file is complete whenever run() returns
  return reason;
}

StopReason Session::run_piece(RunUntil until, const std::function<bool()>& cancel,
                              const std::function<void(const StepRecord&)>& after_step) {
  return run_steps(until, cancel, after_step);
}

// A run lets the backend's bank hand steps over later (a device reads a fold's records back at
// its end, or every few steps when recording) unless it must act on a step within the step:
// halting or breaking at it (a fire, a watch), watching for a gradient collapse, or stopping at a
// fire.
static bool outcomes_may_wait(const Config& c, const SessionOptions& o, const RunUntil& until) {
  return o.breakpoints.empty() && c.halt.on_fire != HaltOnFire::Step && !c.halt.on_watch &&
         c.halt.collapse_patience <= 0 && until.kind != RunUntil::Kind::AnyFire &&
         until.kind != RunUntil::Kind::SlotFires;
}

StopReason Session::run_steps(RunUntil until, const std::function<bool()>& cancel,
                              const std::function<void(const StepRecord&)>& after_step) {
  halt_.reset();
  const std::int64_t start = global_step_;
  std::size_t reported = history_.size();
  auto report = [&] {
    for (; after_step && reported < history_.size(); ++reported) after_step(history_[reported]);
  };
  // The step loop; every way out takes the outcomes the bank still holds (take_held).
  auto loop = [&]() -> StopReason {
    while (!finished()) {
      if (cancel && cancel()) return StopReason::Cancelled;
      const int fold = fold_;
      step();
      report();
      if (halt_) return StopReason::Halted;
      switch (until.kind) {
        case RunUntil::Kind::End:
          break;
        case RunUntil::Kind::Steps:
          if (global_step_ - start >= until.steps) return StopReason::StepsDone;
          break;
        case RunUntil::Kind::FoldEnd:
          if (fold_ != fold) return StopReason::FoldEnd;
          break;
        case RunUntil::Kind::AnyFire:
          break;  // a new first fire halts (complete_step)
        case RunUntil::Kind::SlotFires:
          if (history_.back().flags[static_cast<std::size_t>(until.slot)])
            return StopReason::SlotFired;
          break;
      }
    }
    return StopReason::Finished;
  };
  outcomes_may_wait_ = outcomes_may_wait(config_, options_, until);
  until_new_fire_ = until.kind == RunUntil::Kind::AnyFire;
  StopReason reason;
  try {
    reason = loop();
  } catch (...) {
    outcomes_may_wait_ = until_new_fire_ = false;
    throw;
  }
  outcomes_may_wait_ = until_new_fire_ = false;
  stopping_on_device_error([&] { complete_steps(backend_->checks().take_held()); });
  report();
  return reason;
}

void Session::set_checked(int slot, bool on) {
  bank_.set_checked(slot, on);
  backend_->checks().set_checked(slot, on);
  if (fold_loaded_ && !folds_.empty()) folds_.back().flags = bank_.readback();
  auto& disabled = config_.sentinel.disabled;
  auto& undefer = config_.sentinel.undefer;
  disabled.erase(std::remove(disabled.begin(), disabled.end(), slot), disabled.end());
  if (!on) disabled.push_back(slot);
  if (on && builtin_slot(slot).starts_deferred &&
      std::find(undefer.begin(), undefer.end(), slot) == undefer.end())
    undefer.push_back(slot);
}

std::optional<Session::Entry> Session::entry() const {
  return run_entry(folds_.size(),
                   [&](std::size_t k) -> const FoldFlags& { return folds_[k].flags; });
}

std::optional<Session::Entry> Session::backward_entry() const {
  return run_backward_entry(folds_.size(),
                            [&](std::size_t k) -> const FoldFlags& { return folds_[k].flags; });
}

}  // namespace nanscope
