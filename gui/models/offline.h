// Offline mode: the same picture and inspector data, read from a run file and its dumps (off the
// UI thread: the engine controller calls these).
#pragma once

#include <QString>

#include "models/snapshot.h"

namespace nanscope::gui {

// An update that replaces the window's picture with the run file's. Throws nanscope::Error
// (missing, foreign, truncated, newer files) with a message for the user.
UpdatePtr load_run_update(const QString& run_file);
// A dumped slot's buffer: `slot` when the dump holds it, else the dump's entry slot.
BufferStatsPtr load_dump_stats(const QString& dump_file, int slot = -1);

}  // namespace nanscope::gui
