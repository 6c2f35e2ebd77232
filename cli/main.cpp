// nanscope-run: the headless runner (GPU servers, CI). Grammar, JSON and exit codes: README.md.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>

#include "core/errors.h"
#include "core/version.h"
#include "io/file_guard.h"
#include "listings.h"
#include "run_command.h"

namespace {
// --backend auto|cuda|cpu, read into its enum (one home for the four commands that take it).
void add_backend_option(CLI::App* app, nanscope::BackendChoice& into, const std::string& help) {
  app->add_option_function<std::string>(
         "--backend",
         [&into](const std::string& v) {
           into = *nanscope::parse_enum<nanscope::BackendChoice>(v);
         },
         help)
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
}
}  // namespace

int main(int argc, char** argv) {
  using namespace nanscope;
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, reported as exit 74 with nothing
  // under a final name, instead of killing the process with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"nanscope-run: headless NaN-hunting runs of the nanscope trainer"};
  app.set_version_flag("--version", std::string("nanscope-run ") + kVersion);
  app.require_subcommand(0, 1);

  cli::RunOptions run;
  bool list_slots = false, list_params = false, list_scenarios = false;
  auto add_run_flags = [&](CLI::App* a) {
    // Not CLI11's existence check: the config reader refuses a missing file itself, with exit
    // 66 (missing input) and the file's name, as every input file.
    a->add_option("--config", run.config_file, "TOML config file");
    a->add_option("--scenario", run.scenario, "scenario preset (see --list-scenarios)");
    add_backend_option(a, run.backend, "auto|cuda|cpu");
    a->add_option("--folds", run.folds, "number of folds (run.folds)");
    a->add_option("--steps-per-fold", run.steps_per_fold, "steps per fold (run.steps_per_fold)");
    a->add_option("--seed", run.seed, "seed (run.seed)");
    a->add_option("--out", run.out_dir, "output directory (default runs/<UTC timestamp>)");
    a->add_flag("--force", run.force, "overwrite the run in an existing non-empty --out directory");
    a->add_option_function<std::string>(
         "--graph", [&run](const std::string& v) { run.graph = parse_enum<cli::OnOff>(v); },
         "on|off: run each step as one captured CUDA graph (default on with the CUDA "
         "backend; the CPU backend runs phase by phase)")
        ->check(CLI::IsMember({"on", "off"}));
    a->add_flag("--until-fire", run.until_fire,
                "halt after the first step in which anything fired");
    a->add_option("--break-on", run.breakpoints,
                  "stop after the first step in which SLOT (index or name) fires");
    a->add_flag("--guard", run.guard,
                "skip the optimizer update of any step in which a slot fired");
    a->add_option("--set", run.sets, "override a config key: KEY=VALUE (repeatable)");
    a->add_option("--inject", run.injections,
                  "fault: TARGET@FOLD:STEP[:KIND[:ELEMENT]] (repeatable)");
    a->add_flag("--json", run.json, "print the JSON run summary on stdout");
    a->add_flag("--quiet", run.quiet, "no human output on stderr");
  };
  // `nanscope-run [run] ...`: the run flags work with and without the word `run`.
  add_run_flags(&app);
  CLI::Option* list_slots_flag =
      app.add_flag("--list-slots", list_slots, "one line per slot: index name phase state");
  bool markdown = false;
  app.add_flag("--markdown", markdown,
               "with --list-slots: the slot table as docs/slots.md shows it (a Markdown table)")
      ->needs(list_slots_flag);
  app.add_flag("--list-params", list_params, "one line per parameter: name shape");
  app.add_flag("--list-scenarios", list_scenarios, "one line per scenario preset");
  CLI::App* run_cmd = app.add_subcommand("run", "train the configured folds (the default)");
  add_run_flags(run_cmd);
  cli::ReplayOptions replay;
  CLI::App* replay_cmd =
      app.add_subcommand("replay", "re-run a dumped step: reproducible or transient?");
  replay_cmd->add_option("dump", replay.dump, "dump file (dumps/fold..._step..._<slot>.h5)")
      ->required();
  add_backend_option(replay_cmd, replay.backend, "auto|cuda|cpu");
  replay_cmd->add_flag(
      "--with-injections", replay.with_injections,
      "make the dumped step's recorded slot injections again (replays the dumped step "
      "exactly)");
  replay_cmd->add_flag("--json", replay.json, "print the JSON verdict on stdout");
  cli::CompareOptions compare;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare",
      "every slot's health at two steps of a fold, what went non-finite or jumped first");
  compare_cmd->add_option("run", compare.run_file, "run file (run.h5)")->required();
  compare_cmd->add_option("--fold", compare.fold, "the fold")->required();
  compare_cmd
      ->add_option("--steps", compare.steps,
                   "the two steps A B (default: the fold's last clean step and its first "
                   "bad one)")
      ->expected(2);
  compare_cmd->add_option("--slot", compare.slot,
                          "also this slot's buffers at the two steps, element by element, "
                          "recomputed from the file's checkpoints (index or name)");
  add_backend_option(compare_cmd, compare.backend, "auto|cuda|cpu: recomputes with --slot");
  compare_cmd->add_flag("--json", compare.json, "print the table as JSON on stdout");
  cli::MaterializeOptions materialize;
  CLI::App* materialize_cmd = app.add_subcommand(
      "materialize",
      "recompute any step of a run file with checkpoints and write it as a dump (time travel)");
  materialize_cmd->add_option("run", materialize.run_file, "run file (run.h5)")->required();
  materialize_cmd->add_option("--fold", materialize.fold, "the fold")->required();
  materialize_cmd->add_option("--step", materialize.step, "the step within the fold")->required();
  materialize_cmd->add_option("--slot", materialize.slots,
                              "only this slot (index or name; repeatable; default every slot)");
  add_backend_option(materialize_cmd, materialize.backend, "auto|cuda|cpu");
  materialize_cmd
      ->add_option_function<std::string>(
          "--graph",
          [&materialize](const std::string& v) { materialize.graph = parse_enum<cli::OnOff>(v); },
          "on|off: recompute whole steps as the CUDA step graph (default on with CUDA)")
      ->check(CLI::IsMember({"on", "off"}));
  materialize_cmd->add_option("--out", materialize.out, "the dump to write (DUMP.h5)")->required();
  materialize_cmd->add_flag("--force", materialize.force, "replace an existing --out file");
  materialize_cmd->add_flag("--json", materialize.json, "print the JSON summary on stdout");
  cli::SweepOptions sweep;
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", "seeds x variants as tasks on Slurm or on this machine; sweep status DIR");
  sweep_cmd->add_option("spec", sweep.spec, "sweep spec (TOML, docs/sweeps.md)");
  sweep_cmd->add_option("--scheduler", sweep.scheduler, "local|slurm (default local)")
      ->check(CLI::IsMember({"local", "slurm"}));
  sweep_cmd->add_option("--out", sweep.out, "the sweep directory (default sweeps/<name>)");
  sweep_cmd->add_option("--jobs", sweep.jobs, "local: tasks at a time")->check(CLI::Range(1, 1024));
  sweep_cmd->add_flag("--dry-run", sweep.dry_run,
                      "print the sbatch script (slurm) or the task commands (local), run nothing");
  sweep_cmd->add_flag("--force", sweep.force, "start again in an existing sweep directory");
  sweep_cmd->add_flag("--quiet", sweep.quiet, "no progress on stderr");
  cli::SweepTaskOptions sweep_task;
  CLI::App* sweep_task_cmd =
      sweep_cmd->add_subcommand("task", "run one task of a sweep (the array script calls it)");
  sweep_task_cmd->add_option("dir", sweep_task.dir, "the sweep directory")->required();
  sweep_task_cmd->add_option("--task", sweep_task.task, "the task (default SLURM_ARRAY_TASK_ID)");
  cli::SweepStatusOptions sweep_status;
  CLI::App* sweep_status_cmd =
      sweep_cmd->add_subcommand("status", "where each task of a sweep stands");
  sweep_status_cmd->add_option("dir", sweep_status.dir, "the sweep directory")->required();
  sweep_status_cmd->add_flag("--json", sweep_status.json, "print it as JSON on stdout");
  std::string validate_path;
  CLI::App* validate_cmd = app.add_subcommand("validate",
                                              "read a run file or dump whole and say whether it is "
                                              "sound (exit 0, or 66/78 with the reason)");
  validate_cmd->add_option("file", validate_path, "run file or dump")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (list_scenarios) {
      cli::list_scenarios();
      return 0;
    }
    if (list_slots || list_params) {
      Config config = cli::resolve_config(run);
      if (list_slots && markdown) cli::list_slots_markdown();
      if (list_slots && !markdown) cli::list_slots(config);
      if (list_params) cli::list_params(config);
      return 0;
    }
    if (validate_cmd->parsed()) return read_file_for_validation(validate_path);
    if (replay_cmd->parsed()) return cli::replay_command(replay);
    if (compare_cmd->parsed()) return cli::compare_command(compare);
    if (materialize_cmd->parsed()) return cli::materialize_command(materialize);
    if (sweep_task_cmd->parsed()) return cli::sweep_task_command(sweep_task);
    if (sweep_status_cmd->parsed()) return cli::sweep_status_command(sweep_status);
    if (sweep_cmd->parsed()) {
      if (sweep.spec.empty()) throw UsageError("sweep: a spec (SPEC.toml) is needed");
      return cli::sweep_command(sweep);
    }
    return cli::run_command(run);
  } catch (const Error& e) {
    fmt::print(stderr, "nanscope-run: error: {}\n", e.what());
    return exit_code_for(e.kind());
  } catch (const std::exception& e) {
    fmt::print(stderr, "nanscope-run: internal error: {}\n", e.what());
    return exit_code_for(ErrorKind::Internal);
  }
}
