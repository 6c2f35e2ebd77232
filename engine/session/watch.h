// Watch conditions (docs/config.md, [watch]; docs/slots.md, "Watches"): what a step's outcome says
// is heading for trouble before anything fires. A condition trips once per fold and target (a
// slot, or a parameter group); a trip is a warning ("warned"), an event of its own, and a halt only
// with halt.on_watch.
#pragma once

#include <array>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/watch_condition.h"
#include "model/check_bank.h"

namespace nanscope {

// The conditions on a slot's margin to its type's limits (overflow_margin, underflow_share), one
// rule for nanscope's trainer and an SDK trainer's: trip(condition, value, threshold) for each
// that holds of the slot's row. The overflow margin's value and threshold are factors (2 to the
// row's margin in bits, against the configured factor).
template <class Trip>
void precision_watch(const HealthRow& h, const WatchConfig& w, Trip&& trip) {
  const double margin_bits = h[kHealthOverflowMargin];  // NaN compares false
  if (w.overflow_margin > 0 && margin_bits < std::log2(w.overflow_margin))
    trip(WatchCondition::OverflowMargin, std::exp2(margin_bits), w.overflow_margin);
  if (w.underflow_share > 0 && h[kHealthUnderflowShare] > w.underflow_share)
    trip(WatchCondition::UnderflowShare, static_cast<double>(h[kHealthUnderflowShare]),
         w.underflow_share);
}

class Watches {
 public:
  // `groups_present[g]`: the run has parameters in group g (the IQN group may not exist).
  Watches(const WatchConfig& config, const std::array<bool, kGroupCount>& groups_present);
  void begin_fold();
  // The trips new in the fold at this step.
  std::vector<WatchTrip> step(int fold, const StepOutcome& outcome);

 private:
  WatchConfig config_;
  std::array<bool, kGroupCount> groups_present_;
  std::set<std::pair<int, int>> tripped_;  // (condition, target) in this fold
};

}  // namespace nanscope
