// One trainer's run through the SDK: its registered slots, the fold/step state machine, the checks
// (the host path: model/host_check.h, the CPU backend's own; the device path: the CUDA backend's
// device bank through the plugin, device_path.h), the fold flags and entry point
// (core/sentinel.h's SentinelBank, the built-in trainer's), the guard, halts, first-fire dumps and
// the run file (io/, written by the library's writer thread). The C API (c_api.cpp) turns its
// errors into statuses.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/sentinel.h"
#include "io/run_file.h"
#include "model/check_bank.h"
#include "nanscope/nanscope.h"
#include "run_writer.h"
#include "sdk_device_api.h"

namespace nanscope::sdk {

// A refused call: its status and what was wrong.
struct Error : std::runtime_error {
  ns_status status;
  Error(ns_status s, const std::string& what) : std::runtime_error(what), status(s) {}
};

// The ids one ns_check call may list (an id may repeat: each is a call site of its own).
inline constexpr int kMostChecksPerCall = kMaxSlots * 64;

struct RegisteredSlot {
  std::string name, phase, consumers_text;
  std::vector<std::int64_t> shape;  // [count] unless the trainer gave one
  int order = 0;
  std::int64_t count = 0;
  ns_dtype dtype = NS_F32;
  ns_memory memory = NS_HOST;
  std::uint64_t address = 0;
  // Where the slot was last checked when that was not `address` (ns_check_at; 0: `address`): the
  // device path reads a role slot's element 0 from there after the step.
  std::uint64_t checked_at = 0;
  ns_slot_state state = NS_SLOT_CHECKED;
  ns_slot_role role = NS_ROLE_NONE;
  // What a check scans: the buffer copied through the kernel (host_memory.h), so that memory which
  // cannot be read is refused, never touched. Allocated at registration, uninitialised (each check
  // fills it whole), so registering costs no pass over it.
  std::unique_ptr<unsigned char[]> staging;
  std::size_t staging_bytes = 0;
};

class Session {
 public:
  explicit Session(const ns_session_options& options);
  ~Session();

  int register_slot(const ns_slot_desc& desc);
  void set_address(int slot, std::uint64_t address, const char* call = "ns_slot_set_address");
  void undefer(int slot);
  void begin_fold(int fold);
  void end_fold(int fold);
  void begin_step(int step, void* stream);
  // ns_check (`at` null: each slot's registered buffer) and ns_check_at (`at[i]`: the buffer of
  // slots[i] at this step, the slot's registered address unchanged).
  void check(const std::int32_t* slots, int count, void* stream, const std::uint64_t* at = nullptr);
  // ns_loss_scale: the trainer's loss scale at this step, and whether its scaler skipped the
  // update.
  void report_loss_scale(double scale, bool skipped);
  bool allows_update();
  std::uint64_t guard_word_address() const;
  ns_step_result end_step();
  ns_step_result step_replayed(void* stream);
  void close();  // the last run file written and the writer drained
  // NS_ERR_STATE while the trainer captures a stream of the session (closing would wait for it).
  void refuse_close_during_capture();
  // The writes not yet done into *pending; NS_ERR_IO for the failed writes not yet reported.
  void writer_status(int* pending);

 private:
  enum class Stage { Registering, BetweenFolds, InFold, InStep, Closed };
  void freeze_table();
  const RegisteredSlot& slot_at(int slot, const char* call) const;
  // The buffer at `address` copied for the slot's check (Error when it cannot be read).
  void stage(int slot, std::uint64_t address, const char* call);
  void check_one(int slot);  // the staged copy checked
  // The step's end shared by both paths: the step row, the result, first-fire events, dumps and
  // halts from the bank's record of the step.
  ns_step_result finish_step();
  // The device path: what ran on `stream` since the last read, accounted step by step.
  // (`none_ok`: nothing ran is no error.)
  ns_step_result account_device(void* stream, const SlotSet& checked, const char* call,
                                bool none_ok = false);
  bool stream_capturing();
  // The run file: the writer's own copy of the run made once the table is fixed, the steps handed
  // over at each fold's end (write_run_file_now), and the health rows the budget does not keep
  // dropped as soon as that is decided (io/run_file.h, HealthKeeping).
  void start_run_file();
  void decide_health(const FoldFlags& fold);
  void drop_health_not_kept(std::size_t rows, std::optional<int> first_fire);
  void write_run_file_now();
  void write_dump(int fold, int step, std::vector<CapturedSlot> slots);
  // The step's watch trips (options.watch_*) and its loss_scale_skip event.
  std::vector<RunEventRow> note_watches(const RunStepRow& row);
  void raise_writer_error();

  std::string run_dir_, trainer_, config_text_;
  std::uint64_t seed_ = 0;
  int folds_planned_ = 0;  // options.folds (0: not known)
  bool guard_ = false, health_ = false, capture_ = false, halt_on_nan_ = false;
  double grad_collapse_below_ = 0;
  WatchConfig watch_;  // options.watch_overflow_margin and watch_underflow_share (the rest off)
  double loss_scale_floor_ = 0;
  std::set<std::pair<int, int>> tripped_;  // (condition, slot) tripped in this fold
  Config guard_config_;                    // the guard's rule reads it (guard_allows_update)
  std::string created_utc_;

  std::vector<RegisteredSlot> slots_;
  std::unordered_map<std::string, int> by_name_;  // the registered slots by name
  std::vector<int> role_slots_;                   // the slots registered with a role
  int first_present_ = -1;                        // the first slot not registered absent
  SlotTableRef table_;                            // made at the first fold (freeze_table)
  Stage stage_ = Stage::Registering;
  int fold_ = -1, step_ = -1, next_step_ = 0;
  std::optional<SentinelBank> bank_;
  SlotSetup setup_;
  std::uint32_t guard_word_ = 0;
  bool updated_ = true, update_asked_ = false, first_fire_in_step_ = false;
  // The step in progress.
  SlotHealthRows health_rows_;  // with health on: each slot's row (unmeasured: NaN)
  SlotSet checked_;
  double grad_norm_ = 0, loss_ = 0;  // the role slots' element 0 at their check (NaN unchecked)
  double loss_scale_ = 0;            // ns_loss_scale's (NaN: not reported in the step)
  bool scale_skipped_ = false;
  std::vector<CapturedSlot> captured_;
  // The fold's halt, latched from the step that halted to the fold's end, and the fold's dump
  // (its first firing step's; the halt's event names it).
  ns_halt halt_ = NS_HALT_NONE;
  int halt_step_ = -1;
  std::string fold_dump_;
  // What the run file holds.
  std::vector<FoldFlags> folds_;
  std::vector<RunStepRow> steps_;  // the fold's steps not yet handed to the writer
  std::shared_ptr<RunFileData> file_;
  HealthKeeping keeping_;
  std::vector<RunEventRow> events_;
  std::unique_ptr<RunWriter> writer_;
  // The device path (null for a session of host buffers).
  std::unique_ptr<SdkDeviceChecks> dev_;
  void* stream_ = nullptr;  // the last step's stream
  bool stream_seen_ = false;
  void* capture_stream_ = nullptr;  // the stream a step was last captured on
  bool capture_stream_seen_ = false;
  bool step_captured_ = false;  // the step in progress is being captured into a graph
  bool graph_ready_ = false;    // a captured step has ended: ns_step_replayed accounts its replays
                                // (in this fold and the later ones: the graph stays valid)
  SlotSet graph_checked_;       // the slots the captured step checks
};

}  // namespace nanscope::sdk
