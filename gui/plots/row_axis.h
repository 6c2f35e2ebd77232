// The rows' vertical axis that the grids beside one another share (the fold grid, the step grid,
// the magnitude view): each grid's plot area starts and ends at the same distance from its top and
// bottom edges, fixed from the fonts rather than left to each plot's own margins, so that two grids
// of one height put every row at the same height on screen.
#pragma once

#include "plots/qcp.h"

namespace nanscope::gui {

// Fixes the top and bottom margins of `element` (a plot's axis rect, or the colour scale beside
// one) for a plot whose bottom axis has tick labels and a one-line label.
void share_row_axis_margins(QCPLayoutElement& element, const QCPAxis& bottom_axis);

}  // namespace nanscope::gui
