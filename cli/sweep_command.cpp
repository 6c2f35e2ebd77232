// `nanscope-run sweep`: a sweep's tasks on Slurm (an sbatch array script, submitted) or on this
// machine N at a time; `sweep task` runs one of them (what the array script and the local runner
// call); `sweep status` says where each stands (docs/sweeps.md).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/errors.h"
#include "core/slot_table.h"
#include "run_command.h"
#include "sweep/sweep_spec.h"
#include "sweep/sweep_status.h"

namespace nanscope::cli {

namespace fs = std::filesystem;

namespace {

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("nanscope-run") : p.string();
}

std::string sbatch_script(const SweepSpec& s, const std::string& dir) {
  const int n = static_cast<int>(sweep_tasks(s).size());
  std::string t = "#!/bin/bash\n";
  t += fmt::format("#SBATCH --job-name=nanscope-{}\n", s.name);
  t += fmt::format("#SBATCH --array=0-{}{}\n", n - 1,
                   s.slurm.concurrency > 0 ? fmt::format("%{}", s.slurm.concurrency) : "");
  t += fmt::format("#SBATCH --output=\"{}/tasks/slurm-%A_%a.out\"\n", dir);
  if (!s.slurm.partition.empty()) t += fmt::format("#SBATCH --partition={}\n", s.slurm.partition);
  if (!s.slurm.time.empty()) t += fmt::format("#SBATCH --time={}\n", s.slurm.time);
  if (!s.slurm.gres.empty()) t += fmt::format("#SBATCH --gres={}\n", s.slurm.gres);
  if (s.slurm.requeue) t += "#SBATCH --requeue\n";
  for (const std::string& e : s.slurm.extra) t += fmt::format("#SBATCH {}\n", e);
  t += "# One array task per (variant, seed): SLURM_ARRAY_TASK_ID = variant * seeds + seed index.\n"
       "# Its exit code: 0 clean, 1 fired or halted, 2 usage, 66/78 bad input, 75 a device or\n"
       "# transient error";
  t += s.slurm.requeue ? " (requeued, up to 3 times).\n" : ".\n";
  t += fmt::format("{} sweep task {}\n", shell_quoted(self_path()), shell_quoted(dir));
  t += "code=$?\n";
  if (s.slurm.requeue)
    t += fmt::format(
        "if [ $code -eq {} ] && [ \"${{SLURM_RESTART_COUNT:-0}}\" -lt 3 ]; then\n"
        "  scontrol requeue \"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}\"\n"
        "fi\n",
        kTaskTempFail);
  t += "exit $code\n";
  return t;
}

// What --out may be, checked for --dry-run too: a path the sbatch script can name, and a
// directory that is empty, new, or (with --force) a sweep none of whose tasks still runs.
void check_dir(const SweepOptions& o, const std::string& dir) {
  std::error_code ec;
  if (dir.find_first_of("%\"\n\r") != std::string::npos)
    throw UsageError(
        fmt::format("--out {}: a sweep directory's path may not hold '%', '\"' or a line "
                    "break (the sbatch script names it)",
                    dir));
  if (!fs::exists(dir, ec) || fs::is_empty(dir, ec)) return;
  if (o.force && !fs::exists(fs::path(dir) / "sweep.toml", ec))
    throw UsageError(fmt::format(
        "--out {}: --force starts a sweep again only where one was (no sweep.toml there)", dir));
  if (!o.force)
    throw UsageError(fmt::format(
        "--out {}: the directory exists and is not empty (use --force to start the sweep "
        "again there)",
        dir));
  try {
    const SweepStatus s = read_sweep_status(dir, slurm_states(dir));
    if (s.running > 0 || (s.pending > 0 && fs::exists(fs::path(dir) / "slurm_job", ec)))
      throw UsageError(fmt::format(
          "--out {}: the sweep there still has {} task(s) running and {} pending; let it end or "
          "cancel it (scancel the job in {}/slurm_job, or kill its runner) first",
          dir, s.running, s.pending, dir));
  } catch (const UsageError&) {
    throw;
  } catch (const Error&) {  // an unreadable earlier sweep is replaced
  }
}

// The sweep directory, checked (check_dir) and emptied of an earlier sweep; sweep.toml written.
void prepare_dir(const SweepOptions& o, const SweepSpec& spec, const std::string& dir) {
  std::error_code ec;
  check_dir(o, dir);
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    fs::remove_all(fs::path(dir) / "tasks", ec);
    for (const char* f : {"slurm_job", "runner", "sweep.sbatch"}) fs::remove(fs::path(dir) / f, ec);
  }
  fs::create_directories(fs::path(dir) / "tasks", ec);
  if (ec)
    throw IoError(fmt::format("{}: cannot create the sweep directory ({})", dir, ec.message()));
  std::ofstream out(fs::path(dir) / "sweep.toml");
  out << "# nanscope sweep: the spec as resolved; the tasks read it.\n" << sweep_spec_toml(spec);
  if (!out) throw IoError(fmt::format("{}/sweep.toml: cannot write", dir));
}

