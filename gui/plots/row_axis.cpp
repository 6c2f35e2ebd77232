#include "plots/row_axis.h"

#include <QFontMetrics>

namespace nanscope::gui {

void share_row_axis_margins(QCPLayoutElement& element, const QCPAxis& bottom_axis) {
  const int tick_labels = QFontMetrics(bottom_axis.tickLabelFont()).height();
  const int label = QFontMetrics(bottom_axis.labelFont()).height();
  // Half a row label above the first row; under the last, the ticks, their labels and the axis's
  // label with QCustomPlot's paddings.
  const int top = tick_labels / 2 + 4;
  const int bottom = bottom_axis.tickLengthOut() + bottom_axis.tickLabelPadding() + tick_labels +
                     bottom_axis.labelPadding() + label + 8;
  element.setAutoMargins(element.autoMargins() & ~(QCP::msTop | QCP::msBottom));
  const QMargins m = element.margins();
  element.setMargins(QMargins(m.left(), top, m.right(), bottom));
}

}  // namespace nanscope::gui
