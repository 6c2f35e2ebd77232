// `nanscope-run run`: resolves the config, picks the backend, runs the folds, reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/enum_names.h"
#include "io/run_file.h"

namespace nanscope::cli {
enum class OnOff { Off, On };
}  // namespace nanscope::cli
namespace nanscope {
template <>
struct EnumNames<cli::OnOff> {
  static constexpr std::array<std::string_view, 2> kNames = {"off", "on"};
};
}  // namespace nanscope

namespace nanscope::cli {

struct RunOptions {
  std::string config_file;
  std::string scenario;
  BackendChoice backend = BackendChoice::Auto;
  // As typed: checked by the config like --set run.folds=..., so that an empty value or one that
  // overflows is refused naming the key, never saturated or dropped.
  std::optional<std::string> folds, steps_per_fold, seed;
  std::vector<std::string> sets;
  std::vector<std::string> injections;
  std::vector<std::string> breakpoints;
  std::string out_dir;  // default: runs/<UTC timestamp>
  bool force = false;
  std::optional<OnOff> graph;  // unset: on with the CUDA backend, off with the CPU one
  bool until_fire = false;
  bool guard = false;
  bool json = false;
  bool quiet = false;
};

// The config the options describe: scenario preset, file, flags, --set (in that order).
Config resolve_config(const RunOptions& options);

// Returns the process exit code; throws nanscope::Error on bad input.
int run_command(const RunOptions& options);

struct ReplayOptions {
  std::string dump;
  BackendChoice backend = BackendChoice::Auto;
  bool with_injections = false;  // make the dumped step's recorded slot injections again
  bool json = false;
};
int replay_command(const ReplayOptions& options);

struct CompareOptions {
  std::string run_file;
  int fold = 0;
  std::vector<int> steps;  // empty: the fold's last clean step and first bad one
  std::string slot;        // also this slot's buffers, element by element (time travel)
  BackendChoice backend = BackendChoice::Auto;
  bool json = false;
};
int compare_command(const CompareOptions& options);

struct MaterializeOptions {
  std::string run_file;
  int fold = 0, step = 0;
  std::vector<std::string> slots;  // empty: every slot of the step
  BackendChoice backend = BackendChoice::Auto;
  std::optional<OnOff> graph;  // unset: on unless --backend cpu
  std::string out;
  bool force = false;  // replace an existing --out
  bool json = false;
};
int materialize_command(const MaterializeOptions& options);
struct SweepOptions {
  std::string spec;
  std::string scheduler = "local";  // local | slurm
  std::string out;                  // default sweeps/<name>
  bool dry_run = false, force = false, quiet = false;
  int jobs = 0;  // local: tasks at a time (0: the spec's, else one per GPU or two cores)
};
int sweep_command(const SweepOptions& options);
struct SweepTaskOptions {
  std::string dir;
  int task = -1;  // -1: SLURM_ARRAY_TASK_ID
};
int sweep_task_command(const SweepTaskOptions& options);
struct SweepStatusOptions {
  std::string dir;
  bool json = false;
};
int sweep_status_command(const SweepStatusOptions& options);

// A run file's config, from its `config` attribute (ConfigError naming the file).
Config run_file_config(const RunFileData& run, const std::string& path);

}  // namespace nanscope::cli
