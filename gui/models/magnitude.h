// What the magnitude view draws for a slot at a step: log10 of its finite absolute maximum
// (docs/gui.md, "Magnitude view").
#pragma once

#include <cmath>
#include <limits>

#include "core/slot_health.h"

namespace nanscope::gui {

// NaN: not measured at that step; -Inf: every finite value is 0; +Inf: no finite value at all
// (drawn at the top of the scale: it is past anything finite).
inline double magnitude_of(const HealthRow& r) {
  if (!measured(r)) return std::numeric_limits<double>::quiet_NaN();
  const double m = abs_max(r);
  if (std::isnan(m)) return std::numeric_limits<double>::infinity();
  return m > 0 ? std::log10(m) : -std::numeric_limits<double>::infinity();
}

}  // namespace nanscope::gui
