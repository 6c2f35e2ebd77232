#include "session/recording.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace nanscope {

// The session's eyes in the backend: checks slots at their call sites (read only), writes slot
// injections right after a producer, and tells the optimizer whether the guard lets it update.
class Session::Observer final : public SlotObserver {
 public:
  explicit Observer(Session& s) : s_(s) {}

  void produced(int slot) override {
    for (const Injection& inj : s_.injections_) {
      if (inj.target != Injection::Target::Slot || inj.slot != slot || inj.fold != s_.fold_ ||
          inj.step != s_.step_)
        continue;
      for (const Overwritten& o : s_.backend_->inject_slot(slot, inj.element, inj.value()))
        s_.record_injected(slot, o.index, o.value);
    }
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
    SlotView v = s_.backend_->slot(slot);
    const ScanResult r = v.is_f64 ? scan_nonfinite(static_cast<const double*>(v.data), v.count)
                                  : scan_nonfinite(static_cast<const float*>(v.data), v.count);
    // First-fire capture: a copy is made only when a slot fires for the first time in its fold.
    if (s_.bank_.record(slot, r)) s_.record_first_fire(slot, r);
  }

  bool allow_update() override {
    s_.record_before_update();
    if (!s_.config_.guard.enabled) return true;
    DeviceSentinel* ds = s_.backend_->device_sentinel();
    return !(ds ? ds->status_now() != 0 : s_.bank_.step_fired());
  }

 private:
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
  for (const auto& inj : options_.injections) injections_.push_back(inj);
  validate_injections();
  bars_ = load_bars(config_);
  windows_ = plan_folds(static_cast<int>(bars_.bars.size()), config_.run.folds, config_.data.n_step);
  backend_->set_observer(observer_.get());
  open_recording();
}

Session::~Session() { backend_->set_observer(nullptr); }

SlotObserver& Session::sentinel_observer() { return *observer_; }

void Session::validate_injections() {
  for (const Injection& inj : injections_) {
    auto fail = [&](const std::string& what) {
      return UsageError(fmt::format("--inject '{}': {}", inj.spec, what));
    };
    if (inj.fold >= config_.run.folds)
      throw fail(fmt::format("fold {} is beyond the run (run.folds = {})", inj.fold, config_.run.folds));
    if (inj.step >= config_.run.steps_per_fold)
      throw fail(fmt::format("step {} is beyond the fold (run.steps_per_fold = {})", inj.step,
                             config_.run.steps_per_fold));
    std::size_t count = 0;
    if (inj.target == Injection::Target::Slot) {
      if (bank_.setup().state[inj.slot] == SlotState::Absent)
        throw fail(fmt::format("slot {} {} does not exist in this run ({})", inj.slot,
                               slot_info(inj.slot).name, bank_.setup().reason[inj.slot]));
      count = backend_->slot(inj.slot).count;
    } else {
      const ParamEntry* e = backend_->layout().find(inj.param);
      if (!e) throw fail(fmt::format("unknown parameter '{}' (see --list-params)", inj.param));
      count = e->count;
    }
    if (inj.element && *inj.element >= count)
      throw fail(fmt::format("element {} is out of range (the buffer has {} elements)", *inj.element, count));
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
    if (inj.element) p[*inj.element] = inj.value();
    else std::fill(p.begin(), p.end(), inj.value());
    backend_->write_param(inj.param, p);
  }
}

