#include "plots/metrics_plot.h"
#include "plots/step_zoom.h"

#include <QFile>
#include <QTextStream>
#include <cmath>

namespace nanscope::gui {

namespace {
// The gradient norm's series (a unity build also sees the slot kGradNorm: another name), and the
// loss scale's (right axis, shown once a run reports one).
constexpr int kGradNormSeries = kGradNormTerm;
constexpr int kLossScaleSeries = kLossScaleTerm;
const QColor kLossScaleColour(117, 112, 179);
// Okabe-Ito colours for the loss terms (told apart with red-green colour vision deficiency), greys
// and dashes for the norms.
const std::array<QColor, 8> kColours = {
    QColor(0, 114, 178),  QColor(0, 158, 115), QColor(230, 159, 0), QColor(204, 121, 167),
    QColor(86, 180, 233), QColor(213, 94, 0),  QColor(0, 0, 0),     QColor(120, 120, 120)};
QString tooltip_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return QString::number(v, 'g', 5);
}
}  // namespace

QColor MetricsPlot::nonfiniteBandColour() {
  return QColor(243, 219, 213);  // the fire red (190, 50, 20) at 18% over the white background
}
QColor MetricsPlot::fireMarkColour() {
  return QColor(190, 50, 20);
}

// The step marks in one layer under the grid and the series: fold starts (grey lines), first fires
// (red lines) and the runs of steps whose loss is not finite (bands), drawn at most once per pixel
// column. The bands are opaque: the raster engine hands each translucent fill of a band's height
// to its thread pool, which made 250 bands cost 11 ms a replot; opaque fills cost 1 ms.
class StepMarks : public QCPLayerable {
 public:
  explicit StepMarks(QCustomPlot* plot) : QCPLayerable(plot, "background") {}
  std::vector<double> fold_starts, fires;
  std::vector<std::pair<int, int>> bad;

