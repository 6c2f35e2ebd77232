#include "controller/engine_controller.h"

#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include "backend_choice.h"
#include "core/config_io.h"
#include "core/errors.h"
#include "core/utc_time.h"
#include "io/file_guard.h"
#include "io/file_kind.h"
#include "models/offline.h"
#include "session/scenarios.h"

namespace nanscope::gui {

namespace {
constexpr auto kPieceBudget = std::chrono::milliseconds(20);  // a run piece: one step, or this long
constexpr auto kPublishEvery =
    std::chrono::milliseconds(100);  // updates while running: ~10 per second
// A stepped run's file is rewritten this long after the last step, not after every step: the
// whole file is rewritten (100 ms at 20,000 steps), which would make each F10 of a long run wait.
constexpr auto kRunFileQuiet = std::chrono::milliseconds(250);
}  // namespace

ErrorClass error_class(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Config:
    case ErrorKind::Data:
    case ErrorKind::Usage:
      return ErrorClass::Config;
    case ErrorKind::MissingInput:
    case ErrorKind::Io:
      return ErrorClass::File;
    case ErrorKind::Device:
    case ErrorKind::DeviceFault:
      return ErrorClass::Device;
    case ErrorKind::Internal:
      return ErrorClass::Other;
  }
  return ErrorClass::Other;
}

EngineController::EngineController(QObject* parent) : QObject(parent) {}
EngineController::~EngineController() {
  try {  // the window is closing: the steps taken since the last write are not lost
    if (file_stale_ && session_) session_->write_run_file();
  } catch (const std::exception&) {
  }
  retireSession();
}

void EngineController::retireSession() {
  if (!session_) return;
  const bool stepped = session_->global_step() > 0 || session_->mid_step();
  const QFileInfo file(QString::fromStdString(session_->run_file_path()));
  session_.reset();
  if (stepped || file.fileName().isEmpty()) return;
  QDir dir = file.absoluteDir();
  dir.rmdir("dumps");  // each only when empty: a file put there by anyone else stays
  const QStringList left = dir.entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden);
  if (left == QStringList{file.fileName()} && dir.remove(file.fileName()))
    QDir().rmdir(dir.absolutePath());
}

// After a single step: the file once the stepping pauses (kRunFileQuiet).
void EngineController::runFileStale() {
  file_stale_ = true;
  if (!file_timer_) {
    file_timer_ = new QTimer(this);
    file_timer_->setSingleShot(true);
    file_timer_->setInterval(kRunFileQuiet);
    connect(file_timer_, &QTimer::timeout, this, [this] { guarded([&] { flushRunFile(); }); });
  }
  file_timer_->start();
}

// Now, if steps were taken since the last write: before the session is replaced or let go, when
// a run stops, when the window closes.
void EngineController::flushRunFile() {
  if (file_timer_) file_timer_->stop();
  if (!file_stale_ || !session_) return;
  file_stale_ = false;
  session_->write_run_file();
}

// Runs `f`; an error stops a running chain and reaches the window with its class: `as` for what
// the command was about (a file, a config), a device error always as one. After a device error
// the session is dropped and the CUDA context is not used again (the next run is on the CPU).
template <class F>
void EngineController::guarded(F&& f) {
  ErrorClass cls = ErrorClass::Other;
  QString message;
  try {
    f();
    return;
  } catch (const DeviceError& e) {
    cls = ErrorClass::Device;
    message = QString::fromStdString(e.what());
  } catch (const Error& e) {
    cls = error_class(e.kind());
    message = QString::fromStdString(e.what());
  } catch (const std::exception& e) {
    message = QString::fromStdString(e.what());
  }
  if (running_) {
    running_ = false;
    Q_EMIT runStateChanged(false);
  }
  if (cls == ErrorClass::Device) {
    device_failed_ = true;
    try {  // the host-side history of the steps that finished (the device is not touched)
      flushRunFile();
    } catch (const Error&) {
    }
    session_.reset();
    Q_EMIT errorOccurred(static_cast<int>(cls), message);
    Q_EMIT sessionLost("device error: " + message);
    return;
  }
  Q_EMIT errorOccurred(static_cast<int>(cls), message);
  publish(false);
}

std::unique_ptr<Backend> EngineController::makeBackend(const Config& config) const {
  if (device_failed_ || settings_.cpu_only) return make_cpu_backend(config);
  if (settings_.make_backend) return settings_.make_backend(config);
  return choose_backend(BackendChoice::Auto, config, false);
}

