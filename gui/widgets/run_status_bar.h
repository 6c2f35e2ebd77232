// The workbench's status bar as one widget group: the backend and its device (and, for a live CPU
// run, why it is not on CUDA), where the run is, the armed injections and breakpoints, the run's
// folder with an "open folder" link, the progress with the rate and the time left, and Pause. Each
// thing is said once; long texts are cut to their room with the whole text in the tooltip.
#pragma once

#include <QObject>
#include <QString>

#include "models/snapshot.h"

class QLabel;
class QProgressBar;
class QStatusBar;
class QToolButton;

namespace nanscope::gui {

// What the window is showing, for the status bar's texts.
struct StatusMode {
  bool have_view = false;  // a picture is shown (a run's or a file's)
  bool offline = false;    // a run file
  bool have_live = false;  // a live session exists
  bool running = false;    // the engine is running steps
  QString problem;         // why there is no live session, when there is none
};

// Where the run is, as the status bar says it (singular where it is one; the backend, the
// injections and the folder are said beside it).
QString position_text(const Snapshot& s, const StatusMode& m);
// The run's injections (their specs) and breakpoints (their slots).
QString armed_text(const Snapshot& s);

class RunStatusBar : public QObject {
  Q_OBJECT
 public:
  explicit RunStatusBar(QStatusBar* bar);
  void show(const Snapshot& s, const StatusMode& m);
  QString backendText() const;
  QString positionText() const;
  QProgressBar* progress() const { return progress_; }

 Q_SIGNALS:
  void pauseRequested();
  void folderRequested(const QString& dir);

 private:
  QLabel *backend_, *position_, *rate_, *folder_, *armed_;
  QProgressBar* progress_;
  QToolButton* pause_;
};

}  // namespace nanscope::gui