 protected:
  void applyDefaultAntialiasingHint(QCPPainter* painter) const override {
    painter->setAntialiasing(false);
  }
  QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
  void draw(QCPPainter* painter) override {
    const QRect r = parentPlot()->axisRect()->rect();
    QCPAxis* x = parentPlot()->xAxis;
    painter->setPen(Qt::NoPen);
    painter->setBrush(MetricsPlot::nonfiniteBandColour());
    int last_right = -1;
    for (const auto& [first, last] : bad) {
      int x0 = static_cast<int>(std::floor(x->coordToPixel(first - 0.5)));
      const int x1 = static_cast<int>(std::ceil(x->coordToPixel(last + 0.5)));
      x0 = std::max(x0, last_right);
      if (x1 <= x0 || x1 < r.left() || x0 > r.right()) continue;  // shaded already, or out of view
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
    lines(fires, QPen(MetricsPlot::fireMarkColour(), 2));
  }
};

QString MetricsPlot::seriesName(int i) {
  if (i < static_cast<int>(kLossTerms.size())) {
    const auto label = kLossTerms[static_cast<std::size_t>(i)].label;
    return QString::fromUtf8(label.data(), static_cast<qsizetype>(label.size()));
  }
  return QString("grad norm %1").arg(kParamGroups[static_cast<std::size_t>(i) - kLossTerms.size()]);
}

double MetricsPlot::valueOf(const StepRow& r, int i) {
  if (i < static_cast<int>(kLossTerms.size()))
    return r.losses.*kLossTerms[static_cast<std::size_t>(i)].member;
  return r.losses.group_norm[static_cast<std::size_t>(i) - kLossTerms.size()];
}

MetricsPlot::MetricsPlot(QWidget* parent) : QCustomPlot(parent) {
  for (int i = 0; i < kSeriesCount; ++i) {
    QCPGraph* g = i < kGradNormSeries ? addGraph() : addGraph(xAxis, yAxis2);
    g->setName(seriesName(i) + (i >= kGradNormSeries ? " (right)" : ""));
    QPen pen(i <= kGradNormSeries ? kColours[static_cast<std::size_t>(i)]
             : i == kLossScaleSeries
                 ? kLossScaleColour
                 : QColor::fromHsv((i - kLossScaleSeries - 1) * 360 / kGroupCount, 120, 150));
    pen.setWidthF(i < kGradNormSeries || i == kLossScaleSeries ? 1.5 : 1.0);
    if (i > kLossScaleSeries) pen.setStyle(Qt::DashLine);
    g->setPen(pen);
    graphs_[static_cast<std::size_t>(i)] = g;
    visible_[static_cast<std::size_t>(i)] =
        // total, c51, norm, and the loss scale (drawn and in the legend once a run reports one)
        i == 0 || i == 1 || i == kGradNormSeries || i == kLossScaleSeries;
    g->setVisible(visible_[static_cast<std::size_t>(i)]);
    if (!visible_[static_cast<std::size_t>(i)]) g->removeFromLegend();
  }
  yAxis2->setVisible(true);
  health_axis_ = axisRect()->addAxis(QCPAxis::atRight);
  health_axis_->setLabel("slot health");
  health_axis_->setVisible(false);
  xAxis->setLabel(
      "global step   (red band: loss not finite, red line: first fire, grey line: fold start)");
  marks_ = new StepMarks(this);
  // The legend beside the plot, never on the data.
  legend->setVisible(true);
  legend->setFont(QFont(font().family(), 7));
  plotLayout()->addElement(0, 1, legend);
  plotLayout()->setColumnStretchFactor(1, 0.001);
  legend->setMargins(QMargins(4, 4, 4, 4));
  auto text = [this](double x, double y, Qt::Alignment a) {
    auto* t = new QCPItemText(this);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setCoords(x, y);
    t->setPositionAlignment(a);
    t->setClipToAxisRect(true);
    return t;
  };
  empty_ = text(0.5, 0.5, Qt::AlignCenter);
  empty_->setText("no data yet: step (F10) or run (F5)");
  empty_->setColor(QColor(90, 90, 90));
  hover_ = text(0.01, 0.02, Qt::AlignLeft | Qt::AlignTop);
  hover_->setBrush(QColor(255, 255, 255, 220));
  hover_->setPadding(QMargins(4, 2, 4, 2));
  hover_->setFont(QFont(font().family(), 8));
  hover_->setVisible(false);
  hover_line_ = new QCPItemStraightLine(this);
  hover_line_->setPen(QPen(QColor(60, 60, 60), 1, Qt::DotLine));
  hover_line_->setVisible(false);
  setMouseTracking(true);
  connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
    if (setting_range_) return;
    const double n = std::max<double>(1, view_ ? static_cast<double>(view_->steps.size()) : 1);
    QCPRange r = xAxis->range();
    const double width = std::clamp(r.size(), std::min(n, 3.0), n);
    const double lo = std::clamp(r.lower, -0.5, n - 0.5 - width);
    setting_range_ = true;
    xAxis->setRange(lo, lo + width);
    setting_range_ = false;
  });
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
  for (auto& s : series_) s.clear();
  for (auto& h : health_) {
    h->series.clear();
    h->extent = Extent{};
    h->shown = 0;
  }
  extent_.fill(Extent{});
  shown_steps_ = shown_events_ = 0;
  fitted_ = true;
}

std::vector<std::pair<int, int>> MetricsPlot::nonfiniteRanges() const {
  return marks_->bad;
}

std::vector<int> MetricsPlot::fireMarks() const {
  return std::vector<int>(marks_->fires.begin(), marks_->fires.end());
}

void MetricsPlot::setEmptyHint(const QString& text) {
  if (empty_->text() == text) return;
  empty_->setText(text);
  replot(rpQueuedReplot);
}

QString MetricsPlot::emptyHint() const {
  return empty_->text();
}

bool MetricsPlot::showsEmptyState() const {
  return empty_->visible();
}

void MetricsPlot::setSeriesVisible(int i, bool on) {
  visible_[static_cast<std::size_t>(i)] = on;
  QCPGraph* g = graphs_[static_cast<std::size_t>(i)];
  g->setVisible(on);
  if (on)
    g->addToLegend();
  else
    g->removeFromLegend();
  refresh(false);
}

void MetricsPlot::grow(Extent& e, double v) {
  if (!std::isfinite(v)) return;
  e.lo = e.any ? std::min(e.lo, v) : v;
  e.hi = e.any ? std::max(e.hi, v) : v;
  e.any = true;
  if (v > 0) {
    e.lowest_positive = e.any_positive ? std::min(e.lowest_positive, v) : v;
    e.any_positive = true;
  }
}

double MetricsPlot::healthAt(const HealthGraph& h, std::size_t step) const {
  if (step >= view_->health.size()) return std::numeric_limits<double>::quiet_NaN();
  return health_value(health_at(view_->health[step], h.key.slot), h.key.measure);
}