int gpu_count() {
  int n = 0;
  for (const char c : command_output("nvidia-smi -L"))
    if (c == '\n') ++n;
  return n;
}

// The local runner: N task processes at a time (each `nanscope-run sweep task DIR --task I`, with
// its own GPU when the machine has GPUs); a task that dies without its own status (killed, out of
// memory) gets one saying how it ended, and the others go on.
int run_local(const SweepSpec& spec, const std::string& dir, int jobs, bool quiet) {
  const std::vector<SweepTask> tasks = sweep_tasks(spec);
  const int gpus = gpu_count();
  if (jobs <= 0) jobs = spec.local_jobs;
  if (jobs <= 0)
    jobs = gpus > 0 ? gpus : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  // The GPUs this process may use (an inherited CUDA_VISIBLE_DEVICES narrows them), one per task.
  std::vector<std::string> devices;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::stringstream list(visible);
    for (std::string d; std::getline(list, d, ',');)
      if (!d.empty()) devices.push_back(d);
  } else {
    for (int d = 0; d < gpus; ++d) devices.push_back(std::to_string(d));
  }
  if (gpus > 0 && !devices.empty()) jobs = std::min(jobs, static_cast<int>(devices.size()));
  const std::string self = self_path();
  std::map<pid_t, std::pair<int, int>> running;  // pid -> (task, device slot)
  std::vector<bool> device_busy(std::max<std::size_t>(devices.size(), 1), false);
  std::size_t next = 0;
  auto start = [&](const SweepTask& t) {
    int device = -1;
    if (gpus > 0)
      for (std::size_t d = 0; d < device_busy.size(); ++d)
        if (!device_busy[d]) {
          device = static_cast<int>(d);
          device_busy[d] = true;
          break;
        }
    const pid_t pid = fork();
    if (pid < 0) throw IoError("sweep: cannot start a task process");
    if (pid == 0) {
      if (device >= 0)
        setenv("CUDA_VISIBLE_DEVICES", devices[static_cast<std::size_t>(device)].c_str(), 1);
      const std::string id = std::to_string(t.id);
      execl(self.c_str(), self.c_str(), "sweep", "task", dir.c_str(), "--task", id.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    running[pid] = {t.id, device};
    if (!quiet) fmt::print(stderr, "sweep: task {} {} started\n", t.id, t.name);
  };
  while (next < tasks.size() || !running.empty()) {
    while (next < tasks.size() && static_cast<int>(running.size()) < jobs) start(tasks[next++]);
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto [id, device] = it->second;
    running.erase(it);
    if (device >= 0) device_busy[static_cast<std::size_t>(device)] = false;
    const SweepTask& t = tasks[static_cast<std::size_t>(id)];
    const std::string tdir = (fs::path(dir) / "tasks" / t.name).string();
    std::error_code ec;
    fs::create_directories(tdir, ec);
    if (!read_task_status(tdir)) {
      if (WIFSIGNALED(status))
        write_task_status(
            tdir, {128 + WTERMSIG(status), fmt::format("killed by signal {} ({})", WTERMSIG(status),
                                                       strsignal(WTERMSIG(status)))});
      else
        write_task_status(tdir, {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                 "the task ended without writing its status"});
    }
    if (!quiet) {
      const auto r = read_task_status(tdir);
      fmt::print(stderr, "sweep: task {} {} ended: exit {}{}\n", t.id, t.name, r->exit_code,
                 r->reason.empty() ? "" : " (" + r->reason + ")");
    }
  }
  const SweepStatus s = read_sweep_status(dir);
  if (!quiet) fmt::print(stderr, "{}", sweep_status_text(s));
  return s.failed > 0 ? 1 : 0;
}

nlohmann::ordered_json status_json(const SweepStatus& s, const std::string& dir) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["sweep"] = s.spec.name;
  j["dir"] = dir;
  j["folds"] = s.folds;
  j["tasks"] = nlohmann::ordered_json::array();
  for (const TaskStatus& t : s.tasks) {
    nlohmann::ordered_json folds = nlohmann::ordered_json::array();
    for (std::size_t f = 0; f < t.folds.size(); ++f) {
      const FoldOutcome& o = t.folds[f];
      folds.push_back(
          {{"fold", f},
           {"state", fold_cell_name(o.cell)},
           {"kinds", kind_names(o.kinds)},
           {"entry_slot", o.entry_slot},
           {"entry_name",
            o.entry_slot >= 0 ? std::string(builtin_slot(o.entry_slot).name) : std::string()},
           {"entry_step", o.entry_step}});
    }
    nlohmann::ordered_json entry = nullptr, watch = nullptr;
    if (t.entry)
      entry = {{"slot", t.entry->slot},
               {"name", builtin_slot(t.entry->slot).name},
               {"fold", t.entry->fold},
               {"step", t.entry->step}};
    if (t.first_watch)
      watch = {{"condition", std::string(name_of(t.first_watch->condition))},
               {"slot", t.first_watch->slot},
               {"fold", t.first_watch->fold},
               {"step", t.first_watch->step}};
    j["tasks"].push_back({{"id", t.task.id},
                          {"name", t.task.name},
                          {"variant", t.variant},
                          {"seed", t.task.seed},
                          {"state", task_state_name(t.state)},
                          {"outcome", outcome_name(t.outcome)},
                          {"exit_code", t.exit_code},
                          {"reason", t.reason},
                          {"entry", entry},
                          {"first_watch", watch},
                          {"halt", t.halt},
                          {"folds", folds}});
  }
  j["summary"] = {{"clean", s.clean},   {"fired", s.fired},     {"warned", s.warned},
                  {"failed", s.failed}, {"running", s.running}, {"pending", s.pending}};
  return j;
}

}  // namespace

