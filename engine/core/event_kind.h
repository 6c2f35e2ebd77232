// What a run stopped on or noticed (the run file's /events kind, the JSON summary's halt reason).
#pragma once

#include "core/enum_names.h"

namespace nanscope {

enum class EventKind { FirstFire, HaltNan, HaltGradCollapse, Breakpoint, Manual };
template <>
struct EnumNames<EventKind> {
  static constexpr std::array<std::string_view, 5> kNames = {
      "first_fire", "halt_nan", "halt_grad_collapse", "breakpoint", "manual"};
};

}  // namespace nanscope