bool MetricsPlot::addHealthSeries(const HealthSeriesKey& k) {
  const auto shown = healthSeries();
  if (std::find(shown.begin(), shown.end(), k) != shown.end() ||
      static_cast<int>(health_.size()) >= kMaxHealthSeries)
    return false;
  auto h = std::make_unique<HealthGraph>();
  h->key = k;
  h->graph = addGraph(xAxis, health_axis_);
  h->graph->setName(health_series_name(k) + " (health axis)");
  // Hues apart from the loss terms' Okabe-Ito colours, dotted: a health series is never read as a
  // loss.
  QPen pen(QColor::fromHsv(static_cast<int>(health_.size()) * 45 + 20, 220, 170), 1.5,
           Qt::DashDotLine);
  h->graph->setPen(pen);
  health_.push_back(std::move(h));
  health_axis_->setVisible(true);
  refresh(false);
  Q_EMIT healthSeriesChanged();
  return true;
}

void MetricsPlot::removeHealthSeries(const HealthSeriesKey& k) {
  const auto it =
      std::find_if(health_.begin(), health_.end(), [&](const auto& h) { return h->key == k; });
  if (it == health_.end()) return;
  removeGraph((*it)->graph);
  health_.erase(it);
  health_axis_->setVisible(!health_.empty());
  refresh(false);
  Q_EMIT healthSeriesChanged();
}

std::vector<HealthSeriesKey> MetricsPlot::healthSeries() const {
  std::vector<HealthSeriesKey> keys;
  for (const auto& h : health_) keys.push_back(h->key);
  return keys;
}

void MetricsPlot::setLogScale(bool on) {
  for (QCPAxis* a : {yAxis, yAxis2, health_axis_}) {
    a->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on)
      a->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    else
      a->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  }
  refresh(false);
  Q_EMIT logScaleChanged(on);
}

bool MetricsPlot::logScale() const {
  return yAxis->scaleType() == QCPAxis::stLogarithmic;
}

