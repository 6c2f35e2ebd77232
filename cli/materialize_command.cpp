// `nanscope-run materialize RUN.h5 --fold F --step S`: time travel on the command line. Recomputes
// any step of a run file that holds checkpoints (history.in_run_file) from the latest one at or
// before it and writes that step as a dump (docs/files.md, "Checkpoints"), replayable like a first
// fire's. On another backend than the run's it says so, with how far the result is from what the
// run recorded.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend_choice.h"
#include "core/config_io.h"
#include "core/errors.h"
#include "core/sentinel.h"
#include "io/file_guard.h"
#include "run_command.h"
#include "session/materialize.h"

namespace nanscope::cli {
namespace {

std::vector<int> slot_indices(const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& n : names) {
    const std::optional<int> s = SlotTable::builtin()->find(n);
    if (!s) throw UsageError(fmt::format("--slot '{}': no such slot (see --list-slots)", n));
    out.push_back(*s);
  }
  return out;
}

void check_step(const RunFileData& run, const std::string& path, int fold, int step) {
  int last = -1;
  for (const RunStepRow& r : run.steps)
    if (r.fold == fold) last = std::max(last, r.step);
  if (last < 0)
    throw UsageError(fmt::format("{}: fold {} ran no step (the file holds folds 0 to {})", path,
                                 fold, static_cast<int>(run.folds.size()) - 1));
  if (step < 0 || step > last)
    throw UsageError(
        fmt::format("{}: fold {} has no step {} (it ran steps 0 to {})", path, fold, step, last));
}

}  // namespace

Config run_file_config(const RunFileData& run, const std::string& path) {
  ConfigBuilder b;
  b.load_text(run.config_toml, path + " config");
  return b.build();
}

// --out must not be the run file it reads, and an existing file is replaced only with --force.
void check_out(const MaterializeOptions& o) {
  std::error_code ec;
  if (std::filesystem::equivalent(o.run_file, o.out, ec))
    throw UsageError(fmt::format("--out {}: that is the run file being read", o.out));
  if (std::filesystem::exists(o.out) && !o.force)
    throw UsageError(fmt::format("--out {}: the file exists (use --force to replace it)", o.out));
}

int materialize_command(const MaterializeOptions& o) {
  check_out(o);
  if (o.graph == OnOff::On && o.backend == BackendChoice::Cpu)
    throw UsageError(
        "--graph on: graph capture of the step needs the CUDA backend (--backend cpu steps "
        "phase by phase)");
  validate_in_child(o.run_file, {"/proc/self/exe", "validate"});
  const RunFileData run = read_run_file(o.run_file);
  check_step(run, o.run_file, o.fold, o.step);
  const std::vector<int> slots = slot_indices(o.slots);
  const Checkpoint from = file_checkpoint_for(run, o.run_file, o.fold, o.step);
  const Config config = run_file_config(run, o.run_file);
  const bool say = !o.json;
  BackendFactory make = [&](const Config& c) { return choose_backend(o.backend, c, say); };
  const bool graph = o.graph ? *o.graph == OnOff::On : o.backend != BackendChoice::Cpu;
  Materializer materializer(config, make, graph);
  const std::optional<MaterializedStep> m =
      materializer.materialize(from, MaterializeRequest{o.fold, o.step, slots});
  if (!m) throw InternalError("the recomputation was cancelled");
  const RunAgreement agree =
      agreement_with_run(*m, run, std::filesystem::path(o.run_file).parent_path().string());
  const DumpData dump =
      materialized_dump(*m, config, run.config_toml, materializer.backend().layout(),
                        std::filesystem::absolute(o.run_file).string());
  write_dump(o.out, dump);

  const bool same_backend = parse_enum<BackendKind>(run.backend) == m->backend_kind;
  fmt::print(stderr,
             "fold {} step {}: recomputed from the checkpoint at step {} ({} step{}, {:.1f} ms) on "
             "the {} backend{}\n",
             m->fold, m->step, m->checkpoint_step, m->steps_run, m->steps_run == 1 ? "" : "s",
             m->ms, m->backend,
             same_backend
                 ? ""
                 : fmt::format(" (the run was {}: float32 rounding may differ)", run.backend));
  fmt::print(stderr, "  slot health of the {} recomputed step{}: {}\n", agree.steps_compared,
             agree.steps_compared == 1 ? "" : "s",
             agree.health_bit_equal ? "equal to the run's, bit for bit"
                                    : fmt::format("largest relative difference to the run's {:.3g}",
                                                  agree.health_max_rel));
  if (!agree.dump.empty())
    fmt::print(stderr, "  against the dump {}: {}\n", agree.dump,
               agree.dump_bit_equal
                   ? "equal, bit for bit"
                   : fmt::format("largest absolute difference {:.3g}", agree.dump_max_abs));
  fmt::print(stderr, "  {} slot{} written to {}\n", dump.slots.size(),
             dump.slots.size() == 1 ? "" : "s", o.out);
  if (o.json) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["run_file"] = o.run_file;
    j["out"] = o.out;
    j["fold"] = m->fold;
    j["step"] = m->step;
    j["global_step"] = m->global_step;
    j["checkpoint_step"] = m->checkpoint_step;
    j["steps_run"] = m->steps_run;
    j["ms"] = m->ms;
    j["backend"] = m->backend;
    j["run_backend"] = run.backend;
    j["same_backend"] = same_backend;
    j["graph"] = m->graph;
    j["entry_slot"] = dump.entry_slot;
    j["slots"] = nlohmann::ordered_json::array();
    for (const DumpSlot& s : dump.slots)
      j["slots"].push_back({{"index", s.index},
                            {"name", builtin_slot(s.index).name},
                            {"kinds", kind_names(s.scan.kinds)},
                            {"count", s.scan.count}});
    j["agreement"] = {
        {"steps_compared", agree.steps_compared}, {"health_bit_equal", agree.health_bit_equal},
        {"health_max_rel", agree.health_max_rel}, {"dump", agree.dump},
        {"dump_slots", agree.dump_slots},         {"dump_bit_equal", agree.dump_bit_equal},
        {"dump_max_abs", agree.dump_max_abs}};
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace nanscope::cli
