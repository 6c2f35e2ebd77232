// The grids' colours and glyphs, chosen so that every pair of cell states stays apart for people
// with red-green colour vision deficiency (tests/gui/palette_test.cpp simulates deuteranopia and
// protanopia and asserts a minimum CIEDE2000 difference): clean is a pale blue, the kinds run
// from dark red (NaN) through orange (+Inf) to blue (-Inf), a tripped watch is tan, and a glyph per
// kind (and "!" for a watch) marks cells large enough to hold one, so colour is never the only cue.
#pragma once

#include <QColor>
#include <QString>
#include <vector>

namespace nanscope::gui {

// Cell codes, one colour each in the grids.
enum CellCode : int {
  kCellClean = 0,
  kCellNaN,
  kCellPosInf,
  kCellNegInf,
  kCellMixed,
  kCellWarned,  // checked and clean, where a watch condition tripped (docs/slots.md, "Watches")
  kCellAbsent,
  kCellDeferred,
  kCellDisabled,
  kCellNotRun,
  kCellCodeCount
};

QColor cell_color(int code);
// The glyph drawn on a fired cell ("" for the codes that are not kinds).
QString cell_glyph(int code);
// A colour that reads on top of cell_color(code) (the glyph's and the highlight's pen).
QColor cell_ink(int code);

// Step compare's "jumped" mark: the dashed outline drawn on the grids' cells of the slots that
// jumped (at the compared later step) and the fill of their rows in the compare table.
QColor jump_outline();
QColor jump_fill();

// The magnitude view's continuous scale, low to high: viridis (perceptually uniform and apart
// for red-green colour vision deficiency), sampled at evenly spaced stops.
const std::vector<QColor>& magnitude_stops();
// The magnitude view's colour for a cell with no measurement (not checked at that step).
QColor magnitude_unmeasured();

}  // namespace nanscope::gui
