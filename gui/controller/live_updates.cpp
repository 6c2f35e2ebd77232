#include "controller/live_updates.h"

#include <filesystem>

#include "core/config_io.h"

namespace nanscope::gui {

StepRow step_row(const StepRecord& h) {
  return StepRow{h.fold, h.step, h.flags, h.checked, h.losses};
}

SnapshotHead live_head(Session& s, bool running, double rate, const QString& scenario) {
  SnapshotHead h;
  const Config& c = s.config();
  h.source = "live";
  h.backend = QString::fromStdString(s.backend().name());
  h.backend_kind = s.backend().kind();
  h.device = QString::fromStdString(s.backend().device_name());
  h.graph = s.graph();
  h.scenario = scenario;
  h.config_toml = QString::fromStdString(to_toml(c));
  h.builtin_type = QString::fromUtf8(name_of(c.model.precision).data(),
                                     static_cast<qsizetype>(name_of(c.model.precision).size()));
  h.steps_per_second = rate;
  h.running = running;
  h.finished = s.finished();
  h.fold = s.fold();
  h.step = s.step_in_fold();
  h.global_step = s.global_step();
  h.folds_total = c.run.folds;
  h.steps_per_fold = c.run.steps_per_fold;
  h.next_phase = QString::fromUtf8(phase_name(s.next_phase()).data());
  h.mid_step = s.mid_step();
  h.setup = s.bank().setup().state;
  if (const auto& e = s.halt())
    h.halt = SnapshotEvent{e->fold, e->step, e->kind, e->entry_slot, {}, e->watch};
  h.entry = s.entry();
  h.backward_entry = s.backward_entry();
  h.breakpoints = s.breakpoints();
  h.injections = c.inject.faults;
  h.run_file = QString::fromStdString(s.run_file_path());
  return h;
}

UpdatePtr LiveUpdates::make(Session& s, bool running, double rate, const QString& scenario) {
  auto u = std::make_shared<SnapshotUpdate>();
  u->seq = ++seq_;
  u->epoch = epoch_;
  u->head = live_head(s, running, rate, scenario);
  u->head.seq = u->seq;
  const auto& history = s.history();
  const auto& folds = s.folds();
  const auto& events = s.events();
  if (reset_ || steps_ > history.size() || events_ > events.size() || fold_ > folds.size()) {
    u->reset = true;
    steps_ = events_ = fold_ = 0;
    reset_ = false;
  }
  u->first_step = steps_;
  for (std::size_t i = steps_; i < history.size(); ++i) {
    u->steps.push_back(step_row(history[i]));
    u->health.push_back(history[i].health);
  }
  // The last fold the window holds may have changed since (its flags, a check turned off).
  u->first_fold = fold_ > 0 ? fold_ - 1 : 0;
  for (std::size_t k = u->first_fold; k < folds.size(); ++k) u->folds.push_back(folds[k].flags);
  u->first_event = events_;
  const std::filesystem::path dir = std::filesystem::path(s.run_file_path()).parent_path();
  for (std::size_t i = events_; i < events.size(); ++i) {
    const Event& e = events[i];
    u->events.push_back(
        {e.fold, e.step, e.kind, e.entry_slot,
         e.dump.empty() ? QString() : QString::fromStdString((dir / e.dump).string()), e.watch});
  }
  steps_ = history.size();
  events_ = events.size();
  fold_ = folds.size();
  return u;
}

std::optional<StepRef> live_buffer_step(const Session& s, int slot) {
  if (s.mid_step() &&
      static_cast<int>(builtin_slot(slot).written_in) < static_cast<int>(s.next_phase()))
    return StepRef{s.fold(), s.step_in_fold(), true};
  if (s.history().empty()) return std::nullopt;
  const StepRecord& last = s.history().back();
  return StepRef{last.fold, last.step, false};
}

}  // namespace nanscope::gui
