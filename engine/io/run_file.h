// The run file run.h5: slot table, per-fold flags, per-step flags and metrics, events, watch
// trips (docs/files.md). Rewritten atomically at every fold boundary.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <hdf5.h>

#include <vector>

#include "core/event_kind.h"
#include "core/sentinel.h"
#include "core/slot_health.h"
#include "core/step_losses.h"
#include "core/watch_condition.h"
#include "model/backend.h"

namespace nanscope {

// One step's row of /steps. The per-slot members are as wide as the run's table (the writer
// refuses a row of another width).
struct RunStepRow {
  int fold = 0, step = 0;
  StepFlags flags;
  // The loss terms and norms (/steps/<kLossTerms name>, /steps/group_norm: NaN in files written
  // before it was kept).
  StepLosses losses;
  SlotSet checked;  // the slots checked at this step (/steps/checked)
  // /steps/health; empty: every slot unmeasured (files of schema_version 1 have none, and a run
  // without health keeps none in memory)
  SlotHealthRows health;
};

// The run file's schema: 2 added /steps/health; 3 keeps it for some steps only, the ones
// /steps/health_step lists (a file that keeps every step's is still written as 2). Files of
// versions 1 and 2 are read as well.
inline constexpr std::int64_t kRunSchemaVersion = 3;

// Which steps' health a run keeps (docs/files.md, "What the run file keeps"). A health row is 44
// bytes a slot: a table of S slots keeps one row in `stride` steps of each fold, stride being
// the smallest that holds the rows to kHealthBytesPerStep a step on average (1 up to 100 slots:
// every step), and every step of the `window` steps up to and including each fold's first fire,
// where a user looks first.
struct HealthKeeping {
  static constexpr std::size_t kHealthBytesPerStep = 4400;
  static constexpr int kWindow = 100;
  int stride = 1;
  int window = kWindow;
  static HealthKeeping for_table(const SlotTable& table);
  // Whether step `step` of a fold whose first fire (if any yet) was at `first_fire` is kept.
  bool keeps(int step, std::optional<int> first_fire) const {
    return step % stride == 0 || (first_fire && step <= *first_fire && *first_fire - step < window);
  }
};

struct RunEventRow {
  int fold = 0, step = 0;
  EventKind kind = EventKind::Manual;
  int entry_slot = -1;
  std::string dump;
  std::optional<WatchTrip> watch;  // a watch event's row of /watches (read_run_file pairs them)
};

struct RunFileData {
  // The trainer's slot table: nanscope's own (root attribute `trainer` "nanscope"; files written
  // before it are nanscope's), or an SDK trainer's, named by `trainer` and kept in /slots.
  SlotTableRef table = SlotTable::builtin();
  // The slots the file stores: the table's, or fewer in a file of nanscope's own written before
  // its last slots were added (the readers give those as absent, unchecked and unmeasured).
  int stored_slots = 0;
  // The fields of each health row the file stores: kHealthFieldCount, or kHealthFieldCountV3 in
  // files written before the reduced types' fields (the readers give the others as unmeasured).
  int health_fields = kHealthFieldCount;
  std::string nanscope_version, created_utc, backend, device_name, config_toml;
  std::string scenario;  // root attribute `scenario` (empty in files written before it existed)
  std::uint64_t seed = 0;
  std::vector<FoldFlags> folds;
  std::vector<RunStepRow> steps;
  std::vector<RunEventRow> events;
  std::vector<WatchTrip> watches;  // /watches (absent in files written before watches existed)
  // /checkpoints (history.in_run_file): written with their states; read_run_file reads where
  // they are only (fold, step, global step), read_run_checkpoint one state at a time.
  std::vector<Checkpoint> checkpoints;
  bool checkpoints_f64 = false;  // stored as float64 (a CPU float64 run), else float32
};

void write_run_file(const std::string& path, const RunFileData& run);  // atomic
// Refuses missing, foreign, truncated and newer-schema files with a clear message. The file's
// trainer's slot table comes back in `table`, and every per-slot member is as wide as it.
RunFileData read_run_file(const std::string& path);
// The outline of a run file: its root attributes, /folds, /events and /watches, checked as
// read_run_file checks them against each fold's step count (from /steps/fold and /steps/step
// alone), without reading the per-step tables (no `steps`, no checkpoints): what a sweep's status
// needs of each of its tasks' runs.
RunFileData read_run_file_outline(const std::string& path);
// Row `row` of /checkpoints with its state (DataError naming the file when it is not sound).
Checkpoint read_run_checkpoint(const std::string& path, std::size_t row);

namespace run_checkpoints {  // run_file_checkpoints.cpp
void write(hid_t file, const RunFileData& r, const std::string& path);
void read_positions(hid_t file, const std::string& path, RunFileData& r);
}  // namespace run_checkpoints

}  // namespace nanscope