bool EngineController::rebuild() {
  std::vector<std::string> sets;
  for (const QString& kv : settings_.sets) sets.push_back(kv.toStdString());
  const Config config =
      resolve_config(settings_.scenario.toStdString(), settings_.config_file.toStdString(), sets);
  SessionOptions o;
  o.injections = injections_;
  o.breakpoints = breakpoints_;
  o.graph = settings_.graph;
  const QString dir = QDir(settings_.out_root)
                          .filePath("gui-" + QString::fromStdString(utc_now(kUtcCompact, true)));
  o.out_dir = dir.toStdString();
  o.scenario = settings_.scenario.toStdString();
  std::unique_ptr<Backend> backend = makeBackend(config);
  // The new session is built (and its injections validated) before the old one is let go: a
  // refused injection leaves the running session as it was.
  auto fresh = std::make_unique<Session>(config, std::move(backend), o);
  // The run being replaced keeps its last steps; a failed write is reported, the new run starts.
  guarded([&] { flushRunFile(); });
  if (session_ && session_->run_file_path() != fresh->run_file_path()) retireSession();
  session_ = std::move(fresh);
  session_->write_run_file();
  updates_.restart();
  publish(false);
  sendInspect();  // the followed slot, as this new run has it: not computed yet
  return true;
}

void EngineController::publish(bool running) {
  if (!session_) return;
  Q_EMIT updateReady(updates_.make(*session_, running, rate_, settings_.scenario));
  if (inspected_ >= 0) sendInspect();  // the inspector follows the selected slot at every update
}

void EngineController::RT_configure(EngineSettings settings) {
  stopRun();
  guarded([&] { flushRunFile(); });
  retireSession();  // the old run is over whatever happens next
  settings_ = std::move(settings);
  injections_.clear();
  bool ok = false;
  const bool device_failed_before = device_failed_;
  guarded([&] { ok = rebuild(); });
  if (!ok) {
    session_.reset();
    // A device that failed was said as such by guarded(); anything else is the config's.
    if (device_failed_ == device_failed_before)
      Q_EMIT sessionLost("no run: the config could not be used");
  }
}

void EngineController::RT_stepPhase() {
  guarded([&] {
    if (!session_ || session_->finished() || running_) return;
    session_->step_phase();
    publish(false);
    if (!session_->mid_step()) runFileStale();
  });
}

void EngineController::RT_step() {
  guarded([&] {
    if (!session_ || session_->finished() || running_) return;
    session_->step();
    publish(false);
    runFileStale();
  });
}

void EngineController::RT_run(int kind) {
  guarded([&] {
    if (!session_ || session_->finished() || running_) {
      publish(false);
      return;
    }
    if (session_->mid_step()) session_->step();  // finish a phase-stepped step first
    if (file_timer_) file_timer_->stop();        // written when the run stops, whatever it ran
    file_stale_ = true;
    until_ = RunUntil{};
    until_.kind = kind == UntilFoldEnd
                      ? RunUntil::Kind::FoldEnd
                      : (kind == UntilFire ? RunUntil::Kind::AnyFire : RunUntil::Kind::End);
    running_ = true;
    Q_EMIT runStateChanged(true);
    run_start_ = last_publish_ = std::chrono::steady_clock::now();
    run_start_step_ = session_->global_step();
    rate_ = 0;
    publish(true);
    QMetaObject::invokeMethod(this, &EngineController::RT_runPiece, Qt::QueuedConnection);
  });
}

// One piece of a run; re-posted behind whatever the window sent meanwhile.
void EngineController::RT_runPiece() {
  if (!running_ || !session_) return;
  guarded([&] {
    const auto start = std::chrono::steady_clock::now();
    const StopReason reason = session_->run_piece(until_, [&] {
      return pause_.load() || std::chrono::steady_clock::now() - start > kPieceBudget;
    });
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - run_start_).count();
    rate_ = secs > 0 ? static_cast<double>(session_->global_step() - run_start_step_) / secs : 0;
    if (reason == StopReason::Cancelled && !pause_.load()) {
      if (now - last_publish_ >= kPublishEvery) {
        last_publish_ = now;
        publish(true);
      }
      QMetaObject::invokeMethod(this, &EngineController::RT_runPiece, Qt::QueuedConnection);
      return;
    }
    stopRun();
  });
}

void EngineController::stopRun() {
  if (!running_) return;
  running_ = false;
  flushRunFile();
  Q_EMIT runStateChanged(false);
  publish(false);
}

void EngineController::RT_stop() {
  stopRun();
  pause_.store(false);
  if (!session_) return;
  guarded([&] { rebuild(); });
}

void EngineController::RT_setBreakpoint(int slot, bool on) {
  if (on)
    breakpoints_.insert(slot);
  else
    breakpoints_.erase(slot);
  if (session_) session_->set_breakpoints(breakpoints_);
  publish(running_);
}

void EngineController::RT_setGraph(bool on) {
  settings_.graph = on;
  if (!session_) return;
  session_->set_graph(on);
  publish(running_);
}

void EngineController::RT_setChecked(int slot, bool on) {
  if (!session_) return;
  session_->set_checked(slot, on);
  publish(running_);
}

void EngineController::RT_addInjection(const QString& spec) {
  if (!session_) return;
  stopRun();
  Injection inj;
  bool parsed = false;
  guarded([&] {
    inj = parse_injection(spec.toStdString());
    parsed = true;
  });
  if (!parsed) return;
  injections_.push_back(inj);
  bool ok = false;
  guarded([&] { ok = rebuild(); });  // validated against the run; takes effect from step 0
  if (!ok) injections_.pop_back();   // refused: the spec stays out, the session stays
}