void MetricsPlot::refresh(bool reset) {
  if (reset || !view_ || view_->steps.size() < shown_steps_ || view_->events.size() < shown_events_)
    clearAll();
  empty_->setVisible(!view_ || view_->steps.empty());
  if (!view_) {
    replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const auto& steps = view_->steps;
  for (std::size_t i = shown_steps_; i < steps.size(); ++i) {
    const StepRow& r = steps[i];
    for (int k = 0; k < kSeriesCount; ++k) {
      const double v = valueOf(r, k);
      series_[static_cast<std::size_t>(k)].append(v);
      grow(extent_[static_cast<std::size_t>(k)], v);
    }
    if (i > 0 && r.fold != steps[i - 1].fold)
      marks_->fold_starts.push_back(static_cast<double>(i) - 0.5);
    if (!std::isfinite(r.losses.total)) {  // a run of non-finite steps is one band
      const int g = static_cast<int>(i);
      if (!marks_->bad.empty() && marks_->bad.back().second == g - 1)
        marks_->bad.back().second = g;
      else
        marks_->bad.emplace_back(g, g);
    }
  }
  const bool grew = steps.size() > shown_steps_;
  shown_steps_ = steps.size();
  QVector<double> keys, values;
  for (auto& h : health_) {
    for (; h->shown < steps.size(); ++h->shown) {
      const double v = healthAt(*h, h->shown);
      h->series.append(v);
      grow(h->extent, v);
    }
    h->series.points(keys, values);
    h->graph->setData(keys, values, true);
    h->graph->setScatterStyle(steps.size() <= 200 ? QCPScatterStyle(QCPScatterStyle::ssDisc, 3)
                                                  : QCPScatterStyle(QCPScatterStyle::ssNone));
  }
  for (int k = 0; k < kSeriesCount; ++k) {
    QCPGraph* graph = graphs_[static_cast<std::size_t>(k)];
    if (!visible_[static_cast<std::size_t>(k)]) continue;
    // The legend names what is drawn: a series the run has no value of (an SDK trainer's c51
    // loss) stays out of it until one comes.
    if (extent_[static_cast<std::size_t>(k)].any || steps.empty())
      graph->addToLegend();
    else
      graph->removeFromLegend();
    const DecimatedSeries& series = series_[static_cast<std::size_t>(k)];
    series.points(keys, values);
    graph->setData(keys, values, true);
    // Points as dots while there are few (a single step is still seen), lines alone beyond.
    graph->setScatterStyle(steps.size() <= 200 ? QCPScatterStyle(QCPScatterStyle::ssDisc, 3)
                                               : QCPScatterStyle(QCPScatterStyle::ssNone));
    // A decimated series is a dense min/max envelope: drawn without antialiasing, one pixel wide.
    const bool dense = series.bucket_width() > 1;
    graph->setAntialiased(!dense);
    QPen pen = graph->pen();
    pen.setWidthF(dense || k >= kGradNormSeries ? 1.0 : 1.5);
    graph->setPen(pen);
  }
  // First fires: a line at the step (events name fold and step; the fold's steps are contiguous).
  for (std::size_t k = shown_events_; k < view_->events.size(); ++k) {
    const SnapshotEvent& e = view_->events[k];
    if (e.kind != EventKind::FirstFire) continue;
    const auto [begin, end] = view_->fold_steps(e.fold);
    const std::size_t g = begin + static_cast<std::size_t>(e.step);
    if (g < end) marks_->fires.push_back(static_cast<double>(g));
  }
  shown_events_ = view_->events.size();
  // Every step is on the axis, finite or not: the range is the run's, not the finite points'.
  const double n = static_cast<double>(std::max<std::size_t>(steps.size(), 1));
  setting_range_ = true;
  if (fitted_)
    xAxis->setRange(-0.5, n - 0.5);
  else if (follow_ && grew)
    xAxis->setRange(n - 0.5 - xAxis->range().size(), n - 0.5);
  setting_range_ = false;
  rescaleValues();
  replot(QCustomPlot::rpQueuedReplot);
}

// Both value axes span the visible series' finite values (their positive ones on a log scale).
void MetricsPlot::rescaleValues() {
  const bool log = logScale();
  for (auto [axis, first, last] :
       {std::tuple{yAxis, 0, kGradNormSeries - 1},
        std::tuple{yAxis2, kGradNormSeries, kSeriesCount - 1}, std::tuple{health_axis_, 0, -1}}) {
    bool any = false;
    double lo = 0, hi = 0;
    for (int k = first; k <= last; ++k) {
      const Extent& e = extent_[static_cast<std::size_t>(k)];
      if (!visible_[static_cast<std::size_t>(k)] || !(log ? e.any_positive : e.any)) continue;
      const double l = log ? e.lowest_positive : e.lo;
      lo = any ? std::min(lo, l) : l;
      hi = any ? std::max(hi, e.hi) : e.hi;
      any = true;
    }
    if (axis == health_axis_)
      for (const auto& h : health_) {
        const Extent& e = h->extent;
        if (!(log ? e.any_positive : e.any)) continue;
        const double l = log ? e.lowest_positive : e.lo;
        lo = any ? std::min(lo, l) : l;
        hi = any ? std::max(hi, e.hi) : e.hi;
        any = true;
      }
    if (!any)
      axis->setRange(log ? 0.1 : 0, log ? 10 : 1);
    else if (log)
      axis->setRange(lo / 1.3, hi * 1.3);
    else {
      // A single value (or values equal to the print precision) gets room of its own size: a
      // range of 1e-9 around 3.9 would label every tick "3.93535".
      const double pad = hi - lo > 1e-6 * std::max(1.0, std::max(std::abs(lo), std::abs(hi)))
                             ? 0.08 * (hi - lo)
                             : 0.05 * std::max(1.0, std::max(std::abs(lo), std::abs(hi)));
      axis->setRange(axis == yAxis2 ? std::min(0.0, lo) : lo - pad, hi + pad);
    }
  }
}

void MetricsPlot::setStepRange(double first, double last) {
  xAxis->setRange(first, last);
  const double n = static_cast<double>(std::max<std::size_t>(view_ ? view_->steps.size() : 0, 1));
  fitted_ = xAxis->range().lower <= -0.5 && xAxis->range().upper >= n - 0.5;
  replot(QCustomPlot::rpQueuedReplot);
}

void MetricsPlot::zoomToFit() {
  fitted_ = true;
  refresh(false);
}

void MetricsPlot::setFollow(bool on) {
  if (follow_ == on) return;
  follow_ = on;
  refresh(false);
  Q_EMIT followChanged(on);
}

void MetricsPlot::userMovedView() {
  const double n = static_cast<double>(std::max<std::size_t>(view_ ? view_->steps.size() : 0, 1));
  fitted_ = xAxis->range().lower <= -0.5 && xAxis->range().upper >= n - 0.5;
  if (follow_ && !fitted_) {
    follow_ = false;
    Q_EMIT followChanged(false);
  }
  Q_EMIT stepRangeChangedByUser(xAxis->range().lower, xAxis->range().upper);
}

QString MetricsPlot::readout(int g) const {
  if (!view_ || g < 0 || g >= static_cast<int>(view_->steps.size())) return {};
  const StepRow& r = view_->steps[static_cast<std::size_t>(g)];
  QString t = QString("step %1 (fold %2, step %3)").arg(g).arg(r.fold).arg(r.step);
  for (int k = 0; k < kSeriesCount; ++k)
    if (visible_[static_cast<std::size_t>(k)])
      t += QString("\n%1: %2").arg(seriesName(k), tooltip_number(valueOf(r, k)));
  for (const auto& h : health_)
    t += QString("\n%1: %2")
             .arg(health_series_name(h->key),
                  tooltip_number(healthAt(*h, static_cast<std::size_t>(g))));
  return t;
}

void MetricsPlot::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) {  // a drag pans the steps
    if (dragging_ || std::abs(e->pos().x() - drag_x_) > 3) {
      dragging_ = true;
      const double d = xAxis->pixelToCoord(drag_x_) - xAxis->pixelToCoord(e->pos().x());
      xAxis->setRange(xAxis->range().lower + d, xAxis->range().upper + d);
      drag_x_ = e->pos().x();
      userMovedView();
      replot(QCustomPlot::rpQueuedReplot);
    }
    return;
  }
  const int g = static_cast<int>(std::lround(xAxis->pixelToCoord(e->pos().x())));
  hover_text_ = axisRect()->rect().contains(e->pos()) ? readout(g) : QString();
  hover_->setText(hover_text_);
  hover_->setVisible(!hover_text_.isEmpty());
  hover_line_->setVisible(!hover_text_.isEmpty());
  hover_line_->point1->setCoords(g, 0);
  hover_line_->point2->setCoords(g, 1);
  replot(QCustomPlot::rpQueuedReplot);
}

