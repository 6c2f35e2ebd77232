// The engine thread's object: owns the Session (and, on GPU, the device context), runs the commands
// the window sends, and answers with updates (controller/live_updates.h), buffer statistics and
// offline files read off the UI thread. It lives on its own QThread; every RT_ slot runs there.
// A run is a chain of short pieces (one step, or as many as fit in a few milliseconds), each
// re-posted behind the commands that arrived meanwhile: toggling a breakpoint or a check,
// inspecting a buffer or pausing takes effect within a step. Pause is also a flag the UI thread
// may set at any time.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>

#include "controller/live_updates.h"
#include "controller/time_travel.h"
#include "core/errors.h"
#include "models/snapshot.h"
#include "models/sweep_model.h"
#include "session/session.h"

class QTimer;

namespace nanscope::gui {

struct EngineSettings {
  QString scenario = "healthy";
  QStringList sets;           // KEY=VALUE overrides
  QString config_file;        // optional TOML
  QString out_root = "runs";  // each configured run writes runs/gui-<timestamp>
  bool graph = true;  // whole steps as one CUDA graph (CUDA backend; phase steps stay ungraphed)
  bool cpu_only = false;  // the CPU backend whatever the machine has (after a device error)
  // Builds the backend instead of choose_backend (tests: a backend that fails like a device).
  std::function<std::unique_ptr<Backend>(const Config&)> make_backend;
  // Reads an opened file in a child process first (io/file_guard.h); empty: read it directly.
  std::vector<std::string> validator;
};

// What went wrong, as far as the window's offer goes: a bad config, a bad file, a device error.
enum class ErrorClass : int { Config = 0, File, Device, Other };
ErrorClass error_class(ErrorKind kind);

class EngineController : public QObject {
  Q_OBJECT
 public:
  enum RunKind { UntilEnd = 0, UntilFoldEnd = 1, UntilFire = 2 };
  Q_ENUM(RunKind)

  explicit EngineController(QObject* parent = nullptr);
  ~EngineController() override;

  // Before the thread starts: how opened files are checked (EngineSettings::validator), live
  // session or not.
  void setFileValidator(std::vector<std::string> v) { validator_ = std::move(v); }
  // Thread-safe (UI thread): asks a running chain to stop after the current step.
  void requestPause() { pause_.store(true); }
  // Thread-safe: the window asks for a run (before posting RT_run), so that a pause it requests
  // after this stops that run, however soon.
  void clearPause() { pause_.store(false); }
  // Thread-safe: inspect `slot` (live) from now on; requests collapse into one pending inspect.
  void requestInspect(int slot);
  // Thread-safe: time travel's newest request; an older one still recomputing stops.
  void supersedeTravel(int generation) { travel_.supersede(generation); }

 public Q_SLOTS:
  void RT_configure(nanscope::gui::EngineSettings settings);
  void RT_stepPhase();
  void RT_step();
  void RT_run(int kind);
  void RT_stop();  // back to fold 0, step 0 (a new run)
  void RT_setBreakpoint(int slot, bool on);
  void RT_setChecked(int slot, bool on);
  void RT_setGraph(bool on);
  void RT_addInjection(const QString& spec);
  void RT_resync();                                 // the next update replaces the window's picture
  void RT_openFile(const QString& path, int slot);  // a run file or a dump, by its content
  void RT_openDump(const QString& path, int slot);  // the slot's buffer (or the entry slot's)
  // Time travel: the cell's buffer recomputed from a checkpoint of the live run (`run_file`
  // empty) or of that run file; answered with inspectReady (Recomputed, or None saying why).
  void RT_materialize(int slot, int fold, int step, const QString& run_file, int generation);
  // Step compare: one slot's buffers at two steps, recomputed and compared element by element;
  // answered with buffersCompared (TimeTravel::compare's map).
  void RT_compareBuffers(int slot, int fold, int step_a, int step_b, const QString& run_file);
  // A sweep directory's tasks (sweep/sweep_status.h, Slurm's states where Slurm is there);
  // answered with sweepRead, or errorOccurred for a directory that is not a sweep.
  void RT_readSweep(const QString& dir);

 Q_SIGNALS:
  void updateReady(nanscope::gui::UpdatePtr update);
  void runFileLoaded(nanscope::gui::UpdatePtr update);
  void inspectReady(nanscope::gui::BufferStatsPtr stats);
  void errorOccurred(int error_class, const QString& message);
  void sessionLost(const QString& reason);  // no live session (a bad config or a device error)
  void runStateChanged(bool running);
  void travelProgress(int generation, int done, int total);
  void buffersCompared(const QVariantMap& result);
  void sweepRead(const QString& dir, nanscope::gui::SweepStatusPtr status);

 private:
  void RT_runPiece();
  void RT_inspectPending();
  void publish(bool running);
  void sendInspect();
  std::unique_ptr<Backend> makeBackend(const Config& config) const;
  bool rebuild();  // a new session from settings_ and injections_; false (reported) if it failed
  // Lets the session go; a run that took no step leaves no folder behind (its run file and the
  // folder it made, when nothing else is in it).
  void retireSession();
  void stopRun();
  void runFileStale();
  void flushRunFile();
  template <class F>
  void guarded(F&& f);

  EngineSettings settings_;
  std::vector<std::string> validator_;
  std::unique_ptr<Session> session_;
  std::set<int> breakpoints_;
  std::vector<Injection> injections_;
  std::atomic<bool> pause_{false};
  LiveUpdates updates_;
  bool device_failed_ = false;  // a device error: the CUDA context is not used again
  // The run file: steps taken since it was last written, and the write that waits for a pause.
  bool file_stale_ = false;
  QTimer* file_timer_ = nullptr;
  // The running chain.
  bool running_ = false;
  RunUntil until_;
  std::chrono::steady_clock::time_point run_start_, last_publish_;
  std::int64_t run_start_step_ = 0;
  double rate_ = 0;
  // Inspection: the slot followed at every update, and the one pending request.
  int inspected_ = -1;
  std::atomic<int> wanted_inspect_{-1};
  std::atomic<bool> inspect_posted_{false};
  TimeTravel travel_;
};

}  // namespace nanscope::gui

Q_DECLARE_METATYPE(nanscope::gui::EngineSettings)
