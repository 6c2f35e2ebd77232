// `nanscope-run compare RUN.h5 --fold F [--steps A B] [--json]`: every slot's health at two steps
// of a fold side by side (session/step_compare.h), by default the last clean step and the first
// bad one, so that what grew on the way to a fire is the top of the table.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/slot_table.h"
#include "io/file_guard.h"
#include "io/run_file.h"
#include "run_command.h"
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
  const StepComparison c =
      compare_steps(o.fold, steps.first, rows[static_cast<std::size_t>(steps.first)]->health,
                    steps.second, rows[static_cast<std::size_t>(steps.second)]->health);
  if (c.rows.empty())
    throw DataError(fmt::format(
        "{}: no slot health at fold {}, steps {} and {} (a file of schema_version 1, or a run "
        "with sentinel.health off, or no slot checked at both steps)",
        o.run_file, o.fold, steps.first, steps.second));
  if (!o.json) {
    std::cout << comparison_text(c);
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
                         {"name", slot_info(r.slot).name},
                         {"absmax_a", number_or_null(abs_max(r.a))},
                         {"absmax_b", number_or_null(abs_max(r.b))},
                         {"growth", number_or_null(r.growth)},
                         {"mean_a", number_or_null(r.a[kHealthMean])},
                         {"mean_b", number_or_null(r.b[kHealthMean])},
                         {"mean_change", number_or_null(r.mean_change)},
                         {"nonfinite_a", static_cast<std::int64_t>(r.a[kHealthNonfinite])},
                         {"nonfinite_b", static_cast<std::int64_t>(r.b[kHealthNonfinite])},
                         {"jumped", r.jumped}});
  std::cout << j.dump() << std::endl;
  return 0;
}

}  // namespace nanscope::cli
