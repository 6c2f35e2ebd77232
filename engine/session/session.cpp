#include "session/session.h"

#include "core/errors.h"

namespace nanscope {

Session::Session(const Config& config, std::unique_ptr<Backend> backend)
    : config_(config), backend_(std::move(backend)) {
  bars_ = load_bars(config_);
  windows_ = plan_folds(static_cast<int>(bars_.bars.size()), config_.run.folds, config_.data.n_step);
}

void Session::begin_fold() {
  if (fold_ > 0 && config_.run.reinit_per_fold) backend_->reset_parameters();
  backend_->load_fold(build_transitions(bars_, windows_[static_cast<std::size_t>(fold_)], config_));
  folds_.push_back(FoldSummary{fold_, 0, 0, 0, 0, 0});
  fold_loaded_ = true;
}

Phase Session::step_phase() {
  if (finished()) throw UsageError("the run has finished; reset to run again");
  if (!fold_loaded_) begin_fold();
  const Phase phase = static_cast<Phase>(next_phase_);
  backend_->run_phase(phase, StepKey{config_.run.seed, fold_, step_, global_step_});
  if (++next_phase_ == kPhaseCount) finish_step();
  return phase;
}

void Session::step() {
  do {
    step_phase();
  } while (next_phase_ != 0);
}

void Session::finish_step() {
  next_phase_ = 0;
  StepRecord rec{fold_, step_, global_step_, backend_->losses()};
  history_.push_back(rec);
  FoldSummary& f = folds_.back();
  if (f.steps == 0) {
    f.loss_first = rec.losses.total;
    f.c51_first = rec.losses.c51;
  }
  f.loss_last = rec.losses.total;
  f.c51_last = rec.losses.c51;
  ++f.steps;
  ++global_step_;
  if (++step_ == config_.run.steps_per_fold) {
    step_ = 0;
    ++fold_;
    fold_loaded_ = false;
  }
}

void Session::run(const std::function<bool(const StepRecord&)>& stop) {
  while (!finished()) {
    step();
    if (stop && stop(history_.back())) return;
  }
}

}  // namespace nanscope
