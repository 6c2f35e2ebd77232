#include "plots/histogram_plot.h"

#include <cmath>

namespace nanscope::gui {

HistogramPlot::HistogramPlot(QWidget* parent) : QCustomPlot(parent) {
  bars_ = new QCPBars(xAxis, yAxis);
  bars_->setBrush(QColor(25, 118, 210, 160));
  bars_->setPen(Qt::NoPen);
  xAxis->setLabel("finite values");
  yAxis->setLabel("count");
  // Few ticks with 3 significant digits: small values' long labels never overprint.
  xAxis->setNumberFormat("g");
  xAxis->setNumberPrecision(3);
  xAxis->ticker()->setTickCount(4);
  empty_ = new QCPItemText(this);
  empty_->position->setType(QCPItemPosition::ptAxisRectRatio);
  empty_->position->setCoords(0.5, 0.5);
  empty_->setText("no finite values");
  empty_->setVisible(false);
}

void HistogramPlot::setStats(const BufferStats& s) {
  QVector<double> x, y;
  for (std::size_t b = 0; b < s.histogram.size(); ++b) {
    x.push_back(0.5 * (s.histogram_edges[b] + s.histogram_edges[b + 1]));
    y.push_back(static_cast<double>(s.histogram[b]));
  }
  bars_->setWidth(s.histogram.empty() ? 1 : (s.histogram_edges[1] - s.histogram_edges[0]));
  bars_->setData(x, y);
  const bool none = s.histogram.empty();
  empty_->setText(s.slot < 0                                     ? "no slot selected"
                  : s.source == BufferStats::Source::None        ? "no buffer of this cell"
                  : s.source == BufferStats::Source::Recomputing ? "recomputing..."
                  : !s.computed                                  ? "not computed yet"
                                                                 : "no finite values");
  empty_->setVisible(none);
  if (none) {  // axes of their own, not the last buffer's
    xAxis->setRange(0, 1);
    yAxis->setRange(0, 1);
  } else {
    rescaleAxes();
    yAxis->setRangeLower(0);
  }
  replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace nanscope::gui
