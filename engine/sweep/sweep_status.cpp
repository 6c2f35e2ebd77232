#include "sweep/sweep_status.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/event_kind.h"
#include "core/slot_table.h"
#include "io/run_file.h"
#include "session/scenarios.h"

namespace nanscope {

namespace fs = std::filesystem;

namespace {

// The marker files are two numbers and a line of text: `KEY VALUE` lines, no JSON library needed
// by the engine and nothing for a reader to mistake.
std::map<std::string, std::string> read_keys(const fs::path& p) {
  std::map<std::string, std::string> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    const auto sp = line.find(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

void write_keys(const fs::path& p, const std::map<std::string, std::string>& keys) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp);
    for (const auto& [k, v] : keys)
      if (!v.empty()) out << k << ' ' << v << '\n';
    if (!out) throw IoError(fmt::format("{}: cannot write", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) throw IoError(fmt::format("{}: cannot write ({})", p.string(), ec.message()));
}

bool alive(long pid) {
  return pid > 0 && pid <= std::numeric_limits<pid_t>::max() &&
         (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

std::string this_host() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Slurm's words for a task that ended badly; any other state it is in is not an end.
bool slurm_failed(const std::string& word) {
  static const char* const kFailed[] = {"FAILED",        "CANCELLED", "TIMEOUT",  "NODE_FAIL",
                                        "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED"};
  for (const char* f : kFailed)
    if (word == f) return true;
  return false;
}

bool slurm_waiting(const std::string& word) {
  return word == "PENDING" || word == "REQUEUED" || word == "REQUEUE_HOLD" ||
         word == "REQUEUE_FED" || word == "SUSPENDED" || word == "PREEMPTED" ||
         word == "RESV_DEL_HOLD";
}

int folds_of(const SweepSpec& s) {
  int folds = 1;
  for (const SweepVariant& v : s.variants) {
    std::vector<std::string> sets = s.sets;
    sets.insert(sets.end(), v.sets.begin(), v.sets.end());
    folds = std::max(
        folds, resolve_config(v.scenario.empty() ? s.scenario : v.scenario, "", sets).run.folds);
  }
  return folds;
}

// What the task's run file says: each fold's state, the entry point, the first watch, the halt.
// Returns the reason the file could not be read, empty when it was read or is not there yet.
std::string read_run(TaskStatus& t, int folds) {
  t.folds.assign(static_cast<std::size_t>(folds), FoldOutcome{});
  const fs::path file = fs::path(t.dir) / "run" / "run.h5";
  if (!file_exists(file)) return {};
  RunFileData r;
  try {
    r = read_run_file_outline(file.string());
  } catch (const Error& e) {
    return e.what();
  }
  for (std::size_t f = 0; f < r.folds.size() && f < t.folds.size(); ++f) {
    const FoldFlags& ff = r.folds[f];
    FoldOutcome& o = t.folds[f];
    o.cell = FoldCell::Clean;
    for (const WatchTrip& w : r.watches)
      if (w.fold == static_cast<int>(f)) o.cell = FoldCell::Warned;
    if (ff.entry_slot) {
      o.cell = FoldCell::Fired;
      o.entry_slot = *ff.entry_slot;
      o.entry_step = ff.entry_step.value_or(-1);
      o.kinds = ff.slots[static_cast<std::size_t>(*ff.entry_slot)].kinds;
    }
  }
  t.entry =
      run_entry(r.folds.size(), [&](std::size_t k) -> const FoldFlags& { return r.folds[k]; });
  if (!r.watches.empty()) t.first_watch = r.watches.front();
  for (const RunEventRow& e : r.events)
    if (e.kind == EventKind::HaltNan || e.kind == EventKind::HaltGradCollapse ||
        e.kind == EventKind::HaltWatch || e.kind == EventKind::Breakpoint)
      t.halt = std::string(name_of(e.kind));
  return {};
}

}  // namespace

std::string command_output(const std::string& command, int* code) {
  std::string out;
  const bool own_stderr = command.find("2>&1") != std::string::npos;
  if (FILE* p = popen((own_stderr ? command : command + " 2>/dev/null").c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    const int status = pclose(p);
    if (code) *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  } else if (code) {
    *code = -1;
  }
  return out;
}

bool on_path(const std::string& program) {
  return !command_output("command -v " + program).empty();
}

// Slurm's state of each array task of the sweep's job: squeue while it is queued or running,
// sacct once it has ended.
SchedulerStates slurm_states(const std::string& dir) {
  SchedulerStates out;
  std::ifstream in(fs::path(dir) / "slurm_job");
  std::string job;
  if (!(in >> job) || job.find_first_not_of("0123456789") != std::string::npos) return out;
  if (on_path("sacct")) {
    std::istringstream lines(command_output("sacct -n -P -X -j " + job + " -o JobID,State"));
    for (std::string line; std::getline(lines, line);) {
      const auto bar = line.find('|'), under = line.find('_');
      if (bar == std::string::npos || under == std::string::npos || under > bar) continue;
      try {
        std::string state = line.substr(bar + 1);
        state = state.substr(0, state.find(' '));  // "CANCELLED by 0"
        out[std::stoi(line.substr(under + 1, bar - under - 1))] = state;
      } catch (...) {
      }
    }
  }
  if (on_path("squeue")) {
    std::istringstream lines(command_output("squeue -h -r -j " + job + " -o '%K %T'"));
    for (std::string line; std::getline(lines, line);) try {
        const auto sp = line.find(' ');
        if (sp != std::string::npos) out[std::stoi(line.substr(0, sp))] = line.substr(sp + 1);
      } catch (...) {
      }
  }
  return out;
}

std::string task_state_name(TaskState s) {
  static const char* const k[] = {"pending", "running", "done", "failed"};
  return k[static_cast<int>(s)];
}

std::string fold_cell_name(FoldCell c) {
  static const char* const k[] = {"not_started", "running", "clean", "warned", "fired", "failed"};
  return k[static_cast<int>(c)];
}

std::string outcome_name(TaskOutcome o) {
  static const char* const k[] = {"none", "clean", "fired", "warned"};
  return k[static_cast<int>(o)];
}

void write_task_started(const std::string& task_dir, long pid) {
  write_keys(fs::path(task_dir) / "started", {{"pid", std::to_string(pid)}, {"host", this_host()}});
}

void write_runner(const std::string& sweep_dir, long pid) {
  write_keys(fs::path(sweep_dir) / "runner", {{"pid", std::to_string(pid)}, {"host", this_host()}});
}

void write_task_status(const std::string& task_dir, const TaskRecord& r) {
  std::string reason = r.reason;
  for (char& c : reason)
    if (c == '\n') c = ' ';
  write_keys(fs::path(task_dir) / "status",
             {{"exit_code", std::to_string(r.exit_code)}, {"reason", reason}});
}

std::optional<TaskRecord> read_task_status(const std::string& task_dir) {
  const fs::path p = fs::path(task_dir) / "status";
  if (!file_exists(p)) return std::nullopt;
  const auto k = read_keys(p);
  TaskRecord r;
  try {
    r.exit_code = std::stoi(k.at("exit_code"));
  } catch (...) {
    return TaskRecord{-1, "the task's status file is unreadable"};
  }
  if (k.count("reason")) r.reason = k.at("reason");
  return r;
}

std::optional<long> read_task_pid(const std::string& task_dir) {
  const fs::path p = fs::path(task_dir) / "started";
  if (!file_exists(p)) return std::nullopt;
  try {
    return std::stol(read_keys(p).at("pid"));
  } catch (...) {
    return std::nullopt;
  }
}

namespace {
// Whether the task's process ran on this host (its pid means something here).
bool started_here(const std::string& task_dir, const char* file = "started") {
  const auto keys = read_keys(fs::path(task_dir) / file);
  const auto host = keys.find("host");
  return host == keys.end() || host->second == this_host();
}

// Whether the local runner of the sweep (DIR/runner) is gone: its tasks not started never will be.
bool runner_gone(const std::string& dir) {
  const fs::path p = fs::path(dir) / "runner";
  if (!file_exists(p) || !started_here(dir, "runner")) return false;
  try {
    return !alive(std::stol(read_keys(p).at("pid")));
  } catch (...) {
    return false;
  }
}
}  // namespace

SweepStatus read_sweep_status(const std::string& dir, const SchedulerStates& scheduler) {
  SweepStatus s;
  s.spec = read_sweep_spec((fs::path(dir) / "sweep.toml").string());
  s.folds = folds_of(s.spec);
  for (const SweepTask& task : sweep_tasks(s.spec)) {
    TaskStatus t;
    t.task = task;
    t.variant = s.spec.variants[static_cast<std::size_t>(task.variant)].name;
    t.dir = (fs::path(dir) / "tasks" / task.name).string();
    const auto status = read_task_status(t.dir);
    const auto pid = read_task_pid(t.dir);
    const auto sched = scheduler.find(task.id);
    const std::string word = sched == scheduler.end() ? std::string() : sched->second;
    // Slurm's word first while the task is queued or running again (a requeued task keeps its
    // last attempt's status file until the new attempt starts); then the task's own status.
    if (slurm_waiting(word)) {
      t.state = TaskState::Pending;
      t.reason = word;
    } else if (word == "RUNNING" || word == "COMPLETING" || word == "CONFIGURING" ||
               word == "RESIZING" || word == "STAGE_OUT" || word == "SIGNALING") {
      t.state = TaskState::Running;
    } else if (status) {
      t.exit_code = status->exit_code;
      t.reason = status->reason;
      t.state = t.exit_code == 0 || t.exit_code == 1 ? TaskState::Done : TaskState::Failed;
    } else if (slurm_failed(word)) {
      t.state = TaskState::Failed;
      t.reason = "Slurm: " + word;
    } else if (pid && started_here(t.dir)) {
      t.state = alive(*pid) ? TaskState::Running : TaskState::Failed;
      if (t.state == TaskState::Failed) t.reason = "ended without an exit status (killed?)";
    } else if (pid) {
      t.state = TaskState::Running;  // on another host: Slurm's word is all there is
    } else if (scheduler.empty() && runner_gone(dir)) {
      t.state = TaskState::Failed;
      t.reason = "not run: the sweep's runner stopped before starting it (interrupted?)";
    }
    const std::string unreadable = read_run(t, s.folds);
    if (!unreadable.empty()) {
      // A task that ended but whose run file cannot be read has no verdict: failed, never clean. A
      // running task's file may be read mid-write; it is read again when the task ends.
      if (t.state == TaskState::Done) {
        t.state = TaskState::Failed;
        t.reason = "its run file is unreadable: " + unreadable;
      } else if (t.reason.empty()) {
        t.reason = unreadable;
      }
    }
    if (t.state == TaskState::Running)
      for (FoldOutcome& f : t.folds)
        if (f.cell == FoldCell::NotStarted) {
          f.cell = FoldCell::Running;
          break;
        }
    if (t.state == TaskState::Failed)
      for (FoldOutcome& f : t.folds)
        if (f.cell == FoldCell::NotStarted) {
          f.cell = FoldCell::Failed;
          break;
        }
    if (t.state == TaskState::Done) {
      bool fired = false, warned = false;
      for (const FoldOutcome& f : t.folds) {
        fired = fired || f.cell == FoldCell::Fired;
        warned = warned || f.cell == FoldCell::Warned;
      }
      t.outcome = fired ? TaskOutcome::Fired : warned ? TaskOutcome::Warned : TaskOutcome::Clean;
    }
    switch (t.state) {
      case TaskState::Pending:
        ++s.pending;
        break;
      case TaskState::Running:
        ++s.running;
        break;
      case TaskState::Failed:
        ++s.failed;
        break;
      case TaskState::Done:
        (t.outcome == TaskOutcome::Fired    ? s.fired
         : t.outcome == TaskOutcome::Warned ? s.warned
                                            : s.clean)++;
        break;
    }
    s.tasks.push_back(std::move(t));
  }
  return s;
}

std::string sweep_status_text(const SweepStatus& s) {
  std::string out;
  for (const TaskStatus& t : s.tasks) {
    std::string what;
    if (t.state == TaskState::Done) {
      what = t.entry ? fmt::format("fired: entry {} {} at fold {}, step {}", t.entry->slot,
                                   builtin_slot(t.entry->slot).name, t.entry->fold, t.entry->step)
                     : outcome_name(t.outcome);
      if (t.first_watch)
        what +=
            fmt::format("; first watch {} at fold {}, step {}", name_of(t.first_watch->condition),
                        t.first_watch->fold, t.first_watch->step);
      if (!t.halt.empty()) what += "; " + t.halt;
    } else if (t.state == TaskState::Running) {
      int reached = 0;
      for (const FoldOutcome& f : t.folds)
        if (f.cell != FoldCell::NotStarted && f.cell != FoldCell::Running) ++reached;
      what = fmt::format("fold {} of {}", reached, t.folds.size());
      if (t.entry)
        what += fmt::format("; fired so far: entry {} {} at fold {}, step {}", t.entry->slot,
                            builtin_slot(t.entry->slot).name, t.entry->fold, t.entry->step);
    } else if (!t.reason.empty()) {
      what = t.reason;
    }
    out += fmt::format("{:>4} {:<32} {:<8} exit {:>3}  {}\n", t.task.id, t.task.name,
                       task_state_name(t.state),
                       t.exit_code < 0 ? std::string("-") : std::to_string(t.exit_code), what);
  }
  out += fmt::format("{} clean, {} fired, {} warned, {} failed, {} running{}\n", s.clean, s.fired,
                     s.warned, s.failed, s.running,
                     s.pending ? fmt::format(", {} pending", s.pending) : std::string());
  return out;
}

}  // namespace nanscope
