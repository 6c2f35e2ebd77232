#include "core/watch_condition.h"

#include <fmt/format.h>

#include "core/config.h"
#include "core/slot_table.h"

namespace nanscope {

std::string watch_target_text(const WatchTrip& t) {
  if (t.group >= 0 && t.group < kGroupCount)
    return fmt::format("group {}", kParamGroups[static_cast<std::size_t>(t.group)]);
  // Watches are nanscope's own trainer's (its config's `watch` keys).
  if (t.slot >= 0 && t.slot < kBuiltinSlotCount)
    return fmt::format("slot {} {}", t.slot, builtin_slot(t.slot).name);
  return "-";
}

std::string watch_trip_text(const WatchTrip& t, bool name_slot) {
  const std::string on = name_slot || t.group >= 0 ? " on " + watch_target_text(t) : "";
  return fmt::format("{}{}: {:.6g} against {:.6g}", name_of(t.condition), on, t.value, t.threshold);
}

}  // namespace nanscope