int sweep_command(const SweepOptions& o) {
  const SweepSpec spec = read_sweep_spec(o.spec);
  const std::string dir =
      fs::absolute(o.out.empty() ? "sweeps/" + spec.name : o.out).lexically_normal().string();
  if (o.scheduler == "slurm") {
    const std::string script = sbatch_script(spec, dir);
    if (o.dry_run) {
      check_dir(o, dir);
      std::cout << script;
      return 0;
    }
    if (!on_path("sbatch"))
      throw UsageError(
          "--scheduler slurm: sbatch is not on PATH (use --scheduler local, or "
          "--dry-run to print the script)");
    prepare_dir(o, spec, dir);
    const fs::path file = fs::path(dir) / "sweep.sbatch";
    std::ofstream(file) << script;
    int code = 0;
    const std::string out =
        command_output("sbatch --parsable " + shell_quoted(file.string()) + " 2>&1", &code);
    const std::string job = out.substr(0, out.find_first_of(";\n"));
    if (code != 0 || job.empty() || job.find_first_not_of("0123456789") != std::string::npos) {
      // Nothing was submitted: the directory is not left looking like a sweep that waits.
      std::error_code ec;
      for (const char* f : {"sweep.toml", "sweep.sbatch"}) fs::remove(fs::path(dir) / f, ec);
      fs::remove_all(fs::path(dir) / "tasks", ec);
      throw IoError(fmt::format("sbatch {} failed (exit {}): {}", file.string(), code,
                                out.empty() ? std::string("no message") : out));
    }
    std::ofstream(fs::path(dir) / "slurm_job") << job << "\n";
    if (!o.quiet)
      fmt::print(stderr,
                 "sweep {}: array job {} of {} tasks submitted; nanscope-run sweep status {}\n",
                 spec.name, job, sweep_tasks(spec).size(), dir);
    return 0;
  }
  if (o.dry_run) {
    check_dir(o, dir);
    for (const SweepTask& t : sweep_tasks(spec))
      std::cout << fmt::format("{} sweep task {} --task {}   # {}\n", self_path(), dir, t.id,
                               t.name);
    return 0;
  }
  prepare_dir(o, spec, dir);
  write_runner(dir, static_cast<long>(getpid()));  // a task never started is not pending forever
  return run_local(spec, dir, o.jobs, o.quiet);
}

