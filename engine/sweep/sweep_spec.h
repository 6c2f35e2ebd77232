// A sweep (docs/sweeps.md): seeds x variants (config overrides, a scenario, injections), each
// (variant, seed) one task, run on Slurm as an array job or on this machine N at a time. The spec
// is a TOML file; the sweep directory holds its resolved copy, sweep.toml, which the tasks read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend_names.h"

namespace nanscope {

struct SweepVariant {
  std::string name;
  std::string scenario;                 // empty: the sweep's
  std::vector<std::string> sets;        // KEY=VALUE, after the sweep's own
  std::vector<std::string> injections;  // TARGET@FOLD:STEP[:KIND[:ELEMENT]]
};

// What the sbatch script passes through (#SBATCH lines), and the array's concurrency limit (%N).
struct SlurmOptions {
  std::string partition, time, gres;
  int concurrency = 0;             // 0: no limit
  bool requeue = true;             // a task that exits with EX_TEMPFAIL (75) is requeued
  std::vector<std::string> extra;  // more #SBATCH options, each as written (--account=...)
};

struct SweepSpec {
  std::string name;
  std::vector<std::uint64_t> seeds;
  std::string scenario = "healthy";
  BackendChoice backend = BackendChoice::Auto;
  std::vector<std::string> sets;  // for every variant: KEY=VALUE (run.folds=6, ...)
  std::vector<SweepVariant> variants;
  SlurmOptions slurm;
  int local_jobs = 0;  // 0: one per GPU when there are GPUs, else one per two cores
};

struct SweepTask {
  int id = 0;  // SLURM_ARRAY_TASK_ID: variant * seeds + seed index
  int variant = 0;
  std::uint64_t seed = 0;
  std::string name;  // the task's directory under tasks/: VARIANT-seedSEED
};

// Reads and checks a spec (ConfigError naming the file, the key and the problem; every config
// override and injection is checked as a run would check it).
SweepSpec read_sweep_spec(const std::string& path);
SweepSpec parse_sweep_spec(const std::string& text, const std::string& origin);
std::vector<SweepTask> sweep_tasks(const SweepSpec& spec);
// The spec as TOML (the sweep directory's sweep.toml), read back by read_sweep_spec.
std::string sweep_spec_toml(const SweepSpec& spec);

// The exit codes a task gives its scheduler (docs/sweeps.md): what the run gave (0 clean, 1
// fired or halted, 2 usage, 66/78 bad input), with a device or transient error made EX_TEMPFAIL.
inline constexpr int kTaskTempFail = 75;

}  // namespace nanscope
