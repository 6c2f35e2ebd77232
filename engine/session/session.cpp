#include "session/recording.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "model/slot_shapes.h"

namespace nanscope {

// The session's eyes in the backend: checks slots at their call sites (read only), writes slot
// injections right after a producer, and tells the optimizer whether the guard lets it update.
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

  // A device producer may check its own output unless an injection will overwrite it first.
  bool producer_checks(int slot) override {
    if (!s_.backend_->device_sentinel() || !s_.bank_.setup().checked(slot)) return false;
    return std::none_of(s_.injections_.begin(), s_.injections_.end(),
                        [&](const Injection& inj) { return injects_now(inj, slot); });
  }

  void check(int slot) override {
    // Device checks: enqueued here, their results fed to the bank in execution order later.
    if (DeviceSentinel* ds = s_.backend_->device_sentinel()) {
      s_.device_exec_.push_back(slot);
      if (s_.bank_.setup().checked(slot)) ds->check(slot);
      return;
    }
    if (!s_.bank_.setup().checked(slot)) {
      s_.bank_.record(slot, ScanResult{});  // keeps the execution order honest
      return;
    }
    const ScanResult r = scan_view(s_.backend_->slot(slot));
    // First-fire capture: a copy is made only when a slot fires for the first time in its fold.
    if (s_.bank_.record(slot, r)) s_.record_first_fire(slot, r);
  }

  // A device backend decides the guard itself from its status word (no host round trip).
  bool allow_update() override {
    s_.record_before_update();
    if (s_.backend_->device_sentinel()) return true;
    return !(s_.config_.guard.enabled && s_.bank_.step_fired());
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
      bank_(slot_setup(config)),
      observer_(std::make_unique<Observer>(*this)) {
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
  open_recording();
}

Session::~Session() {
  backend_->set_observer(nullptr);
}

SlotObserver& Session::sentinel_observer() {
  return *observer_;
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
                               slot_info(inj.slot).name, bank_.setup().reason[inj.slot]));
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
  backend_->load_fold(build_transitions(bars_, windows_[static_cast<std::size_t>(fold_)], config_));
  bank_.begin_fold(fold_);
  if (DeviceSentinel* ds = backend_->device_sentinel()) ds->begin_fold();
  FoldSummary f;
  f.fold = fold_;
  folds_.push_back(f);
  fold_loaded_ = true;
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
  // A step read at its own end (see read_later) comes after the steps still waiting to be read:
  // those are read back first.
  if (!deferred_.empty() && !read_later()) settle_deferred();
  bank_.begin_step(step_);
  if (DeviceSentinel* ds = backend_->device_sentinel()) {
    ds->begin_step(step_);
    device_exec_.clear();
    device_fed_ = 0;
  }
  if (rec_) rec_->begin_step();
  apply_param_injections();
}

Phase Session::step_phase() {
  const Phase phase = run_next_phase();
  // Stepping phase by phase: the device's results so far are read back after each phase.
  if (DeviceSentinel* ds = backend_->device_sentinel(); ds && next_phase_ != 0)
    feed_device_checks(ds->status_now() != 0);
  return phase;
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
  DeviceSentinel* ds = backend_->device_sentinel();
  if (options_.graph && ds && next_phase_ == 0) {
    run_graphed_step(*ds);
    return;
  }
  do {
    run_next_phase();
  } while (next_phase_ != 0);
}

// Whether the step now running is read back after it ends (with others) rather than at its end. A
// step with a slot injection is read at its end when recording (its dump needs what it overwrote).
bool Session::read_later() const {
  return deferring_ && backend_->device_sentinel() && !(rec_ && slot_injection_due());
}

bool Session::slot_injection_due() const {
  for (const Injection& inj : injections_)
    if (inj.target == Injection::Target::Slot && inj.fold == fold_ && inj.step == step_)
      return true;
  return false;
}

