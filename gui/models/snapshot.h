// An immutable picture of the engine's state, made on the engine thread and handed to the GUI
// through a queued signal (sequence-numbered; the window drops stale ones). Offline mode builds the
// same picture from a run file, so every view works the same on files.
#pragma once

#include <QMetaType>
#include <QString>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/sentinel.h"
#include "core/slot_table.h"

namespace nanscope::gui {

struct SnapshotEvent {
  int fold = 0, step = 0;
  QString kind;
  int entry_slot = -1;
  QString dump;  // absolute path, empty when none
};

struct SnapshotEntry {
  int slot = -1, fold = 0, step = 0;
};

struct Snapshot {
  quint64 seq = 0;
  bool offline = false;
  QString source;  // "live" or the run file path
  QString backend, device, scenario, config_toml;
  bool graph = false;  // whole steps run as one CUDA graph
  double steps_per_second = 0;
  bool running = false, finished = false;
  int fold = 0, step = 0, folds_total = 0, steps_per_fold = 0;
  std::int64_t global_step = 0;
  QString next_phase;
  std::array<SlotState, kSlotCount> setup{};  // states before anything fired (absent, deferred, ...)
  std::vector<FoldFlags> folds;               // finished folds and the current one
  std::vector<std::array<std::uint8_t, kSlotCount>> step_flags;  // per global step
  std::vector<int> step_fold, step_in_fold;
  std::vector<double> loss, c51, grad_norm;
  std::vector<SnapshotEvent> events;
  std::optional<SnapshotEvent> halt;
  std::optional<SnapshotEntry> entry, backward_entry;
  std::set<int> breakpoints;
  QString run_file;
};
using SnapshotPtr = std::shared_ptr<const Snapshot>;

// Buffer statistics for the inspector, reduced on the engine thread (the widget only draws).
struct BufferStats {
  int slot = -1;
  QString origin;  // "live fold F step S" or the dump path
  std::vector<std::int64_t> shape;
  std::int64_t count = 0, nan = 0, posinf = 0, neginf = 0;
  double finite_min = 0, finite_max = 0, finite_mean = 0;
  std::vector<double> histogram_edges;  // bins + 1 edges over the finite range
  std::vector<std::int64_t> histogram;
  std::vector<std::int64_t> first_bad;  // up to 32 flat indices
  std::vector<float> values;            // the whole buffer, for the paged table
  bool exists = false;
};
using BufferStatsPtr = std::shared_ptr<const BufferStats>;

BufferStats compute_stats(int slot, const std::vector<std::int64_t>& shape, const float* data,
                          std::size_t count, const QString& origin);

// Rows of the grids and the slot table: slot indices in dataflow order.
const std::array<int, kSlotCount>& dataflow_order();

}  // namespace nanscope::gui

Q_DECLARE_METATYPE(nanscope::gui::SnapshotPtr)
Q_DECLARE_METATYPE(nanscope::gui::BufferStatsPtr)
