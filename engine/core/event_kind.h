// What a run stopped on or noticed (the run file's /events kind, the JSON summary's halt reason).
#pragma once

#include "core/enum_names.h"

namespace nanscope {

// Watch: a watch condition tripped (a warning, not a fire); HaltWatch: the halt.on_watch halt;
// LossScaleSkip: the trainer's loss scaler skipped the step's update (an SDK trainer's report),
// naming the first slot, in dataflow order, that overflowed in the step.
enum class EventKind {
  FirstFire,
  HaltNan,
  HaltGradCollapse,
  Breakpoint,
  Manual,
  Watch,
  HaltWatch,
  LossScaleSkip
};
template <>
struct EnumNames<EventKind> {
  static constexpr std::array<std::string_view, 8> kNames = {
      "first_fire", "halt_nan", "halt_grad_collapse", "breakpoint",
      "manual",     "watch",    "halt_watch",         "loss_scale_skip"};
};

// Whether an event stopped the run (a halt, a breakpoint, a manual stop) rather than noting
// something (a first fire, a watch trip, a skipped update).
constexpr bool stops_the_run(EventKind k) {
  return k != EventKind::FirstFire && k != EventKind::Watch && k != EventKind::LossScaleSkip;
}

}  // namespace nanscope