void Session::run_graphed_step(DeviceSentinel& ds) {
  require_runnable();
  stopping_on_device_error([&] {
    if (!fold_loaded_) begin_fold();
    begin_step();
    // A step with a slot injection writes from the host between two kernels: it runs ungraphed,
    // through the same phase functions.
    if (slot_injection_due()) {
      for (int p = 0; p < kPhaseCount; ++p)
        backend_->run_phase(static_cast<Phase>(p),
                            StepKey{config_.run.seed, fold_, step_, global_step_});
    } else {
      std::uint64_t checked = 0;
      for (int s = 0; s < kSlotCount; ++s)
        if (bank_.setup().checked(s)) checked |= std::uint64_t{1} << s;
      // Whether the step keeps the state before the update is part of what a capture saw.
      const bool keeps_state = rec_ && !read_later();
      if (keeps_state) checked |= DeviceSentinel::kGraphKeepsState;
      ds.run_step_graphed(StepKey{config_.run.seed, fold_, step_, global_step_}, checked);
      // A capture saw the check calls (and recorded their order); a replay makes none.
      if (device_exec_.empty())
        device_exec_ = graph_exec_order_;
      else
        graph_exec_order_ = device_exec_;
      // With recording, the capture saw record_before_update keep the state before the update, so
      // every replay keeps it too: a dump read at this step's end takes that state.
      if (keeps_state) rec_->pre_update_taken = true;
    }
    next_phase_ = kPhaseCount;
    finish_step();
  });
}

void Session::feed_device_checks(bool any_fired) {
  DeviceSentinel::StepDetail detail;
  if (any_fired) detail = backend_->device_sentinel()->step_detail();
  feed_device_detail(detail);
}

void Session::feed_device_detail(const DeviceSentinel::StepDetail& detail) {
  for (; device_fed_ < device_exec_.size(); ++device_fed_) {
    const int slot = device_exec_[device_fed_];
    ScanResult r;
    r.kinds = detail.kinds[static_cast<std::size_t>(slot)];
    r.count = std::max<std::int64_t>(0, detail.first_count[static_cast<std::size_t>(slot)]);
    if (bank_.record(slot, r)) record_first_fire(slot, r);
  }
}

void Session::finish_step() {
  next_phase_ = 0;
  DeviceSentinel* ds = backend_->device_sentinel();
  if (ds && read_later()) {  // read back with the rest of the fold's steps
    deferred_.push_back(Deferred{step_, global_step_});
    last_exec_order_ = device_exec_;
    // Recording: the device holds the contexts of this many steps with a first fire.
    if (rec_ && static_cast<int>(deferred_.size()) >= capture_steps_) settle_deferred();
    advance_step();
    return;
  }
  StepLosses losses = backend_->losses();
  if (ds) {
    const DeviceSentinel::StepReport r = ds->end_step();
    losses = r.losses;
    feed_device_checks(r.status != 0);
  }
  complete_step(losses);
  advance_step();
}

void Session::settle_deferred() {
  if (deferred_.empty()) return;
  const auto reads =
      backend_->device_sentinel()->read_steps(deferred_.front().step, deferred_.back().step);
  const int step = step_;
  const std::int64_t global = global_step_;
  struct Settling {  // first-fire dumps take what the device captured while this is set
    bool& flag;
    explicit Settling(bool& f) : flag(f) { flag = true; }
    ~Settling() { flag = false; }
  } settling(settling_);
  for (std::size_t i = 0; i < deferred_.size(); ++i) {
    step_ = deferred_[i].step;
    global_step_ = deferred_[i].global_step;
    bank_.begin_step(step_);
    if (rec_) rec_->begin_step();
    device_exec_ = last_exec_order_;
    device_fed_ = 0;
    feed_device_detail(reads[i].second);
    complete_step(reads[i].first.losses);
  }
  step_ = step;
  global_step_ = global;
  deferred_.clear();
}

void Session::advance_step() {
  ++global_step_;
  if (++step_ == config_.run.steps_per_fold) end_fold();
}

