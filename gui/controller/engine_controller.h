// The engine thread's object: owns the Session (and, on GPU, the device context), runs the commands
// the window sends, and answers with immutable snapshots. It lives on its own QThread; every public
// slot runs there (RT_ side). Pause is a flag the GUI thread may set at any time: a run checks it
// between steps.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>

#include "models/snapshot.h"
#include "session/session.h"

namespace nanscope::gui {

struct EngineSettings {
  QString scenario = "healthy";
  QStringList sets;       // KEY=VALUE overrides
  QString config_file;    // optional TOML
  QString out_root = "runs";  // each configured run writes runs/gui-<timestamp>
  bool graph = true;          // whole steps as one CUDA graph (CUDA backend; phase steps stay ungraphed)
};

class EngineController : public QObject {
  Q_OBJECT
 public:
  enum RunKind { UntilEnd = 0, UntilFoldEnd = 1, UntilFire = 2 };
  Q_ENUM(RunKind)

  explicit EngineController(QObject* parent = nullptr);
  ~EngineController() override;

  // Thread-safe: asks a running loop to stop after the current step.
  void requestPause() { pause_.store(true); }

 public Q_SLOTS:
  void RT_configure(nanscope::gui::EngineSettings settings);
  void RT_stepPhase();
  void RT_step();
  void RT_run(int kind);
  void RT_stop();  // back to fold 0, step 0
  void RT_setBreakpoint(int slot, bool on);
  void RT_setChecked(int slot, bool on);
  void RT_setGraph(bool on);
  void RT_addInjection(const QString& spec);
  void RT_inspect(int slot);

 Q_SIGNALS:
  void snapshotReady(nanscope::gui::SnapshotPtr snapshot);
  void inspectReady(nanscope::gui::BufferStatsPtr stats);
  void errorOccurred(const QString& message);
  void runStateChanged(bool running);

 private:
  void publish(bool running);
  void rebuild();
  template <class F>
  void guarded(F&& f);

  EngineSettings settings_;
  std::unique_ptr<Session> session_;
  std::set<int> breakpoints_;
  std::vector<Injection> injections_;
  std::atomic<bool> pause_{false};
  quint64 seq_ = 0;
  std::chrono::steady_clock::time_point run_start_;
  std::int64_t run_start_step_ = 0;
  double rate_ = 0;
};

// A snapshot of a live session.
SnapshotPtr make_snapshot(Session& s, quint64 seq, bool running, double rate, const QString& scenario);

}  // namespace nanscope::gui

Q_DECLARE_METATYPE(nanscope::gui::EngineSettings)
