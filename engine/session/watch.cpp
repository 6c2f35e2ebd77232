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
    const int target = group >= 0 ? kBuiltinSlotCount + group : slot;
    if (!tripped_.insert({static_cast<int>(c), target}).second) return;  // once per fold
    trips.push_back(WatchTrip{c, slot, group, fold, o.step, value, threshold});
  };
  const WatchConfig& w = config_;
  if (o.step < w.warmup) return trips;
  // The slots' health (unmeasured rows are NaN, and NaN compares false both ways): in slot order.
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    const HealthRow& h = o.health[static_cast<std::size_t>(s)];
    if (!measured(h)) continue;
    const double top = abs_max(h);
    if (w.absmax > 0 && top > w.absmax) trip(WatchCondition::Absmax, s, -1, top, w.absmax);
    if (w.c51_mass > 0 && h[kHealthMassError] > w.c51_mass)
      trip(WatchCondition::C51Mass, s, -1, h[kHealthMassError], w.c51_mass);
    if (w.quantile_crossing > 0 && h[kHealthCrossing] > w.quantile_crossing)
      trip(WatchCondition::QuantileCrossing, s, -1, h[kHealthCrossing], w.quantile_crossing);
    // The logits a logsumexp takes: the C51 log-softmax's and CQL's over Q.
    const bool lse_input = builtin_slot(s).roles & kRoleLseInput;
    if (w.cql_margin > 0 && lse_input && top > 0) {
      const double headroom = overflow_headroom_decades(top);
      if (headroom < w.cql_margin) trip(WatchCondition::CqlMargin, s, -1, headroom, w.cql_margin);
    }
    if (w.dead_relu > 0 && (builtin_slot(s).roles & kRoleReluOutput) &&
        h[kHealthZeroFraction] > w.dead_relu)
      trip(WatchCondition::DeadRelu, s, -1, h[kHealthZeroFraction], w.dead_relu);
    precision_watch(h, w, [&](WatchCondition c, double value, double threshold) {
      trip(c, s, -1, value, threshold);
    });
  }
  // The parameter groups: gradient norms (slot 21 holds them; a non-finite norm is a fire, not a
  // watch) and, after an update that happened, the update's norm over the weights' norm.
  for (int g = 0; g < kGroupCount; ++g) {
    if (!groups_present_[static_cast<std::size_t>(g)]) continue;
    const double norm = o.losses.group_norm[static_cast<std::size_t>(g)];
    if (w.grad_explode > 0 && norm > w.grad_explode)
      trip(WatchCondition::GradExplode, kGradNorm, g, norm, w.grad_explode);
    if (w.grad_vanish > 0 && norm < w.grad_vanish)
      trip(WatchCondition::GradVanish, kGradNorm, g, norm, w.grad_vanish);
    const double ratio = o.update_ratio[static_cast<std::size_t>(g)];
    if (!o.updated) continue;
    if (w.update_ratio_floor > 0 && ratio < w.update_ratio_floor)
      trip(WatchCondition::UpdateRatio, kParams, g, ratio, w.update_ratio_floor);
    else if (w.update_ratio_ceiling > 0 && ratio > w.update_ratio_ceiling)
      trip(WatchCondition::UpdateRatio, kParams, g, ratio, w.update_ratio_ceiling);
  }
  return trips;
}

}  // namespace nanscope
