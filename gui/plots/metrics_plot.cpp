#include "plots/metrics_plot.h"

#include <cmath>

namespace nanscope::gui {

MetricsPlot::MetricsPlot(QWidget* parent) : QCustomPlot(parent) {
  loss_ = addGraph();
  loss_->setName("total loss");
  loss_->setPen(QPen(QColor(25, 118, 210), 1.5));
  c51_ = addGraph();
  c51_->setName("c51");
  c51_->setPen(QPen(QColor(56, 142, 60), 1.5));
  grad_ = addGraph(xAxis, yAxis2);
  grad_->setName("grad norm (right)");
  grad_->setPen(QPen(QColor(120, 120, 120), 1));
  yAxis2->setVisible(true);
  xAxis->setLabel("global step");
  legend->setVisible(true);
  legend->setFont(QFont(font().family(), 7));
  axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}

void MetricsPlot::setSnapshot(const SnapshotPtr& s) {
  for (auto* m : marks_) removeItem(m);
  marks_.clear();
  QVector<double> x, loss, c51, grad;
  for (std::size_t i = 0; i < s->loss.size(); ++i) {
    x.push_back(static_cast<double>(i));
    // Non-finite losses leave gaps; the fire markers say why.
    loss.push_back(std::isfinite(s->loss[i]) ? s->loss[i] : qQNaN());
    c51.push_back(std::isfinite(s->c51[i]) ? s->c51[i] : qQNaN());
    grad.push_back(std::isfinite(s->grad_norm[i]) ? s->grad_norm[i] : qQNaN());
  }
  loss_->setData(x, loss, true);
  c51_->setData(x, c51, true);
  grad_->setData(x, grad, true);
  for (std::size_t i = 1; i < s->step_fold.size(); ++i)
    if (s->step_fold[i] != s->step_fold[i - 1]) {  // fold boundary
      auto* l = new QCPItemStraightLine(this);
      l->point1->setCoords(i - 0.5, 0);
      l->point2->setCoords(i - 0.5, 1);
      l->setPen(QPen(Qt::darkGray, 1, Qt::DashLine));
      marks_.push_back(l);
    }
  for (const auto& e : s->events)
    if (e.kind == "first_fire") {
      std::size_t g = 0;
      while (g < s->step_fold.size() && !(s->step_fold[g] == e.fold && s->step_in_fold[g] == e.step)) ++g;
      auto* l = new QCPItemStraightLine(this);
      l->point1->setCoords(static_cast<double>(g), 0);
      l->point2->setCoords(static_cast<double>(g), 1);
      l->setPen(QPen(QColor(211, 47, 47, 160), 1.5));
      marks_.push_back(l);
    }
  rescaleAxes(true);
  yAxis->scaleRange(1.1, yAxis->range().center());  // keep the curves off the frame
  replot(QCustomPlot::rpQueuedReplot);
}

HistogramPlot::HistogramPlot(QWidget* parent) : QCustomPlot(parent) {
  bars_ = new QCPBars(xAxis, yAxis);
  bars_->setBrush(QColor(25, 118, 210, 160));
  bars_->setPen(Qt::NoPen);
  xAxis->setLabel("finite values");
  yAxis->setLabel("count");
}

void HistogramPlot::setStats(const BufferStats& s) {
  QVector<double> x, y;
  for (std::size_t b = 0; b < s.histogram.size(); ++b) {
    x.push_back(0.5 * (s.histogram_edges[b] + s.histogram_edges[b + 1]));
    y.push_back(static_cast<double>(s.histogram[b]));
  }
  bars_->setWidth(s.histogram.empty() ? 1 : (s.histogram_edges[1] - s.histogram_edges[0]));
  bars_->setData(x, y);
  rescaleAxes();
  replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace nanscope::gui
