// Step compare (docs/slots.md, "Step compare"): every slot's health at two steps of a fold side by
// side with the change, sorted by growth, so that what led up to a fire (or a watch) is the top of
// a table. The workbench's compare panel and `nanscope-run compare` both show this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/slot_health.h"

namespace nanscope {

class SlotTable;

struct SlotChange {
  int slot = -1;
  HealthRow a, b;  // the slot's health at the two steps
  // The finite absolute maximum's ratio b / a (+Inf: it went from 0; NaN: no finite value is left
  // at b, or there was none at a), and the difference of the means b - a.
  double growth = 0, mean_change = 0;
  bool went_nonfinite = false;  // non-finite values at b and none at a
  bool jumped = false;          // went non-finite, or grew by kJumpFactor or more
};

inline constexpr double kJumpFactor = 10.0;

struct StepComparison {
  int fold = 0, step_a = 0, step_b = 0;
  // The slots measured at both steps: those whose non-finite values are new at b first, in
  // dataflow order (the way the NaN went: the step's entry first), then the other jumps, then the
  // rest, each by the largest growth first and the undefined growths (nothing finite at one of
  // the steps) last; ties in slot order.
  std::vector<SlotChange> rows;
};

// The two steps compared by default in a fold, from each step's "did anything fire" (index =
// step): the last clean step before the first fire and that fire; without a fire, the step before
// the first watch trip (`first_watch`) and the trip (a trip at step 0: the trip and the step
// after it); without either, the fold's first and last steps. `how` says which, as the workbench
// shows it; `after_trouble`: a fire or a watch chose them (the first and last steps of an
// uneventful fold are a summary, not a suspect). nullopt when the fold fired at step 0 (no clean
// step before it) or ran no step.
struct DefaultCompareSteps {
  std::pair<int, int> steps;
  const char* how;
  bool after_trouble = true;
};
std::optional<DefaultCompareSteps> default_compare_steps(const std::vector<bool>& fired,
                                                         std::optional<int> first_watch);

// `table`: the run's slots, for their dataflow ranks (a slot past it ranks by its index).
StepComparison compare_steps(const SlotTable& table, int fold, int step_a, const SlotHealthRows& a,
                             int step_b, const SlotHealthRows& b);

// The table as `nanscope-run compare` prints it (one line per slot, jumps marked).
std::string comparison_text(const SlotTable& table, const StepComparison& c);

// One slot's buffers at two steps, element by element (time travel recomputes any step's): how
// many elements differ in their bits and the first; the largest absolute change |b - a| and the
// largest relative change |b - a| / |a| (over a != 0) among the elements finite at both, each with
// its flat index (-1: none); and how many elements are finite at one step and not at the other.
struct ElementwiseChange {
  std::size_t count = 0;
  std::int64_t differing = 0, first_index = -1;
  double max_abs = 0, max_rel = 0;
  std::int64_t max_abs_index = -1, max_rel_index = -1;
  std::int64_t finiteness_changed = 0;
};
// Throws UsageError when the two buffers differ in size.
ElementwiseChange compare_elementwise(const std::vector<float>& a, const std::vector<float>& b);
std::string elementwise_text(const ElementwiseChange& c);

}  // namespace nanscope
