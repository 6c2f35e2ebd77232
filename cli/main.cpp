// nanscope-run: the headless runner (GPU servers, CI). Grammar, exit codes: spec contract.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "core/errors.h"
#include "core/version.h"
#include "run_command.h"

int main(int argc, char** argv) {
  using namespace nanscope;
  CLI::App app{"nanscope-run: headless NaN-hunting runs of the nanscope trainer"};
  app.set_version_flag("--version", std::string("nanscope-run ") + kVersion);
  app.require_subcommand(0, 1);

  cli::RunOptions run;
  auto add_run_flags = [&run](CLI::App* a) {
    a->add_option("--config", run.config_file, "TOML config file")->check(CLI::ExistingFile);
    a->add_option("--backend", run.backend, "auto|cuda|cpu")
        ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
    a->add_option("--folds", run.folds, "number of folds (run.folds)");
    a->add_option("--steps-per-fold", run.steps_per_fold, "steps per fold (run.steps_per_fold)");
    a->add_option("--seed", run.seed, "seed (run.seed)");
    a->add_option("--set", run.sets, "override a config key: KEY=VALUE (repeatable)");
    a->add_flag("--quiet", run.quiet, "no human output on stderr");
  };
  // `nanscope-run [run] ...`: the run flags work with and without the word `run`.
  add_run_flags(&app);
  CLI::App* run_cmd = app.add_subcommand("run", "train the configured folds (the default)");
  add_run_flags(run_cmd);
  app.fallthrough(false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Missing config files are exit 66 rather than a usage error.
    if (e.get_name() == "ValidationError" && std::string(e.what()).find("File does not exist") !=
                                                 std::string::npos) {
      fmt::print(stderr, "nanscope-run: {}\n", e.what());
      return exit_code_for(ErrorKind::MissingInput);
    }
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    return cli::run_command(run);
  } catch (const Error& e) {
    fmt::print(stderr, "nanscope-run: error: {}\n", e.what());
    return exit_code_for(e.kind());
  } catch (const std::exception& e) {
    fmt::print(stderr, "nanscope-run: internal error: {}\n", e.what());
    return exit_code_for(ErrorKind::Internal);
  }
}
