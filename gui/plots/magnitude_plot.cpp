#include "plots/magnitude_plot.h"

#include "plots/row_axis.h"

#include <QToolTip>
#include <cmath>

#include "models/magnitude.h"
#include "plots/cell_outlines.h"
#include "plots/step_zoom.h"

namespace nanscope::gui {

namespace {
// Viridis over [0, finite_top] of the bar, then the state view's NaN colour above it: the band of
// the cells with no finite value at all.
QCPColorGradient magnitude_gradient(double finite_top = 1) {
  QCPColorGradient g;
  g.clearColorStops();
  const auto& stops = magnitude_stops();
  for (std::size_t i = 0; i < stops.size(); ++i)
    g.setColorStopAt(finite_top * static_cast<double>(i) / static_cast<double>(stops.size() - 1),
                     stops[i]);
  if (finite_top < 1) {
    g.setColorStopAt(std::nextafter(finite_top, 1.0), cell_color(kCellNaN));
    g.setColorStopAt(1, cell_color(kCellNaN));
  }
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(512);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(magnitude_unmeasured());
  return g;
}

// The larger of two drawn values, NaN (not measured) losing to anything measured.
double pooled(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::max(a, b);
}
}  // namespace

MagnitudePlot::MagnitudePlot(QWidget* parent) : QCustomPlot(parent) {
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);
  map_->setGradient(magnitude_gradient());
  scale_ = new QCPColorScale(this);
  plotLayout()->addElement(0, 1, scale_);
  scale_->setType(QCPAxis::atRight);
  scale_->setGradient(magnitude_gradient());
  scale_->axis()->setLabel("log10 max |value| (all finite)");
  // The bar is the finite scale alone: the map's non-finite band above it is not a number, and the
  // key under the grids names its colour. So the two are not linked (a linked scale shares the
  // map's gradient and range).
  // The scale's bar spans the grid's rows exactly, which sit where the other grids' rows do.
  share_row_axis_margins(*axisRect(), *xAxis);
  share_row_axis_margins(*scale_, *xAxis);
  yAxis->setRangeReversed(true);
  yAxis->setRange(-0.5, shown_slot_count() - 0.5);
  yAxis->setTickLabels(false);
  yAxis->grid()->setVisible(false);
  xAxis->grid()->setVisible(false);
  QSharedPointer<QCPAxisTickerFixed> columns(new QCPAxisTickerFixed);
  columns->setTickStep(1.0);
  columns->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  xAxis->setTicker(columns);
  entry_frames_ = std::make_unique<CellOutlines>(this, entry_pen());
  jump_marks_ = std::make_unique<CellOutlines>(this, jump_pen());
  sel_cell_ = new QCPItemRect(this);
  sel_cell_->setPen(QPen(QColor(240, 240, 240), 2, Qt::DashLine));
  sel_cell_->setBrush(Qt::NoBrush);
  sel_cell_->setClipToAxisRect(true);
  sel_cell_->setVisible(false);
  setMouseTracking(true);
}

MagnitudePlot::~MagnitudePlot() = default;

void MagnitudePlot::setFold(int fold) {
  if (fold != fold_) cached_ = 0;
  fold_ = fold;
  refresh();
}

void MagnitudePlot::resetCache() {
  cached_ = 0;
}

double MagnitudePlot::value(int slot, int column) const {
  // columns_ is as of the last refresh; the picture may have been replaced since.
  if (!view_ || column < 0 || column >= columns_ || slot < 0 || slot >= shown_slot_count() ||
      first_ + static_cast<std::size_t>(column) >= view_->health.size())
    return std::numeric_limits<double>::quiet_NaN();
  return magnitude_of(health_at(view_->health[first_ + static_cast<std::size_t>(column)], slot));
}

QCPRange MagnitudePlot::barRange() const {
  return scale_->dataRange();
}

QString MagnitudePlot::nonfiniteText(int slot, int column) const {
  const HealthRow& r = health_at(view_->health[first_ + static_cast<std::size_t>(column)], slot);
  const double m = abs_max(r);
  return QString("%1 non-finite value(s); %2")
      .arg(static_cast<qint64>(r[kHealthNonfinite]))
      .arg(std::isnan(m) ? QString("nothing finite")
                         : QString("max |finite value| %1").arg(m, 0, 'g', 4));
}

QString MagnitudePlot::marginText(int slot, int column) const {
  const HealthRow& r = health_at(view_->health[first_ + static_cast<std::size_t>(column)], slot);
  const double bits = r[kHealthOverflowMargin];
  if (std::isnan(bits)) return {};
  return QString("\nmargin to overflow: %1 bits (x%2) below its type's largest finite value")
      .arg(bits, 0, 'f', 1)
      .arg(std::exp2(bits), 0, 'g', 3);
}

