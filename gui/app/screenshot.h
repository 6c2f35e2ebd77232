// The workbench's screenshot mode (--screenshot, --screenshot-after, --screenshot-view,
// --screenshot-select, --screenshot-simulate, --state-json): what the user would do before looking,
// done by a timer once the window has something to show, then the PNG and the state file, and exit.
#pragma once

#include <QSize>
#include <QString>
#include <optional>

#include "widgets/main_window.h"

namespace nanscope::gui {

struct ScreenshotOptions {
  QString screenshot, after, state_json, view, simulate;
  struct Cell {
    int fold, step;
    QString slot;  // a name or an index, found in the slot table of the run shown (a run file of
                   // another trainer brings its own)
  };
  std::optional<Cell> select;  // --screenshot-select FOLD:STEP:SLOT
  QSize size{1500, 950};       // --screenshot-size WxH (also the first window's size)
};

// What is wrong with a --screenshot-view list ("" when every item is known and well formed).
QString screenshot_view_error(const QString& what);

// Drives `w` and quits the application with nanscope-run's code for what happened (0; 69 for a
// device that cannot be used; 78 for a file or config refused before anything could be shown).
void screenshot_when_ready(MainWindow& w, const ScreenshotOptions& o);

}  // namespace nanscope::gui
