// What the magnitude view draws for a slot at a step: log10 of its finite absolute maximum
// (docs/gui.md, "Magnitude view").
#pragma once

#include <cmath>
#include <limits>

#include "core/slot_health.h"

namespace nanscope::gui {

// NaN: not measured at that step; -Inf: every value is 0; +Inf: the buffer holds non-finite
// values (drawn in the band above the scale: it is past anything finite).
inline double magnitude_of(const HealthRow& r) {
  if (!measured(r)) return std::numeric_limits<double>::quiet_NaN();
  // A buffer with non-finite values is drawn as such, whatever its finite values are: a mostly-NaN
  // buffer whose few finite values are 0 is not "small".
  if (r[kHealthNonfinite] > 0) return std::numeric_limits<double>::infinity();
  const double m = abs_max(r);
  if (std::isnan(m)) return std::numeric_limits<double>::infinity();
  return m > 0 ? std::log10(m) : -std::numeric_limits<double>::infinity();
}

}  // namespace nanscope::gui