// Where a value is drawn on the bar: a finite magnitude clamped into the scale, "nothing finite"
// in the band above it, NaN (not measured) as it is.
double MagnitudePlot::drawnAt(double v) const {
  if (std::isnan(v)) return v;
  if (std::isinf(v) && v > 0) return scale_range_.upper + nothing_finite_band_ / 2;
  return std::clamp(v, scale_range_.lower, scale_range_.upper);
}

QColor MagnitudePlot::colourOf(double v) const {
  if (std::isnan(v)) return magnitude_unmeasured();
  const double at = drawnAt(v);
  QRgb rgb;
  map_->gradient().colorize(&at, map_->dataRange(), &rgb, 1);
  return QColor(rgb);
}

// The scale spans the fold's finite magnitudes (whole decades, at least one), so a fold that
// creeps from 1e2 to 1e30 uses the whole scale. Steps are only ever appended to a fold, so the
// magnitudes are kept per step (row-major in dataflow order) and only the new steps are read: an
// update costs the steps it adds, plus the visible map while the view is shown.
void MagnitudePlot::refresh() {
  columns_ = 0;
  if (view_) {
    const auto [begin, end] = view_->fold_steps(fold_);
    first_ = begin;
    columns_ = static_cast<int>(end - begin);
  }
  if (columns_ < cached_) cached_ = 0;  // a new picture
  if (cached_ == 0) {
    mags_.clear();
    finite_lo_ = INFINITY;
    finite_hi_ = -INFINITY;
  }
  mags_.resize(static_cast<std::size_t>(columns_) * static_cast<std::size_t>(shown_slot_count()));
  for (int c = cached_; c < columns_; ++c)
    for (int row = 0; row < shown_slot_count(); ++row) {
      const double v = value(dataflow_order()[static_cast<std::size_t>(row)], c);
      mags_[static_cast<std::size_t>(c) * static_cast<std::size_t>(shown_slot_count()) +
            static_cast<std::size_t>(row)] = static_cast<float>(v);
      if (std::isfinite(v)) {
        finite_lo_ = std::min(finite_lo_, v);
        finite_hi_ = std::max(finite_hi_, v);
      }
    }
  cached_ = columns_;
  double lo = finite_lo_, hi = finite_hi_;
  if (lo > hi) lo = hi = 0;
  lo = std::floor(lo);
  hi = std::max(lo + 1, std::ceil(hi));
  if (QCPRange(lo, hi) != scale_range_ || !gradient_set_) {
    scale_range_ = QCPRange(lo, hi);
    nothing_finite_band_ = std::max(1.0, std::round((hi - lo) / 12));
    const QCPRange bar(lo, hi + nothing_finite_band_);
    const QCPColorGradient g = magnitude_gradient((hi - lo) / bar.size());
    map_->setGradient(g);
    map_->setDataRange(bar);
    scale_->setGradient(magnitude_gradient());
    scale_->setDataRange(scale_range_);
    gradient_set_ = true;
  }
  entry_frames_->place(entries_, columns_);
  jump_marks_->place(marks_, columns_);
  placeSelection();
  rebuildMap();
}

void MagnitudePlot::setColumnRange(double first, double last) {
  xAxis->setRange(first, last);
  rebuildMap();
}

void MagnitudePlot::setEntries(const std::vector<std::pair<int, int>>& cells) {
  entries_ = cells;
  entry_frames_->place(entries_, columns_);
  replot(rpQueuedReplot);
}

void MagnitudePlot::setMarks(const std::vector<std::pair<int, int>>& cells) {
  marks_ = cells;
  jump_marks_->place(marks_, columns_);
  replot(rpQueuedReplot);
}

void MagnitudePlot::setSelection(int slot, int column) {
  sel_slot_ = slot;
  sel_column_ = column;
  placeSelection();
  replot(rpQueuedReplot);
}

void MagnitudePlot::placeSelection() {
  const bool on = sel_slot_ >= 0 && sel_column_ >= 0 && sel_column_ < columns_;
  sel_cell_->setVisible(on);
  if (!on) return;
  const double row = row_of_slot(sel_slot_);
  sel_cell_->topLeft->setCoords(sel_column_ - 0.5, row - 0.5);
  sel_cell_->bottomRight->setCoords(sel_column_ + 0.5, row + 0.5);
}

