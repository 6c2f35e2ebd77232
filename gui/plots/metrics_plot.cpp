#include "plots/metrics_plot.h"

#include <cmath>

namespace nanscope::gui {

// The step marks in one layer: fold starts (grey lines), first fires (red lines) and the runs of
// steps whose loss is not finite (red bands), drawn at most once per pixel column.
class StepMarks : public QCPLayerable {
 public:
  explicit StepMarks(QCustomPlot* plot) : QCPLayerable(plot, "main") {}
  std::vector<double> fold_starts, fires;
  std::vector<std::pair<int, int>> bad;

 protected:
  void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
  QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
  void draw(QCPPainter* painter) override {
    const QRect r = parentPlot()->axisRect()->rect();
    QCPAxis* x = parentPlot()->xAxis;
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(211, 47, 47, 45));
    int last_right = -1;
    for (const auto& [first, last] : bad) {
      int x0 = static_cast<int>(std::floor(x->coordToPixel(first - 0.5)));
      const int x1 = static_cast<int>(std::ceil(x->coordToPixel(last + 0.5)));
      x0 = std::max(x0, last_right);
      if (x1 <= x0) continue;  // within a pixel already shaded
      painter->drawRect(QRect(x0, r.top(), std::max(1, x1 - x0), r.height()));
      last_right = x1;
    }
    auto lines = [&](const std::vector<double>& at, const QPen& pen) {
      painter->setPen(pen);
      int last_px = std::numeric_limits<int>::min();
      for (double v : at) {
        const int px = static_cast<int>(std::lround(x->coordToPixel(v)));
        if (px == last_px || px < r.left() || px > r.right()) continue;
        painter->drawLine(QLine(px, r.top(), px, r.bottom()));
        last_px = px;
      }
    };
    // Solid pens: a dashed pen costs the raster engine far more per line.
    lines(fold_starts, QPen(QColor(150, 150, 150), 1));
    lines(fires, QPen(QColor(211, 47, 47), 2));
  }
};

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
  xAxis->setLabel("global step   (red band: loss not finite, red line: first fire, grey line: fold start)");
  marks_ = new StepMarks(this);
  // The legend beside the plot, never on the data.
  legend->setVisible(true);
  legend->setFont(QFont(font().family(), 7));
  plotLayout()->addElement(0, 1, legend);
  plotLayout()->setColumnStretchFactor(1, 0.001);
  legend->setMargins(QMargins(4, 4, 4, 4));
  clearAll();
}

void MetricsPlot::setView(const Snapshot* view) {
  view_ = view;
  refresh(true);
}

void MetricsPlot::clearAll() {
  marks_->fold_starts.clear();
  marks_->fires.clear();
  marks_->bad.clear();
  for (DecimatedSeries* s : {&loss_series_, &c51_series_, &grad_series_}) s->clear();
  shown_steps_ = shown_events_ = 0;
  ymin_ = ymax_ = gmax_ = 0;
  any_finite_ = false;
}

std::vector<std::pair<int, int>> MetricsPlot::nonfiniteRanges() const { return marks_->bad; }

std::vector<int> MetricsPlot::fireMarks() const {
  return std::vector<int>(marks_->fires.begin(), marks_->fires.end());
}

void MetricsPlot::refresh(bool reset) {
  if (reset || !view_ || view_->steps.size() < shown_steps_ || view_->events.size() < shown_events_) clearAll();
  if (!view_) {
    replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const auto& steps = view_->steps;
  for (std::size_t i = shown_steps_; i < steps.size(); ++i) {
    const StepRow& r = steps[i];
    loss_series_.append(r.loss);
    c51_series_.append(r.c51);
    grad_series_.append(r.grad_norm);
    for (double v : {r.loss, r.c51})
      if (std::isfinite(v)) {
        ymin_ = any_finite_ ? std::min(ymin_, v) : v;
        ymax_ = any_finite_ ? std::max(ymax_, v) : v;
        any_finite_ = true;
      }
    if (std::isfinite(r.grad_norm)) gmax_ = std::max(gmax_, r.grad_norm);
    if (i > 0 && r.fold != steps[i - 1].fold) marks_->fold_starts.push_back(static_cast<double>(i) - 0.5);
    if (!std::isfinite(r.loss)) {  // a run of non-finite steps is one band
      const int g = static_cast<int>(i);
      if (!marks_->bad.empty() && marks_->bad.back().second == g - 1) marks_->bad.back().second = g;
      else marks_->bad.emplace_back(g, g);
    }
  }
  shown_steps_ = steps.size();
  QVector<double> keys, values;
  for (auto [graph, series] : {std::pair{loss_, &loss_series_}, {c51_, &c51_series_}, {grad_, &grad_series_}}) {
    series->points(keys, values);
    graph->setData(keys, values, true);
    // Points as dots while there are few (a single step is still seen), lines alone beyond.
    graph->setScatterStyle(steps.size() <= 200 ? QCPScatterStyle(QCPScatterStyle::ssDisc, 3)
                                               : QCPScatterStyle(QCPScatterStyle::ssNone));
    // A decimated series is a dense min/max envelope: drawn without antialiasing, one pixel wide.
    const bool dense = series->bucket_width() > 1;
    graph->setAntialiased(!dense);
    QPen pen = graph->pen();
    pen.setWidthF(dense ? 1.0 : (graph == grad_ ? 1.0 : 1.5));
    graph->setPen(pen);
  }
  // First fires: a line at the step (events name fold and step; the fold's steps are contiguous).
  for (std::size_t k = shown_events_; k < view_->events.size(); ++k) {
    const SnapshotEvent& e = view_->events[k];
    if (e.kind != "first_fire") continue;
    const auto [begin, end] = view_->fold_steps(e.fold);
    const std::size_t g = begin + static_cast<std::size_t>(e.step);
    if (g < end) marks_->fires.push_back(static_cast<double>(g));
  }
  shown_events_ = view_->events.size();
  // Every step is on the axis, finite or not: the range is the run's, not the finite points'.
  const double n = static_cast<double>(std::max<std::size_t>(steps.size(), 1));
  xAxis->setRange(-0.5, n - 0.5);
  const double pad = any_finite_ ? std::max(1e-9, 0.08 * (ymax_ - ymin_)) : 1;
  yAxis->setRange(any_finite_ ? ymin_ - pad : 0, any_finite_ ? ymax_ + pad : 1);
  yAxis2->setRange(0, gmax_ > 0 ? gmax_ * 1.08 : 1);
  replot(QCustomPlot::rpQueuedReplot);
}

HistogramPlot::HistogramPlot(QWidget* parent) : QCustomPlot(parent) {
  bars_ = new QCPBars(xAxis, yAxis);
  bars_->setBrush(QColor(25, 118, 210, 160));
  bars_->setPen(Qt::NoPen);
  xAxis->setLabel("finite values");
  yAxis->setLabel("count");
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
  empty_->setText(!s.computed ? "not computed yet" : "no finite values");
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
