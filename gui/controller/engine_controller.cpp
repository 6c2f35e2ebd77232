#include "controller/engine_controller.h"

#include <QDateTime>
#include <QDir>
#include <filesystem>

#include "backend_choice.h"
#include "core/config_io.h"
#include "core/errors.h"
#include "session/scenarios.h"

namespace nanscope::gui {

EngineController::EngineController(QObject* parent) : QObject(parent) {}
EngineController::~EngineController() = default;

template <class F>
void EngineController::guarded(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    Q_EMIT errorOccurred(QString::fromStdString(e.what()));
    publish(false);
  }
}

void EngineController::RT_configure(EngineSettings settings) {
  settings_ = std::move(settings);
  injections_.clear();
  guarded([&] { rebuild(); });
}

void EngineController::rebuild() {
  std::vector<std::string> sets;
  for (const QString& kv : settings_.sets) sets.push_back(kv.toStdString());
  const Config config = resolve_config(settings_.scenario.toStdString(), settings_.config_file.toStdString(), sets);
  SessionOptions o;
  o.injections = injections_;
  o.breakpoints = breakpoints_;
  o.graph = settings_.graph;
  QString dir = QDir(settings_.out_root).filePath(
      "gui-" + QDateTime::currentDateTimeUtc().toString("yyyyMMddTHHmmsszzz") + "Z");
  o.out_dir = dir.toStdString();
  session_.reset();
  session_ = std::make_unique<Session>(config, choose_backend("auto", config, false), o);
  session_->write_run_file();
  publish(false);
}

void EngineController::publish(bool running) {
  if (!session_) return;
  Q_EMIT snapshotReady(make_snapshot(*session_, ++seq_, running, rate_, settings_.scenario));
}

void EngineController::RT_stepPhase() {
  guarded([&] {
    if (!session_ || session_->finished()) return;
    session_->step_phase();
    publish(false);
  });
}

void EngineController::RT_step() {
  guarded([&] {
    if (!session_ || session_->finished()) return;
    session_->step();
    session_->write_run_file();
    publish(false);
  });
}

void EngineController::RT_run(int kind) {
  guarded([&] {
    if (!session_ || session_->finished()) return;
    if (session_->mid_step()) session_->step();  // finish a phase-stepped step first
    pause_.store(false);
    Q_EMIT runStateChanged(true);
    run_start_ = std::chrono::steady_clock::now();
    run_start_step_ = session_->global_step();
    auto last = std::chrono::steady_clock::now();
    RunUntil until;
    until.kind = kind == UntilFoldEnd ? RunUntil::Kind::FoldEnd
                                      : (kind == UntilFire ? RunUntil::Kind::AnyFire : RunUntil::Kind::End);
    session_->run(until, [&] { return pause_.load(); },
                  [&](const StepRecord&) {
                    const auto now = std::chrono::steady_clock::now();
                    const double secs = std::chrono::duration<double>(now - run_start_).count();
                    rate_ = secs > 0 ? static_cast<double>(session_->global_step() - run_start_step_) / secs : 0;
                    if (now - last > std::chrono::milliseconds(100)) {  // batched: ~10 snapshots/s
                      last = now;
                      publish(true);
                    }
                  });
    Q_EMIT runStateChanged(false);
    publish(false);
  });
}

void EngineController::RT_stop() {
  guarded([&] {
    pause_.store(false);
    if (session_) rebuild();
  });
}

void EngineController::RT_setBreakpoint(int slot, bool on) {
  if (on) breakpoints_.insert(slot);
  else breakpoints_.erase(slot);
  if (session_) session_->set_breakpoints(breakpoints_);
  publish(false);
}

void EngineController::RT_setGraph(bool on) {
  settings_.graph = on;
  if (!session_) return;
  session_->set_graph(on);
  publish(false);
}

void EngineController::RT_setChecked(int slot, bool on) {
  if (!session_) return;
  session_->set_checked(slot, on);
  publish(false);
}

void EngineController::RT_addInjection(const QString& spec) {
  guarded([&] {
    injections_.push_back(parse_injection(spec.toStdString()));
    rebuild();  // injections are validated against the run and take effect from step 0
  });
}

void EngineController::RT_inspect(int slot) {
  guarded([&] {
    if (!session_) return;
    SlotView v = session_->backend().slot(slot);
    std::vector<float> data(v.count);
    for (std::size_t i = 0; i < v.count; ++i) data[i] = static_cast<float>(v.at(i));
    const QString origin = QString("live: fold %1, step %2").arg(session_->fold()).arg(session_->step_in_fold());
    Q_EMIT inspectReady(std::make_shared<const BufferStats>(
        compute_stats(slot, v.shape, v.exists() ? data.data() : nullptr, v.count, origin)));
  });
}

SnapshotPtr make_snapshot(Session& s, quint64 seq, bool running, double rate, const QString& scenario) {
  auto snap = std::make_shared<Snapshot>();
  const Config& c = s.config();
  snap->seq = seq;
  snap->source = "live";
  snap->backend = QString::fromStdString(s.backend().name());
  snap->device = QString::fromStdString(s.backend().device_name());
  snap->graph = s.graph();
  snap->scenario = scenario;
  snap->config_toml = QString::fromStdString(to_toml(c));
  snap->steps_per_second = rate;
  snap->running = running;
  snap->finished = s.finished();
  snap->fold = s.fold();
  snap->step = s.step_in_fold();
  snap->global_step = s.global_step();
  snap->folds_total = c.run.folds;
  snap->steps_per_fold = c.run.steps_per_fold;
  snap->next_phase = QString::fromUtf8(phase_name(s.next_phase()).data());
  snap->setup = s.bank().setup().state;
  for (const auto& f : s.folds()) snap->folds.push_back(f.flags);
  for (const auto& h : s.history()) {
    snap->step_flags.push_back(h.flags);
    snap->step_fold.push_back(h.fold);
    snap->step_in_fold.push_back(h.step);
    snap->loss.push_back(h.losses.total);
    snap->c51.push_back(h.losses.c51);
    snap->grad_norm.push_back(h.losses.grad_norm);
  }
  const std::filesystem::path dir = std::filesystem::path(s.run_file_path()).parent_path();
  for (const auto& e : s.events())
    snap->events.push_back({e.fold, e.step, QString::fromStdString(e.kind), e.entry_slot,
                            e.dump.empty() ? QString() : QString::fromStdString((dir / e.dump).string())});
  if (const auto& h = s.halt())
    snap->halt = SnapshotEvent{h->fold, h->step, QString::fromStdString(h->kind), h->entry_slot, {}};
  if (auto e = s.entry()) snap->entry = SnapshotEntry{e->slot, e->fold, e->step};
  if (auto b = s.backward_entry()) snap->backward_entry = SnapshotEntry{b->slot, b->fold, b->step};
  snap->breakpoints = s.breakpoints();
  snap->run_file = QString::fromStdString(s.run_file_path());
  return snap;
}

}  // namespace nanscope::gui