// A map cell per visible column, or per pixel column pooling (largest value) the columns under it.
// Hidden, nothing is drawn: the map is built when the view is shown.
void MagnitudePlot::rebuildMap() {
  if (!isVisible()) {
    map_stale_ = true;
    return;
  }
  map_stale_ = false;
  const QCPRange r = xAxis->range();
  const int last_column = std::max(0, columns_ - 1);
  const int first = std::clamp(static_cast<int>(std::floor(r.lower + 0.5)), 0, last_column);
  const int last = std::clamp(static_cast<int>(std::ceil(r.upper - 0.5)), 0, last_column);
  const int visible = columns_ == 0 ? 0 : last - first + 1;
  const int bins = std::max(1, std::min(visible, std::max(1, axisRect()->width())));
  const double per_bin = visible > 0 ? static_cast<double>(visible) / bins : 1;
  yAxis->setRange(-0.5, shown_slot_count() - 0.5);  // the rows of the shown table
  // Two map cells at least, so that a single column still has a width.
  const int cells = std::max(2, bins);
  map_->data()->setSize(cells, shown_slot_count());
  const double half = per_bin / 2;
  if (bins == 1)
    map_->data()->setRange(QCPRange(first - 0.5 + half / 2, last + 0.5 - half / 2),
                           QCPRange(0, shown_slot_count() - 1));
  else
    map_->data()->setRange(QCPRange(first - 0.5 + half, last + 0.5 - half),
                           QCPRange(0, shown_slot_count() - 1));
  for (int b = 0; b < cells; ++b) {
    const int bin = std::min(b, bins - 1);
    const int c0 = first + static_cast<int>(bin * per_bin);
    const int c1 = std::min(last, std::max(c0, first + static_cast<int>((bin + 1) * per_bin) - 1));
    for (int row = 0; row < shown_slot_count(); ++row) {
      double v = std::numeric_limits<double>::quiet_NaN();
      if (visible > 0)
        for (int c = c0; c <= c1; ++c)
          v = pooled(
              v, mags_[static_cast<std::size_t>(c) * static_cast<std::size_t>(shown_slot_count()) +
                       static_cast<std::size_t>(row)]);
      map_->data()->setCell(b, row, drawnAt(v));
    }
  }
  replot(rpQueuedReplot);
}

bool MagnitudePlot::cellAt(const QPoint& pos, int& row, int& column) const {
  column = static_cast<int>(std::lround(xAxis->pixelToCoord(pos.x())));
  row = static_cast<int>(std::lround(yAxis->pixelToCoord(pos.y())));
  return axisRect()->rect().contains(pos) && row >= 0 && row < shown_slot_count() && column >= 0 &&
         column < columns_;
}

void MagnitudePlot::mouseMoveEvent(QMouseEvent* e) {
  int row, column;
  if (cellAt(e->pos(), row, column)) {
    const int slot = dataflow_order()[static_cast<std::size_t>(row)];
    const double v = value(slot, column);
    QString what;
    if (std::isnan(v))
      what = "not measured";
    else if (std::isinf(v) && v > 0)
      what = nonfiniteText(slot, column);
    else if (std::isinf(v))
      what = "every value 0";
    else
      what = QString("max |finite value| %1 (log10 %2)%3")
                 .arg(std::pow(10.0, v), 0, 'g', 4)
                 .arg(v, 0, 'f', 2)
                 .arg(marginText(slot, column));
    QToolTip::showText(e->globalPosition().toPoint(),
                       QString("slot %1 %2\nfold %3, step %4: %5")
                           .arg(slot)
                           .arg(QString::fromUtf8(shown_slot(slot).name.data()))
                           .arg(fold_)
                           .arg(column)
                           .arg(what),
                       this);
  }
  QCustomPlot::mouseMoveEvent(e);
}

void MagnitudePlot::mouseReleaseEvent(QMouseEvent* e) {
  int row, column;
  if (cellAt(e->pos(), row, column))
    Q_EMIT cellClicked(dataflow_order()[static_cast<std::size_t>(row)], column);
  QCustomPlot::mouseReleaseEvent(e);
}

void MagnitudePlot::wheelEvent(QWheelEvent* e) {
  if (e->angleDelta().y() == 0) return;
  const QCPRange r = wheel_zoomed(xAxis->range(), *xAxis, *e);
  Q_EMIT columnRangeRequested(r.lower, r.upper);
  e->accept();
}

void MagnitudePlot::showEvent(QShowEvent* e) {
  QCustomPlot::showEvent(e);
  if (map_stale_) rebuildMap();
}

void MagnitudePlot::resizeEvent(QResizeEvent* e) {
  QCustomPlot::resizeEvent(e);
  rebuildMap();
}

}  // namespace nanscope::gui
