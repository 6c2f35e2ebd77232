#include "session/watch.h"

namespace nanscope {

Watches::Watches(const WatchConfig& config, const std::array<bool, kGroupCount>& groups_present)
    : config_(config), groups_present_(groups_present) {}

void Watches::begin_fold() {
  tripped_.clear();
}

std::vector<WatchTrip> Watches::step(int fold, const StepOutcome& o) {
  std::vector<WatchTrip> trips;
  auto trip = [&](WatchCondition c, int slot, int group, double value, double threshold) {
    const int target = group >= 0 ? group : slot;
    if (!tripped_.insert({static_cast<int>(c), target}).second) return;  // once per fold
    trips.push_back(WatchTrip{c, slot, group, fold, o.step, value, threshold});
  };
  // The gradient norms per group (slot 21 holds them): a non-finite norm is a fire, not a watch,
  // and compares false both ways.
  for (int g = 0; g < kGroupCount; ++g) {
    if (!groups_present_[static_cast<std::size_t>(g)]) continue;
    const double norm = o.losses.group_norm[static_cast<std::size_t>(g)];
    if (config_.grad_explode > 0 && norm > config_.grad_explode)
      trip(WatchCondition::GradExplode, kGradNorm, g, norm, config_.grad_explode);
    if (config_.grad_vanish > 0 && norm < config_.grad_vanish)
      trip(WatchCondition::GradVanish, kGradNorm, g, norm, config_.grad_vanish);
  }
  return trips;
}

}  // namespace nanscope
