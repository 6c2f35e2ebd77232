// Offline mode: the same snapshot and inspector data, read from a run file and its dumps.
#pragma once

#include <QString>

#include "models/snapshot.h"

namespace nanscope::gui {

// Throws nanscope::Error (missing, foreign, truncated, newer files) with a message for the user.
SnapshotPtr load_run_snapshot(const QString& run_file);
// The first dumped slot (or `slot` when >= 0) of a dump file.
BufferStatsPtr load_dump_stats(const QString& dump_file, int slot = -1);

}  // namespace nanscope::gui