void EngineController::RT_resync() {
  updates_.restart();
  publish(running_);
}

void EngineController::requestInspect(int slot) {
  wanted_inspect_.store(slot);
  if (!inspect_posted_.exchange(true))
    QMetaObject::invokeMethod(this, &EngineController::RT_inspectPending, Qt::QueuedConnection);
}

void EngineController::RT_inspectPending() {
  inspect_posted_.store(false);
  inspected_ = wanted_inspect_.load();
  sendInspect();
}

void EngineController::sendInspect() {
  if (inspected_ < 0 || !session_) return;
  guarded([&] {
    const int slot = inspected_;
    SlotView v = session_->backend().slot(slot);
    const auto at = live_buffer_step(*session_, slot);
    std::vector<float> data(v.count);
    for (std::size_t i = 0; i < v.count; ++i) data[i] = static_cast<float>(v.at(i));
    const QString origin = !at ? QString("live: not computed yet (no step has run)")
                               : QString("live: fold %1, step %2%3")
                                     .arg(at->fold)
                                     .arg(at->step)
                                     .arg(at->in_progress ? " (in progress)" : "");
    BufferStats s =
        compute_stats(slot, v.shape, v.exists() && at ? data.data() : nullptr, v.count, origin);
    s.source = BufferStats::Source::Live;
    s.computed = at.has_value();
    s.exists = v.exists();
    if (at) {
      s.fold = at->fold;
      s.step = at->step;
    }
    Q_EMIT inspectReady(std::make_shared<const BufferStats>(std::move(s)));
  });
}

void EngineController::RT_openFile(const QString& path, int slot) {
  guarded([&] {
    try {
      validate_in_child(path.toStdString(), validator_);
      if (detect_file_kind(path.toStdString()) == FileKind::Dump) {
        Q_EMIT inspectReady(load_dump_stats(path, slot));
        return;
      }
      Q_EMIT runFileLoaded(load_run_update(path));
    } catch (const Error& e) {
      Q_EMIT errorOccurred(static_cast<int>(ErrorClass::File), QString::fromStdString(e.what()));
    }
  });
}

void EngineController::RT_openDump(const QString& path, int slot) {
  guarded([&] {
    try {
      validate_in_child(path.toStdString(), validator_);
      Q_EMIT inspectReady(load_dump_stats(path, slot));
    } catch (const Error& e) {
      Q_EMIT errorOccurred(static_cast<int>(ErrorClass::File), QString::fromStdString(e.what()));
    }
  });
}

void EngineController::RT_materialize(int slot, int fold, int step, const QString& run_file,
                                      int generation) {
  guarded([&] {
    try {
      const TravelRequest r{slot, fold, step, run_file, generation};
      BufferStats s = travel_.travel(
          r, session_.get(), [this](const Config& c) { return makeBackend(c); },
          [this, generation](int done, int total) {
            Q_EMIT travelProgress(generation, done, total);
          });
      Q_EMIT inspectReady(std::make_shared<const BufferStats>(std::move(s)));
    } catch (const DeviceError&) {
      travel_.reset();
      throw;  // the device as a whole: handled as any device error
    } catch (const Error& e) {
      travel_.reset();
      BufferStats s =
          cell_without_buffer(slot, fold, step, BufferStats::Source::None, generation, {});
      s.origin = QString("fold %1, step %2 could not be recomputed: %3")
                     .arg(fold)
                     .arg(step)
                     .arg(QString::fromStdString(e.what()));
      Q_EMIT inspectReady(std::make_shared<const BufferStats>(std::move(s)));
    }
  });
}

void EngineController::RT_compareBuffers(int slot, int fold, int step_a, int step_b,
                                         const QString& run_file) {
  guarded([&] {
    QVariantMap r;
    try {
      r = travel_.compare(slot, fold, step_a, step_b, run_file, session_.get(),
                          [this](const Config& c) { return makeBackend(c); });
    } catch (const DeviceError&) {
      travel_.reset();
      throw;
    } catch (const Error& e) {
      travel_.reset();
      r = QVariantMap{{"slot", slot},
                      {"fold", fold},
                      {"step_a", step_a},
                      {"step_b", step_b},
                      {"text", QString("the buffers could not be recomputed: %1")
                                   .arg(QString::fromStdString(e.what()))}};
    }
    Q_EMIT buffersCompared(r);
  });
}

void EngineController::RT_readSweep(const QString& dir) {
  try {
    const std::string d = dir.toStdString();
    Q_EMIT sweepRead(dir,
                     std::make_shared<const SweepStatus>(read_sweep_status(d, slurm_states(d))));
  } catch (const std::exception& e) {  // nanscope's errors, and a directory it may not read
    Q_EMIT sweepRead(dir, nullptr);
    Q_EMIT errorOccurred(static_cast<int>(ErrorClass::File),
                         QString("%1: not a sweep directory that can be read (%2)")
                             .arg(dir, QString::fromStdString(e.what())));
  }
}

}  // namespace nanscope::gui
