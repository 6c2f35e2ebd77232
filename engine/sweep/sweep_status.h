// What a sweep directory says about its tasks (docs/sweeps.md): each task pending, running, done
// or failed (from the scheduler's states when Slurm is there, from the directory otherwise), what
// its run found (entry point, first watch trip, halt) and each fold's state, read from the task's
// own run file. `nanscope-run sweep status` prints it; the workbench's sweep view draws it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/sentinel.h"
#include "core/watch_condition.h"
#include "sweep/sweep_spec.h"

namespace nanscope {

enum class TaskState { Pending, Running, Done, Failed };
// Done tasks, by what their run found (the sweep's one-line summary counts these).
enum class TaskOutcome { None, Clean, Fired, Warned };

// A fold of a task, as the sweep view colours it: the slot grid's states.
enum class FoldCell { NotStarted, Running, Clean, Warned, Fired, Failed };

struct FoldOutcome {
  FoldCell cell = FoldCell::NotStarted;
  std::uint8_t kinds = 0;  // the entry slot's kinds, when fired
  int entry_slot = -1, entry_step = -1;
};

struct TaskStatus {
  SweepTask task;
  std::string variant;
  TaskState state = TaskState::Pending;
  TaskOutcome outcome = TaskOutcome::None;
  int exit_code = -1;  // -1: none recorded yet
  std::string reason;  // why failed (or the scheduler's word for its state)
  std::optional<RunEntry> entry;
  std::optional<WatchTrip> first_watch;
  std::string halt;  // the halt that stopped the run: halt_nan, ... (empty: none)
  std::vector<FoldOutcome> folds;
  std::string dir;  // the task's directory; its run file is dir/run/run.h5
};

struct SweepStatus {
  SweepSpec spec;
  int folds = 0;  // run.folds of the tasks (the widest variant's)
  std::vector<TaskStatus> tasks;
  int clean = 0, fired = 0, warned = 0, failed = 0, running = 0, pending = 0;
};

// Slurm's word for an array task's state (squeue / sacct: PENDING, RUNNING, COMPLETED, FAILED,
// CANCELLED, TIMEOUT, NODE_FAIL, ...), by task id; empty without Slurm.
using SchedulerStates = std::map<int, std::string>;

// Slurm's state of each array task of the sweep's job (DIR/slurm_job): squeue while it is queued
// or running, sacct once it has ended; empty without Slurm.
SchedulerStates slurm_states(const std::string& dir);
// A shell command's standard output (its standard error too when the command redirects it with
// 2>&1; otherwise dropped) and exit code: what the sweep asks sbatch, squeue, sacct and nvidia-smi.
std::string command_output(const std::string& command, int* code = nullptr);
bool on_path(const std::string& program);

// The sweep directory's files: sweep.toml, tasks/NAME/{started,status}.json and run/run.h5.
SweepStatus read_sweep_status(const std::string& dir, const SchedulerStates& scheduler = {});
// One line per task and the summary line "N clean, N fired, N warned, N failed, N running".
std::string sweep_status_text(const SweepStatus& s);
std::string task_state_name(TaskState s);
std::string fold_cell_name(FoldCell c);
std::string outcome_name(TaskOutcome o);

// The task directory's marker files, written by the task itself (and by the local runner for a
// task that died without writing its own status).
struct TaskRecord {
  int exit_code = -1;
  std::string reason;
};
void write_task_started(const std::string& task_dir, long pid);
// The local runner's own marker (DIR/runner: pid, host): a task it never started is "not run"
// once the runner is gone, not pending forever.
void write_runner(const std::string& sweep_dir, long pid);
void write_task_status(const std::string& task_dir, const TaskRecord& r);
std::optional<TaskRecord> read_task_status(const std::string& task_dir);
std::optional<long> read_task_pid(const std::string& task_dir);

}  // namespace nanscope
