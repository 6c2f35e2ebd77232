#include "style/cell_palette.h"

namespace nanscope::gui {

QColor cell_color(int code) {
  switch (code) {
    case kCellClean:
      return QColor(150, 195, 225);  // pale blue
    case kCellNaN:
      return QColor(190, 50, 20);  // dark red
    case kCellPosInf:
      return QColor(235, 150, 20);  // orange
    case kCellNegInf:
      return QColor(0, 90, 181);  // blue
    case kCellMixed:
      return QColor(204, 121, 167);  // reddish purple
    case kCellWarned:
      return QColor(184, 144,
                    120);  // tan: the farthest light colour from the rest, in every vision
    case kCellAbsent:
      return QColor(190, 190, 190);  // light grey, seen against the white of "not run"
    case kCellDeferred:
      return QColor(245, 236, 100);  // yellow
    case kCellDisabled:
      return QColor(95, 95, 95);  // dark grey
    default:
      return QColor(255, 255, 255);  // not run
  }
}

QString cell_glyph(int code) {
  switch (code) {
    case kCellNaN:
      return QStringLiteral("N");
    case kCellPosInf:
      return QStringLiteral("+");
    case kCellNegInf:
      return QStringLiteral("\u2212");  // minus sign
    case kCellMixed:
      return QStringLiteral("*");
    case kCellWarned:
      return QStringLiteral("!");
    default:
      return {};
  }
}

QColor cell_ink(int code) {
  const QColor c = cell_color(code);
  // Relative luminance decides black or white ink (WCAG's rule of thumb).
  return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF() > 0.45 ? Qt::black
                                                                             : Qt::white;
}

QColor jump_outline() {
  return QColor(230, 0, 230);  // magenta: in no cell colour and no magnitude colour
}
QColor jump_fill() {
  return QColor(245, 200, 245);
}

const std::vector<QColor>& magnitude_stops() {
  static const std::vector<QColor> stops = {
      QColor(68, 1, 84),   QColor(59, 82, 139),  QColor(33, 145, 140),
      QColor(94, 201, 98), QColor(253, 231, 37),
  };
  return stops;
}
QColor magnitude_unmeasured() {
  return QColor(255, 255, 255);  // as "not run" in the state view
}

}  // namespace nanscope::gui
