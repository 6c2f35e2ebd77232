// Watch conditions (docs/config.md, [watch]; docs/slots.md, "Watches"): what a step's outcome says
// is heading for trouble before anything fires. A condition trips once per fold and target (a
// slot, or a parameter group); a trip is a warning ("warned"), an event of its own, and a halt only
// with halt.on_watch.
#pragma once

#include <array>
#include <set>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/watch_condition.h"
#include "model/check_bank.h"

namespace nanscope {

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
