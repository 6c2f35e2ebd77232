// `nanscope-run compare RUN.h5 --fold F [--steps A B] [--slot NAME] [--json]`: every slot's health
// at two steps of a fold side by side (session/step_compare.h), by default the last clean step and
// the first bad one, so that what grew on the way to a fire is the top of the table; with --slot,
// that slot's buffers at both steps element by element, recomputed from the file's checkpoints.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend_choice.h"
#include "core/errors.h"
#include "core/slot_table.h"
#include "io/file_guard.h"
#include "io/run_file.h"
#include "run_command.h"
#include "session/materialize.h"
#include "session/step_compare.h"

namespace nanscope::cli {
namespace {

// A float that may be NaN or infinite as JSON: null where it is not a finite number.
nlohmann::ordered_json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

// The fold's rows of the file, indexed by step.
std::vector<const RunStepRow*> fold_rows(const RunFileData& run, int fold) {
  std::vector<const RunStepRow*> rows;
  for (const RunStepRow& r : run.steps)
    if (r.fold == fold) {
      if (r.step >= static_cast<int>(rows.size()))
        rows.resize(static_cast<std::size_t>(r.step) + 1, nullptr);
      rows[static_cast<std::size_t>(r.step)] = &r;
    }
  return rows;
}

// The slot's buffers at the two steps, recomputed from the file's checkpoints, compared.
ElementwiseChange buffers_of(const CompareOptions& o, const RunFileData& run, int a, int b) {
  const std::optional<int> slot = run.table->find(o.slot);
  if (!slot) throw UsageError(fmt::format("--slot '{}': no such slot (see --list-slots)", o.slot));
  const Config config = run_file_config(run, o.run_file);
  Materializer m(
      config, [&](const Config& c) { return choose_backend(o.backend, c, !o.json); },
      o.backend != BackendChoice::Cpu);
  std::vector<float> buffer[2];
  for (int k = 0; k < 2; ++k) {
    const int step = k == 0 ? a : b;
    const auto got = m.materialize(file_checkpoint_for(run, o.run_file, o.fold, step),
                                   MaterializeRequest{o.fold, step, {*slot}});
    if (!got || got->slots.empty())
      throw UsageError(fmt::format("{}: slot {} does not exist in this run", o.run_file, o.slot));
    buffer[k] = got->slots.front().values;
  }
  return compare_elementwise(buffer[0], buffer[1]);
}

}  // namespace

int compare_command(const CompareOptions& o) {
  validate_in_child(o.run_file, {"/proc/self/exe", "validate"});
  const RunFileData run = read_run_file(o.run_file);
  const std::vector<const RunStepRow*> rows = fold_rows(run, o.fold);
  if (rows.empty())
    throw UsageError(fmt::format("{}: fold {} ran no step (the file holds folds 0 to {})",
                                 o.run_file, o.fold, static_cast<int>(run.folds.size()) - 1));
  const int n = static_cast<int>(rows.size());
  std::pair<int, int> steps;
  if (o.steps.empty()) {
    std::vector<bool> fired(rows.size(), false);
    for (std::size_t i = 0; i < rows.size(); ++i) fired[i] = rows[i] && any_fired(rows[i]->flags);
    std::optional<int> first_watch;
    for (const WatchTrip& t : run.watches)
      if (t.fold == o.fold && (!first_watch || t.step < *first_watch)) first_watch = t.step;
    const auto picked = default_compare_steps(fired, first_watch);
    if (!picked)
      throw UsageError(fmt::format(
          "{}: fold {} fired at step 0, so it has no clean step before its first bad one; pick "
          "two steps with --steps A B",
          o.run_file, o.fold));
    steps = picked->steps;
  } else {
    steps = {o.steps[0], o.steps[1]};
  }
  for (int s : {steps.first, steps.second})
    if (s < 0 || s >= n || !rows[static_cast<std::size_t>(s)])
      throw UsageError(fmt::format("{}: fold {} has no step {} (it ran steps 0 to {})", o.run_file,
                                   o.fold, s, n - 1));
  const StepComparison c = compare_steps(
      *run.table, o.fold, steps.first, rows[static_cast<std::size_t>(steps.first)]->health,
      steps.second, rows[static_cast<std::size_t>(steps.second)]->health);
  if (c.rows.empty())
    throw DataError(fmt::format(
        "{}: no slot health at fold {}, steps {} and {} (a file of schema_version 1, a run "
        "with sentinel.health off (an SDK session's health option), no slot checked at both steps, "
        "or a step whose health the run file's "
        "budget did not keep: docs/files.md, \"What the run file keeps\")",
        o.run_file, o.fold, steps.first, steps.second));
  if (!o.json)
    std::cout << comparison_text(*run.table, c) << std::flush;  // the table needs no checkpoint
  const std::optional<ElementwiseChange> buffers =
      o.slot.empty() ? std::nullopt : std::optional(buffers_of(o, run, steps.first, steps.second));
  if (!o.json) {
    if (buffers)
      std::cout << fmt::format("{} element by element, step {} vs step {}: {}\n", o.slot,
                               steps.first, steps.second, elementwise_text(*buffers));
    return 0;
  }
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["run"] = o.run_file;
  j["fold"] = c.fold;
  j["step_a"] = c.step_a;
  j["step_b"] = c.step_b;
  j["rows"] = nlohmann::ordered_json::array();
  for (const SlotChange& r : c.rows)
    j["rows"].push_back({{"slot", r.slot},
                         {"name", run.table->at(r.slot).name},
                         {"absmax_a", number_or_null(abs_max(r.a))},
                         {"absmax_b", number_or_null(abs_max(r.b))},
                         {"growth", number_or_null(r.growth)},
                         {"mean_a", number_or_null(r.a[kHealthMean])},
                         {"mean_b", number_or_null(r.b[kHealthMean])},
                         {"mean_change", number_or_null(r.mean_change)},
                         {"nonfinite_a", static_cast<std::int64_t>(r.a[kHealthNonfinite])},
                         {"nonfinite_b", static_cast<std::int64_t>(r.b[kHealthNonfinite])},
                         {"jumped", r.jumped}});
  if (buffers)
    j["elementwise"] = {{"slot", *run.table->find(o.slot)},
                        {"name", run.table->at(*run.table->find(o.slot)).name},
                        {"count", buffers->count},
                        {"differing", buffers->differing},
                        {"first_index", buffers->first_index},
                        {"max_abs", buffers->max_abs},
                        {"max_abs_index", buffers->max_abs_index},
                        {"max_rel", buffers->max_rel},
                        {"max_rel_index", buffers->max_rel_index},
                        {"finiteness_changed", buffers->finiteness_changed}};
  std::cout << j.dump() << std::endl;
  return 0;
}

}  // namespace nanscope::cli