void Session::begin_step() {
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

Phase Session::run_next_phase() {
  if (!device_failure_.empty())
    throw DeviceError("the session stopped on a device error; reset it to go on (" + device_failure_ + ")");
  if (finished()) throw UsageError("the run has finished; reset to run again");
  try {
    if (!fold_loaded_) begin_fold();
    if (next_phase_ == 0) begin_step();
    const Phase phase = static_cast<Phase>(next_phase_);
    backend_->run_phase(phase, StepKey{config_.run.seed, fold_, step_, global_step_});
    if (++next_phase_ == kPhaseCount) finish_step();
    return phase;
  } catch (const DeviceError& e) {
    device_failure_ = e.what();
    throw;
  }
}

void Session::step() {
  do {
    run_next_phase();
  } while (next_phase_ != 0);
}

void Session::feed_device_checks(bool any_fired) {
  DeviceSentinel::StepDetail detail;
  if (any_fired) detail = backend_->device_sentinel()->step_detail();
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
  if (DeviceSentinel* ds = backend_->device_sentinel()) feed_device_checks(ds->end_step() != 0);
  bank_.end_step();
  StepRecord rec{fold_, step_, global_step_, backend_->losses(), bank_.step_flags(),
                 !(config_.guard.enabled && bank_.step_fired())};
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
  f.nonfinite_loss = f.nonfinite_loss || loss_bad;
  f.flags = bank_.readback();

  // A first fire in this fold: the entry point at this step.
  std::optional<int> first;
  for (int s = 0; s < kSlotCount; ++s)
    if (f.flags.slots[s].first_step == step_ &&
        (!first || slot_info(s).rank < slot_info(*first).rank))
      first = s;
  if (first) events_.push_back(Event{fold_, step_, "first_fire", *first, record_end_step(*first)});

  const int entry = f.flags.entry_slot.value_or(-1);
  auto stop = [&](const char* kind) {
    halt_ = Event{fold_, step_, kind, entry, first ? events_.back().dump : std::string()};
    events_.push_back(*halt_);
  };
  bool hit_break = false;
  for (int s : options_.breakpoints) hit_break = hit_break || bank_.step_flags(s) != 0;
  if (hit_break) stop("breakpoint");
  else if (options_.breakpoints.empty() && config_.halt.on_fire == "step" &&
           (bank_.step_fired() || loss_bad))
    stop("halt_nan");

  // Grad collapse: the watched group's norm (slot 21 holds [global, groups...]).
  if (config_.halt.collapse_patience > 0) {
    int g = 0;
    while (kParamGroups[g] != config_.halt.collapse_group) ++g;
    const double norm = rec.losses.group_norm[static_cast<std::size_t>(g)];
    collapse_streak_ = norm < config_.halt.collapse_eps ? collapse_streak_ + 1 : 0;
    if (collapse_streak_ >= config_.halt.collapse_patience && !halt_) {
      stop("halt_grad_collapse");
      collapse_streak_ = 0;
    }
  }

  ++global_step_;
  if (++step_ == config_.run.steps_per_fold) end_fold();
}

void Session::end_fold() {
  FoldSummary& f = folds_.back();
  f.flags = bank_.readback();
  const int last = step_ - 1;
  if (options_.breakpoints.empty() && config_.halt.on_fire == "fold_end" && !halt_ &&
      (f.flags.any_fired() || f.nonfinite_loss)) {
    std::string dump;  // the dump of the fold's entry step
    for (const auto& e : events_)
      if (e.kind == "first_fire" && e.fold == fold_ && e.step == f.flags.entry_step.value_or(-1)) dump = e.dump;
    halt_ = Event{fold_, last, "halt_nan", f.flags.entry_slot.value_or(-1), dump};
    events_.push_back(*halt_);
  }
  step_ = 0;
  ++fold_;
  fold_loaded_ = false;
  write_run_file();
}

StopReason Session::run(RunUntil until, const std::function<bool()>& cancel,
                        const std::function<void(const StepRecord&)>& after_step) {
  StopReason reason = run_steps(until, cancel, after_step);
  write_run_file();  // the run file is complete whenever run() returns
  return reason;
}

StopReason Session::run_steps(RunUntil until, const std::function<bool()>& cancel,
                              const std::function<void(const StepRecord&)>& after_step) {
  halt_.reset();
  const std::int64_t start = global_step_;
  while (!finished()) {
    if (cancel && cancel()) return StopReason::Cancelled;
    const int fold = fold_;
    step();
    if (after_step) after_step(history_.back());
    if (halt_) return StopReason::Halted;
    switch (until.kind) {
      case RunUntil::Kind::End: break;
      case RunUntil::Kind::Steps:
        if (global_step_ - start >= until.steps) return StopReason::StepsDone;
        break;
      case RunUntil::Kind::FoldEnd:
        if (fold_ != fold) return StopReason::FoldEnd;
        break;
      case RunUntil::Kind::AnyFire:
        if (history_.back().flags != std::array<std::uint8_t, kSlotCount>{}) return StopReason::AnyFire;
        break;
      case RunUntil::Kind::SlotFires:
        if (history_.back().flags[static_cast<std::size_t>(until.slot)]) return StopReason::SlotFired;
        break;
    }
  }
  return StopReason::Finished;
}

void Session::reset() {
  backend_->reset_parameters();
  bank_ = SentinelBank(slot_setup(config_));
  fold_ = step_ = next_phase_ = 0;
  global_step_ = 0;
  fold_loaded_ = false;
  collapse_streak_ = 0;
  history_.clear();
  folds_.clear();
  events_.clear();
  halt_.reset();
  device_failure_.clear();
}

void Session::set_checked(int slot, bool on) {
  bank_.set_checked(slot, on);
  if (fold_loaded_ && !folds_.empty()) folds_.back().flags = bank_.readback();
  auto& disabled = config_.sentinel.disabled;
  auto& undefer = config_.sentinel.undefer;
  disabled.erase(std::remove(disabled.begin(), disabled.end(), slot), disabled.end());
  if (!on) disabled.push_back(slot);
  if (on && slot == kEnsembleDLogits &&
      std::find(undefer.begin(), undefer.end(), slot) == undefer.end())
    undefer.push_back(slot);
}

std::optional<Session::Entry> Session::entry() const {
  for (const auto& f : folds_)
    if (f.flags.entry_slot) return Entry{*f.flags.entry_slot, f.fold, *f.flags.entry_step};
  return std::nullopt;
}

std::optional<Session::Entry> Session::backward_entry() const {
  for (const auto& f : folds_)
    if (f.flags.backward_entry)
      return Entry{f.flags.backward_entry->slot, f.fold, f.flags.backward_entry->step};
  return std::nullopt;
}

}  // namespace nanscope
