// The steps' zoom, shared by the grids and the metrics: the wheel zooms the x range around the
// pointer (up zooms in, by 0.8 a notch), keeping the step under the pointer where it is.
#pragma once

#include <cmath>

#include "plots/qcp.h"

namespace nanscope::gui {

// The x range after `e`, or `range` itself for a wheel event without vertical notches.
inline QCPRange wheel_zoomed(const QCPRange& range, const QCPAxis& axis, const QWheelEvent& e) {
  const double notches = e.angleDelta().y() / 120.0;
  if (notches == 0) return range;
  const double at = axis.pixelToCoord(e.position().x());
  const double factor = std::pow(0.8, notches);
  return QCPRange(at - (at - range.lower) * factor, at + (range.upper - at) * factor);
}

}  // namespace nanscope::gui