int sweep_task_command(const SweepTaskOptions& o) {
  int id = o.task;
  if (id < 0) {
    const char* env = std::getenv("SLURM_ARRAY_TASK_ID");
    if (!env) throw UsageError("sweep task: --task or SLURM_ARRAY_TASK_ID names the task");
    id = std::atoi(env);
  }
  const SweepSpec spec = read_sweep_spec((fs::path(o.dir) / "sweep.toml").string());
  const std::vector<SweepTask> tasks = sweep_tasks(spec);
  if (id < 0 || id >= static_cast<int>(tasks.size()))
    throw UsageError(
        fmt::format("sweep task: task {} is not in the sweep (0 to {})", id, tasks.size() - 1));
  const SweepTask& t = tasks[static_cast<std::size_t>(id)];
  const SweepVariant& v = spec.variants[static_cast<std::size_t>(t.variant)];
  const fs::path tdir = fs::path(o.dir) / "tasks" / t.name;
  std::error_code ec;
  fs::create_directories(tdir, ec);
  fs::remove(tdir / "status", ec);  // a requeued task starts again
  write_task_started(tdir.string(), static_cast<long>(getpid()));
  // The run's JSON summary and its messages go to the task's files.
  if (!std::freopen((tdir / "summary.json").c_str(), "w", stdout) ||
      !std::freopen((tdir / "log.txt").c_str(), "w", stderr))
    throw IoError(fmt::format("{}: cannot write the task's files", tdir.string()));
  RunOptions r;
  r.scenario = v.scenario.empty() ? spec.scenario : v.scenario;
  r.backend = spec.backend;
  r.seed = std::to_string(t.seed);
  r.sets = spec.sets;
  r.sets.insert(r.sets.end(), v.sets.begin(), v.sets.end());
  r.injections = v.injections;
  r.out_dir = (tdir / "run").string();
  r.force = true;
  r.json = true;
  TaskRecord rec;
  try {
    rec.exit_code = run_command(r);
  } catch (const DeviceError& e) {
    rec = {kTaskTempFail, e.what()};
  } catch (const Error& e) {
    rec = {exit_code_for(e.kind()), e.what()};
  }
  if (rec.exit_code != 0 && rec.exit_code != 1 && rec.reason.empty())
    rec.reason = "the run failed (see log.txt)";
  std::fflush(stdout);
  write_task_status(tdir.string(), rec);
  if (!rec.reason.empty()) std::fprintf(stderr, "nanscope-run: error: %s\n", rec.reason.c_str());
  return rec.exit_code;
}

int sweep_status_command(const SweepStatusOptions& o) {
  std::error_code ec;
  if (fs::is_regular_file(o.dir, ec))
    throw UsageError(fmt::format(
        "sweep status {}: takes the sweep directory (the one holding sweep.toml), not a file",
        o.dir));
  const SweepStatus s = read_sweep_status(o.dir, slurm_states(o.dir));
  if (o.json)
    std::cout << status_json(s, o.dir).dump() << std::endl;
  else
    std::cout << sweep_status_text(s);
  return 0;
}

}  // namespace nanscope::cli
