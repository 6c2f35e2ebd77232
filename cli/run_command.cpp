#include "run_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "backend_choice.h"
#include "core/config_io.h"
#include "core/errors.h"
#include "core/utc_time.h"
#include "core/version.h"
#include "run_summary.h"
#include "session/scenarios.h"
#include "session/session.h"

namespace nanscope::cli {

Config resolve_config(const RunOptions& o) {
  std::vector<std::string> sets;  // the flags are shorthands for keys, applied before --set
  auto number = [&](const char* flag, const char* key, const std::optional<std::string>& v) {
    if (!v) return;
    if (v->empty()) throw ConfigError(fmt::format("--{}: key '{}': empty value", flag, key));
    sets.push_back(fmt::format("{}={}", key, *v));
  };
  number("folds", "run.folds", o.folds);
  number("steps-per-fold", "run.steps_per_fold", o.steps_per_fold);
  number("seed", "run.seed", o.seed);
  if (o.until_fire) sets.push_back("halt.on_fire=\"step\"");
  if (o.guard) sets.push_back("guard.enabled=true");
  sets.insert(sets.end(), o.sets.begin(), o.sets.end());
  return nanscope::resolve_config(o.scenario, o.config_file, sets);
}

namespace {

// --out DIR (default runs/<UTC timestamp>): an existing non-empty directory is refused unless
// --force, which clears the run file and dumps of the earlier run.
std::string prepare_out_dir(const RunOptions& o) {
  namespace fs = std::filesystem;
  std::string dir = o.out_dir;
  if (dir.empty()) {
    const std::string stamp = utc_now(kUtcCompact);
    dir = "runs/" + stamp;
    // Runs started within the same second get their own directories.
    std::error_code ec;
    for (int n = 2; fs::exists(dir, ec); ++n) dir = fmt::format("runs/{}-{}", stamp, n);
    return dir;
  }
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    if (!o.force)
      throw UsageError(
          fmt::format("--out {}: the directory exists and is not empty (use --force "
                      "to overwrite its run)",
                      dir));
    // With the earlier run go the temporaries a killed run may have left (never read: readers
    // open final names only).
    fs::remove(fs::path(dir) / "run.h5", ec);
    fs::remove(fs::path(dir) / "run.h5.tmp", ec);
    fs::remove_all(fs::path(dir) / "dumps", ec);
  }
  return dir;
}

SessionOptions session_options(const RunOptions& o) {
  SessionOptions so;
  for (const auto& spec : o.injections) so.injections.push_back(parse_injection(spec));
  for (const auto& b : o.breakpoints) {
    auto slot = SlotTable::builtin()->find(b);
    if (!slot) throw UsageError(fmt::format("--break-on '{}': unknown slot (see --list-slots)", b));
    so.breakpoints.insert(*slot);
  }
  return so;
}

void print_report(Session& s) {
  fmt::print(stderr, "{:>4} {:>6} {:>12} {:>12} {:>10} {:>10}  fired\n", "fold", "steps",
             "loss_first", "loss_last", "c51_first", "c51_last");
  for (const auto& f : s.folds()) {
    std::string fired;
    for (int i = 0; i < kBuiltinSlotCount; ++i)
      if (f.flags.slots[i].state == SlotState::Fired)
        fired += fmt::format("{}{}", fired.empty() ? "" : " ", builtin_slot(i).name);
    fmt::print(stderr, "{:>4} {:>6} {:>12.5f} {:>12.5f} {:>10.5f} {:>10.5f}  {}\n", f.fold, f.steps,
               f.loss_first, f.loss_last, f.c51_first, f.c51_last, fired.empty() ? "-" : fired);
  }
  if (auto e = s.entry())
    fmt::print(stderr, "entry point: slot {} {} (fold {}, step {})\n", e->slot,
               builtin_slot(e->slot).name, e->fold, e->step);
  if (auto b = s.backward_entry())
    fmt::print(stderr, "backward localisation: {} (slot {} {} fired first, fold {}, step {})\n",
               backward_stage_description(b->slot), b->slot, builtin_slot(b->slot).name, b->fold,
               b->step);
  for (const WatchTrip& t : s.watch_trips())
    fmt::print(stderr, "watch (fold {}, step {}): {}\n", t.fold, t.step, watch_trip_text(t));
  if (const auto& h = s.halt())
    fmt::print(stderr, "stopped: {} at fold {}, step {}\n", name_of(h->kind), h->fold, h->step);
}

}  // namespace

int run_command(const RunOptions& o) {
  const Config config = resolve_config(o);
  const bool human = !o.quiet;
  auto backend = choose_backend(o.backend, config, human);
  if (o.graph == OnOff::On && !backend->supports_step_graph())
    throw UsageError(
        fmt::format("--graph on: graph capture of the step needs the CUDA backend (this run uses "
                    "the {} backend; --graph off runs it phase by phase)",
                    backend->name()));
  SessionOptions so = session_options(o);
  so.graph = o.graph ? *o.graph == OnOff::On : backend->supports_step_graph();
  so.out_dir = prepare_out_dir(o);
  so.scenario = o.scenario.empty() ? "healthy" : o.scenario;  // the defaults are "healthy"
  Session session(config, std::move(backend), so);
  const bool tty = human && isatty(fileno(stderr));
  if (human)
    fmt::print(
        stderr,
        "nanscope-run {}: backend {} [{}], {} fold{} x {} step{}, seed {}{}, bars: {} ({})\n",
        kVersion, session.backend().name(), session.backend().device_name(), config.run.folds,
        config.run.folds == 1 ? "" : "s", config.run.steps_per_fold,
        config.run.steps_per_fold == 1 ? "" : "s", config.run.seed,
        o.scenario.empty() ? "" : ", scenario " + o.scenario, session.bars().source,
        session.bars().bars.size());

  const auto start = std::chrono::steady_clock::now();
  session.run({}, {}, [&](const StepRecord& r) {
    if (human && !tty && r.step + 1 == config.run.steps_per_fold)  // plain periodic lines
      fmt::print(stderr, "fold {} done ({} of {}): loss {:.4f} c51 {:.4f}\n", r.fold, r.fold + 1,
                 config.run.folds, r.losses.total, r.losses.c51);
    if (tty && (r.step % 10 == 0 || r.step + 1 == config.run.steps_per_fold)) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(stderr,
                 "\rfold {} (of {}) step {} (of {}) loss {:.4f} c51 {:.4f} ({:.1f} steps/s)   ",
                 r.fold, config.run.folds, r.step, config.run.steps_per_fold, r.losses.total,
                 r.losses.c51, static_cast<double>(r.global_step + 1) / secs);
    }
  });
  if (tty) fmt::print(stderr, "\n");
  if (human) {
    print_report(session);
    fmt::print(stderr, "run file: {}\n", session.run_file_path());
    for (const auto& d : session.dump_paths()) fmt::print(stderr, "dump: {}\n", d);
  }
  if (o.json) std::cout << run_summary(session).dump() << std::endl;
  const bool fired = session.entry().has_value();
  return (fired || session.halt()) ? 1 : 0;
}

}  // namespace nanscope::cli