void MetricsPlot::mousePressEvent(QMouseEvent* e) {
  dragging_ = false;
  drag_x_ = e->pos().x();
  QCustomPlot::mousePressEvent(e);
}

void MetricsPlot::mouseReleaseEvent(QMouseEvent* e) {
  dragging_ = false;
  QCustomPlot::mouseReleaseEvent(e);
}

void MetricsPlot::wheelEvent(QWheelEvent* e) {
  if (e->angleDelta().y() == 0) return;
  xAxis->setRange(wheel_zoomed(xAxis->range(), *xAxis, *e));
  userMovedView();
  replot(QCustomPlot::rpQueuedReplot);
  e->accept();
}

void MetricsPlot::leaveEvent(QEvent* e) {
  hover_->setVisible(false);
  hover_line_->setVisible(false);
  hover_text_.clear();
  replot(QCustomPlot::rpQueuedReplot);
  QCustomPlot::leaveEvent(e);
}

// Every series of every step (not only the visible ones, and the health series added), one row
// per global step; non-finite values as nan, inf and -inf.
bool MetricsPlot::exportCsv(const QString& path) const {
  QFile f(path);
  if (!view_ || !f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  QTextStream out(&f);
  out << "global_step,fold,step";
  for (int k = 0; k < kSeriesCount; ++k) out << ',' << seriesName(k).replace(' ', '_');
  for (const auto& h : health_) out << ',' << health_series_name(h->key);
  out << '\n';
  auto csv = [](double v) {
    if (std::isnan(v)) return QString("nan");
    if (std::isinf(v)) return QString(v > 0 ? "inf" : "-inf");
    return QString::number(v, 'g', 17);
  };
  for (std::size_t g = 0; g < view_->steps.size(); ++g) {
    const StepRow& r = view_->steps[g];
    out << g << ',' << r.fold << ',' << r.step;
    for (int k = 0; k < kSeriesCount; ++k) out << ',' << csv(valueOf(r, k));
    for (const auto& h : health_) out << ',' << csv(healthAt(*h, g));
    out << '\n';
  }
  out.flush();
  return f.error() == QFile::NoError;
}

}  // namespace nanscope::gui