// The host's bookkeeping of a step whose checks the bank has been told: history, fold summary,
// first-fire events and dumps, halts and breakpoints.
void Session::complete_step(const StepLosses& losses) {
  bank_.end_step();
  std::uint64_t checked = 0;
  for (int s = 0; s < kSlotCount; ++s)
    if (bank_.setup().checked(s)) checked |= std::uint64_t{1} << s;
  StepRecord rec{fold_,
                 step_,
                 global_step_,
                 losses,
                 bank_.step_flags(),
                 !(config_.guard.enabled && bank_.step_fired()),
                 checked};
  history_.push_back(rec);

  FoldSummary& f = folds_.back();
  if (f.steps == 0) {
    f.loss_first = rec.losses.total;
    f.c51_first = rec.losses.c51;
  }
  f.loss_last = rec.losses.total;
  f.c51_last = rec.losses.c51;
  ++f.steps;
  const bool loss_bad = !std::isfinite(rec.losses.total);
  const bool new_loss_bad = loss_bad && !f.nonfinite_loss;  // the fold's first non-finite loss
  f.nonfinite_loss = f.nonfinite_loss || loss_bad;
  f.flags = bank_.readback();

  // A first fire in this fold: the entry point at this step.
  const std::optional<int> first = first_by_rank(f.flags.slots, step_);
  if (first)
    events_.push_back(Event{fold_, step_, EventKind::FirstFire, *first, record_end_step(*first)});

  const int entry = f.flags.entry_slot.value_or(-1);
  auto stop = [&](EventKind kind) {
    halt_ = Event{fold_, step_, kind, entry, first ? events_.back().dump : std::string()};
    events_.push_back(*halt_);
  };
  // A breakpoint stops once per slot and fold: after the step in which its slot first fired in
  // the fold; halting at a fire stops at a new first fire (or the fold's first non-finite loss),
  // so that running on after a stop goes to the next new thing, not the same fire again.
  bool hit_break = false;
  for (int s : options_.breakpoints) hit_break = hit_break || f.flags.slots[s].first_step == step_;
  const bool new_fire = first.has_value() || new_loss_bad;
  if (hit_break)
    stop(EventKind::Breakpoint);
  else if (new_fire && (until_new_fire_ ||
                        (options_.breakpoints.empty() && config_.halt.on_fire == HaltOnFire::Step)))
    stop(EventKind::HaltNan);

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
  settle_deferred();
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
    halt_ = Event{fold_, last, EventKind::HaltNan, f.flags.entry_slot.value_or(-1), dump};
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

// With a device backend, a run reads each step's record only when it must act on it within the
// step: halting or breaking at a step, watching for a gradient collapse, stopping at a fire, or
// writing first-fire dumps when the device cannot capture them itself. Otherwise the fold's steps
// are read back together at its end (or when the run stops; when recording, every capture_steps_).
bool Session::must_read_every_step(const RunUntil& until) const {
  return !options_.breakpoints.empty() || config_.halt.on_fire == HaltOnFire::Step ||
         config_.halt.collapse_patience > 0 || (rec_ != nullptr && capture_steps_ == 0) ||
         until.kind == RunUntil::Kind::AnyFire || until.kind == RunUntil::Kind::SlotFires;
}

StopReason Session::run_steps(RunUntil until, const std::function<bool()>& cancel,
                              const std::function<void(const StepRecord&)>& after_step) {
  halt_.reset();
  const std::int64_t start = global_step_;
  std::size_t reported = history_.size();
  auto report = [&] {
    for (; after_step && reported < history_.size(); ++reported) after_step(history_[reported]);
  };
  // The step loop; every way out settles the steps not read back yet.
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
  deferring_ = backend_->device_sentinel() && !must_read_every_step(until);
  until_new_fire_ = until.kind == RunUntil::Kind::AnyFire;
  StopReason reason;
  try {
    reason = loop();
  } catch (...) {
    deferring_ = until_new_fire_ = false;
    deferred_.clear();
    throw;
  }
  settle_deferred();
  deferring_ = until_new_fire_ = false;
  report();
  return reason;
}

void Session::set_checked(int slot, bool on) {
  bank_.set_checked(slot, on);
  if (fold_loaded_ && !folds_.empty()) folds_.back().flags = bank_.readback();
  auto& disabled = config_.sentinel.disabled;
  auto& undefer = config_.sentinel.undefer;
  disabled.erase(std::remove(disabled.begin(), disabled.end(), slot), disabled.end());
  if (!on) disabled.push_back(slot);
  if (on && slot_info(slot).starts_deferred &&
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
