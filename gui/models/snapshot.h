// What the window shows, and how it gets there. The engine thread sends sequence-numbered
// updates through a queued signal; an update carries what changed since the one before it (the
// new steps, the folds that may still change, the new events) and the run's current scalars, so
// its cost does not grow with the run's length. The window applies updates to its Snapshot, the
// accumulated picture its models and plots read. Offline mode builds one update that replaces
// everything from a run file, so every view works the same on files.
#pragma once

#include <QMetaType>
#include <QString>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/config.h"
#include "core/event_kind.h"
#include "core/sentinel.h"
#include "core/slot_health.h"
#include "core/slot_table.h"
#include "core/watch_condition.h"
#include "model/backend.h"
#include "models/shown_table.h"

namespace nanscope::gui {

// An event kind as the window writes it.
inline QString kind_text(EventKind k) {
  const auto n = name_of(k);
  return QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()));
}

struct SnapshotEvent {
  int fold = 0, step = 0;
  EventKind kind = EventKind::Manual;
  int entry_slot = -1;
  QString dump;                    // absolute path, empty when none
  std::optional<WatchTrip> watch;  // a watch event's trip (absent in files without /watches)
};

using SnapshotEntry = RunEntry;

// One step of the run: its own flags, the slots checked at it, the loss terms and the norms (the
// per-group norms NaN when not known: run files written before /steps/group_norm).
struct StepRow {
  int fold = 0, step = 0;
  StepFlags flags;  // as wide as the run's table
  SlotSet checked;  // the slots checked at this step
  StepLosses losses;
};

// The run's scalars: where it is and what it is.
struct SnapshotHead {
  quint64 seq = 0;
  bool offline = false;
  QString source;  // "live" or the run file path
  QString backend, device, scenario, config_toml;
  // The element type of nanscope's own trainer's buffers in this run: its precision ("float32",
  // "float64"); an SDK trainer's slots name their own (slot_type_name).
  QString builtin_type = "float32";
  // The run's slot table: nanscope's own, or an SDK trainer's for its run file.
  SlotTableRef table = SlotTable::builtin();
  QString trainer;  // an SDK trainer's name for its run file ("" for nanscope's own trainer)
  BackendKind backend_kind = BackendKind::Cpu;
  bool graph = false;  // whole steps run as one CUDA graph
  double steps_per_second = 0;
  bool running = false, finished = false;
  int fold = 0, step = 0, folds_total = 0, steps_per_fold = 0;
  std::int64_t global_step = 0;
  QString next_phase;
  bool mid_step = false;  // phase stepping stopped inside a step
  // States now (absent, deferred, disabled, checked), as wide as the table.
  std::vector<SlotState> setup = std::vector<SlotState>(kBuiltinSlotCount, SlotState::Clean);
  std::optional<SnapshotEvent> halt;
  std::optional<SnapshotEntry> entry, backward_entry;
  std::set<int> breakpoints;
  std::vector<std::string> injections;  // the run's injections (recorded in its config)
  QString run_file;
};

struct Snapshot : SnapshotHead {
  std::vector<FoldFlags> folds;  // finished folds and the current one
  std::vector<StepRow> steps;    // every step so far, in order (global step = index)
  // Each step's slot health, parallel to `steps` (no rows: not measured). Kept apart: a row is
  // 32 bytes a slot, and what reads `steps` whole (the metrics) should not stride over it; a deque,
  // so that growing it never copies the run's rows.
  std::deque<SlotHealthRows> health;
  std::vector<std::size_t> fold_begin;  // index in `steps` of each fold's first step
  std::vector<SnapshotEvent> events;

  // The steps of one fold: [begin, end) indices into `steps`.
  std::pair<std::size_t, std::size_t> fold_steps(int fold) const;
  // A fold's own entry point (slot and step), if anything fired in it.
  std::optional<SnapshotEntry> fold_entry(int fold) const;
};
using SnapshotPtr = std::shared_ptr<const Snapshot>;

struct SnapshotUpdate {
  quint64 seq = 0;
  std::uint64_t epoch = 0;  // a new run (or file) starts a new epoch
  bool reset = false;       // replaces the whole picture
  SnapshotHead head;
  std::size_t first_step = 0;  // steps[first_step...] are the new ones
  std::vector<StepRow> steps;
  std::vector<SlotHealthRows> health;  // parallel to `steps`; empty: nothing measured
  std::size_t first_fold = 0;          // folds[first_fold...] replace the window's
  std::vector<FoldFlags> folds;
  std::size_t first_event = 0;
  std::vector<SnapshotEvent> events;
};
using UpdatePtr = std::shared_ptr<const SnapshotUpdate>;

// Applies an update; false (nothing changed) when it does not follow on from `view` (a gap).
bool apply_update(Snapshot& view, const SnapshotUpdate& u);

// Buffer statistics for the inspector, reduced off the UI thread (the widget only draws).
struct BufferStats {
  int slot = -1;
  // The slot's name where the buffer's own table says it (a dump of another trainer than the
  // shown run's); empty: the shown table's name.
  QString slot_name;
  // Live: the newest step's buffer; Dump: a first-fire dump's; Recomputed: time travel's, from a
  // checkpoint (Recomputing while it runs); None: no buffer of the selected cell is kept or can be
  // recomputed (`origin` says why, `live_step` and `dump_step` offer what is kept instead).
  enum class Source { Live, Dump, None, Recomputed, Recomputing } source = Source::Live;
  // Time travel: the request it answers, the checkpoint's step, the steps recomputed and their
  // wall time, and whether another backend than the run's recomputed it.
  int generation = 0;
  int checkpoint_step = -1, steps_run = 0;
  double ms = 0;
  bool other_backend = false;
  QString
      origin;    // the header's text: "live: fold F, step S", the dump's name and step, or why none
  QString path;  // the dump file, for source Dump
  int fold = -1, step = -1;  // the step whose buffer this is (-1: none)
  bool computed = true;      // false: no step has written the buffer yet
  std::vector<std::int64_t> shape;
  std::int64_t count = 0, nan = 0, posinf = 0, neginf = 0;
  double finite_min = 0, finite_max = 0, finite_mean = 0;
  std::vector<double> histogram_edges;  // bins + 1 edges over the finite range
  std::vector<std::int64_t> histogram;
  std::vector<std::int64_t> first_bad;  // up to 32 flat indices
  std::vector<float> values;            // the whole buffer, for the paged table
  bool exists = false;
  int live_step = -1, dump_step = -1;  // Source::None: the cells of the fold whose buffer is kept
  std::int64_t finite() const { return count - nan - posinf - neginf; }
};
using BufferStatsPtr = std::shared_ptr<const BufferStats>;

// A cell of the grid whose buffer is not shown (none kept, being recomputed, or not recomputable):
// which cell, why (`origin`) and the time-travel request it answers.
BufferStats cell_without_buffer(int slot, int fold, int step, BufferStats::Source source,
                                int generation, const QString& origin);

BufferStats compute_stats(int slot, const std::vector<std::int64_t>& shape, const float* data,
                          std::size_t count, const QString& origin);

}  // namespace nanscope::gui

Q_DECLARE_METATYPE(nanscope::gui::SnapshotPtr)
Q_DECLARE_METATYPE(nanscope::gui::UpdatePtr)
Q_DECLARE_METATYPE(nanscope::gui::BufferStatsPtr)
