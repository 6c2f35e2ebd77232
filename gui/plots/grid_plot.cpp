#include "plots/grid_plot.h"

#include "plots/row_axis.h"

#include "plots/cell_outlines.h"
#include "plots/step_zoom.h"

#include <QFontMetrics>
#include <QKeyEvent>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "models/slot_label.h"

namespace nanscope::gui {

namespace {
// Fewer columns than this are never zoomed into further (a cell is at most a tenth of the plot).
constexpr double kMinVisibleColumns = 3;
// Glyphs are drawn on cells at least this many pixels wide and high.
constexpr double kGlyphCellPx = 11;
}  // namespace

// Events (fired or warned cells) on columns narrower than kMinEventPx: each is drawn again at
// kMinEventPx wide, inside the plot, so that one step's fire or watch trip is seen at any zoom.
class NarrowEvents : public QCPLayerable {
 public:
  explicit NarrowEvents(GridPlot* plot) : QCPLayerable(plot, "main"), plot_(plot) {}
  static constexpr int kMinEventPx = 3;
  int drawn = 0;  // events widened in the last draw (tests)

 protected:
  void applyDefaultAntialiasingHint(QCPPainter* painter) const override {
    painter->setAntialiasing(false);
  }
  QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
  void draw(QCPPainter* painter) override {
    drawn = 0;
    QCPAxis* x = parentPlot()->xAxis;
    QCPAxis* y = parentPlot()->yAxis;
    const QRect r = parentPlot()->axisRect()->rect();
    const double cw = std::abs(x->coordToPixel(1) - x->coordToPixel(0));
    const int cols = plot_->model()->columnCount();
    if (cw >= kMinEventPx || cols == 0) return;
    const int ch = static_cast<int>(std::ceil(std::abs(y->coordToPixel(1) - y->coordToPixel(0))));
    painter->setPen(Qt::NoPen);
    int last_column = -1;
    for (int px = r.left(); px <= r.right(); ++px) {
      const int c = static_cast<int>(std::lround(x->pixelToCoord(px)));
      if (c == last_column || c < 0 || c >= cols) continue;
      last_column = c;
      // Clear of the axis lines on the edges.
      const int left = std::clamp(px - kMinEventPx / 2, r.left() + 1, r.right() - kMinEventPx);
      for (int row = 0; row < shown_slot_count(); ++row) {
        const int code = plot_->shownCode(SlotGridModel::slotOfRow(row), c);
        if (code < kCellNaN || code > kCellWarned) continue;
        painter->setBrush(cell_color(code));
        painter->drawRect(QRect(left, static_cast<int>(std::lround(y->coordToPixel(row))) - ch / 2,
                                kMinEventPx, ch));
        ++drawn;
      }
    }
  }

 private:
  GridPlot* plot_;
};

// The kind glyphs, drawn over the colour map on cells large enough to hold one.
class GridGlyphs : public QCPLayerable {
 public:
  GridGlyphs(GridPlot* plot, SlotGridModel* model) : QCPLayerable(plot, "main"), model_(model) {}
  int drawn = 0;  // glyphs in the last draw (tests)

 protected:
  void applyDefaultAntialiasingHint(QCPPainter* painter) const override {
    painter->setAntialiasing(true);
  }
  QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
  void draw(QCPPainter* painter) override {
    drawn = 0;
    QCPAxis* x = parentPlot()->xAxis;
    QCPAxis* y = parentPlot()->yAxis;
    const double cw = std::abs(x->coordToPixel(1) - x->coordToPixel(0));
    const double ch = std::abs(y->coordToPixel(1) - y->coordToPixel(0));
    if (cw < kGlyphCellPx || ch < kGlyphCellPx - 2) return;
    const QCPRange r = x->range();
    const int first = std::max(0, static_cast<int>(std::ceil(r.lower - 0.5)));
    const int last =
        std::min(model_->columnCount() - 1, static_cast<int>(std::floor(r.upper + 0.5)));
    QFont f = painter->font();
    f.setPixelSize(static_cast<int>(std::min(ch, cw) * 0.7));
    f.setBold(true);
    painter->setFont(f);
    for (int c = first; c <= last; ++c)
      for (int row = 0; row < shown_slot_count(); ++row) {
        const int code = model_->code(row, c);
        const QString g = cell_glyph(code);
        if (g.isEmpty()) continue;
        const QPointF centre(x->coordToPixel(c), y->coordToPixel(row));
        painter->setPen(cell_ink(code));
        painter->drawText(QRectF(centre.x() - cw / 2, centre.y() - ch / 2, cw, ch), Qt::AlignCenter,
                          g);
        ++drawn;
      }
  }

 private:
  SlotGridModel* model_;
};

GridPlot::GridPlot(SlotGridModel* model, QWidget* parent) : QCustomPlot(parent), model_(model) {
  map_ = new QCPColorMap(xAxis, yAxis);
  QCPColorGradient g;
  g.setLevelCount(kCellCodeCount);
  g.clearColorStops();
  // Each code's colour is flat around its level (a stop either side of it), so the gradient's
  // rounding at a level never blends in a neighbour's colour: the cell is the palette's exact
  // colour.
  constexpr double kStep = 1.0 / (kCellCodeCount - 1), kHalfBand = 0.25 * kStep;
  for (int c = 0; c < kCellCodeCount; ++c) {
    g.setColorStopAt(std::max(0.0, c * kStep - kHalfBand), cell_color(c));
    g.setColorStopAt(std::min(1.0, c * kStep + kHalfBand), cell_color(c));
  }
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  map_->setGradient(g);
  map_->setInterpolate(false);
  map_->setDataRange(QCPRange(0, kCellCodeCount - 1));
  glyphs_ = new GridGlyphs(this, model_);
  narrow_ = new NarrowEvents(this);
  entry_frames_ = std::make_unique<CellOutlines>(this, entry_pen());
  jump_marks_ = std::make_unique<CellOutlines>(this, jump_pen());
  yAxis->setRangeReversed(true);
  labelRows();
  QSharedPointer<QCPAxisTickerFixed> columns(new QCPAxisTickerFixed);
  columns->setTickStep(1.0);
  columns->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole folds/steps only
  xAxis->setTicker(columns);
  yAxis->setTickLabelFont(QFont(font().family(), 7));
  yAxis->grid()->setVisible(false);
  xAxis->grid()->setVisible(false);
  // The selection: its row and column outlined (thin, so the cells keep the colours of the key),
  // the cell framed.
  auto outline = [this](const QPen& pen) {
    auto* r = new QCPItemRect(this);
    r->setPen(pen);
    r->setBrush(Qt::NoBrush);
    r->setVisible(false);
    r->setClipToAxisRect(true);
    return r;
  };
  sel_row_band_ = outline(QPen(QColor(20, 20, 20, 150), 1));
  sel_column_band_ = outline(QPen(QColor(20, 20, 20, 150), 1));
  sel_cell_ = outline(QPen(QColor(20, 20, 20), 2, Qt::DashLine));
  empty_ = new QCPItemText(this);
  empty_->position->setType(QCPItemPosition::ptAxisRectRatio);
  empty_->position->setCoords(0.5, 0.5);
  empty_->setText("no data yet\nF10: one step\nF5: run until a slot fires");
  empty_->setColor(QColor(60, 60, 60));
  empty_->setBrush(QColor(255, 255, 255, 220));
  empty_->setPadding(QMargins(6, 4, 6, 4));
  share_row_axis_margins(*axisRect(), *xAxis);
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
    if (setting_range_) return;
    clampRange();
    rebuildMap();
  });
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    fitted_ = true;
    rebuild();
  });
  connect(model_, &QAbstractItemModel::dataChanged, this, &GridPlot::rebuild);
  rebuild();
}

GridPlot::~GridPlot() = default;

void GridPlot::setMarks(const std::vector<std::pair<int, int>>& cells) {
  if (cells == marks_) return;
  marks_ = cells;
  rebuild();
}

void GridPlot::setRowLabelsVisible(bool on) {
  yAxis->setTickLabels(on);
  replot(QCustomPlot::rpQueuedReplot);
}

void GridPlot::setEntries(const std::vector<std::pair<int, int>>& cells) {
  if (cells == entries_) return;
  entries_ = cells;
  rebuild();
}

void GridPlot::setSelection(int slot, int column) {
  sel_slot_ = slot;
  sel_column_ = column;
  const int cols = model_->columnCount();
  if (slot >= 0 && column >= 0 && column < cols) {  // pan to it when it is out of view
    const QCPRange r = xAxis->range();
    if (column < r.lower + 0.5 || column > r.upper - 0.5) {
      follow_ = false;
      Q_EMIT followChanged(false);
      setColumnRange(column - r.size() / 2, column + r.size() / 2);
      Q_EMIT columnRangeChangedByUser(xAxis->range().lower, xAxis->range().upper);
    }
  }
  placeSelection();
  replot(QCustomPlot::rpQueuedReplot);
}

void GridPlot::setColumnRange(double first, double last) {
  setting_range_ = true;
  xAxis->setRange(first, last);
  setting_range_ = false;
  clampRange();
  fitted_ = xAxis->range().lower <= -0.5 && xAxis->range().upper >= model_->columnCount() - 0.5;
  rebuildMap();
}

void GridPlot::zoomToFit() {
  fitted_ = true;
  setColumnRange(-0.5, std::max(1, model_->columnCount()) - 0.5);
}

void GridPlot::setFollow(bool on) {
  if (follow_ == on) return;
  follow_ = on;
  if (on) rebuild();
  Q_EMIT followChanged(on);
}

// Keeps the range inside the columns, at least kMinVisibleColumns wide (or all of them).
void GridPlot::clampRange() {
  const double all = std::max(1, model_->columnCount());
  QCPRange r = xAxis->range();
  double width = std::clamp(r.size(), std::min(all, kMinVisibleColumns), all);
  double lo = std::clamp(r.lower, -0.5, all - 0.5 - width);
  setting_range_ = true;
  xAxis->setRange(lo, lo + width);
  setting_range_ = false;
}

// The rows' labels and range: the slots of the shown table, in dataflow order (a run file of
// another trainer brings its own).
void GridPlot::labelRows() {
  // A wide table, or a short plot, labels every k-th row: as many labels as the rows' height
  // holds without writing them over one another, and at most kMostRowLabels (the slot table and
  // the tooltips name every row).
  constexpr int kMostRowLabels = 48;
  const int rows = std::max(1, static_cast<int>(shown_slot_count()));
  const QMargins m = axisRect()->margins();
  const double row_pixels =
      std::max(1, height() - m.top() - m.bottom()) / static_cast<double>(rows);
  const double label_pixels = QFontMetrics(yAxis->tickLabelFont()).height() + 1;
  const int every = std::max((rows + kMostRowLabels - 1) / kMostRowLabels,
                             static_cast<int>(std::ceil(label_pixels / row_pixels)));
  if (labelled_table_ == shown_table_generation() && labelled_every_ == every) return;
  labelled_table_ = shown_table_generation();
  labelled_every_ = every;
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int r = 0; r < rows; r += every) ticker->addTick(r, slot_label(SlotGridModel::slotOfRow(r)));
  yAxis->setTicker(ticker);
  yAxis->setRange(-0.5, shown_slot_count() - 0.5);
}

void GridPlot::rebuild() {
  labelRows();
  const int cols = std::max(1, model_->columnCount());
  if (fitted_) {
    setting_range_ = true;
    xAxis->setRange(-0.5, cols - 0.5);
    setting_range_ = false;
  } else if (follow_ && model_->columnCount() > shown_columns_) {  // keep the newest column in view
    const double width = xAxis->range().size();
    setting_range_ = true;
    xAxis->setRange(cols - 0.5 - width, cols - 0.5);
    setting_range_ = false;
  }
  shown_columns_ = model_->columnCount();
  empty_->setVisible(shown_columns_ == 0);
  clampRange();
  entry_frames_->place(entries_, model_->columnCount());
  jump_marks_->place(marks_, model_->columnCount());
  placeSelection();
  rebuildMap();
}

// The colour map of the visible columns: a cell per column (two when a single column is shown,
// so that it still has a width), or a cell per pixel column pooling the columns under it.
void GridPlot::rebuildMap() {
  const int cols = model_->columnCount();
  const QCPRange r = xAxis->range();
  const int first =
      std::clamp(static_cast<int>(std::floor(r.lower + 0.5)), 0, std::max(0, cols - 1));
  const int last = std::clamp(static_cast<int>(std::ceil(r.upper - 0.5)), 0, std::max(0, cols - 1));
  const int visible = cols == 0 ? 1 : last - first + 1;
  const int pixels = std::max(1, axisRect()->width());
  map_first_ = first;
  if (cols == 0 || visible <= pixels) {
    columns_per_cell_ = 1;
    // A single column is two map cells (so that it has a width), both that column's code.
    const int cells = std::max(2, visible);
    model_->pooledCodes(first, cols == 0 ? -1 : last, visible, pooled_);
    map_->data()->setSize(cells, shown_slot_count());
    if (visible == 1)
      map_->data()->setRange(QCPRange(first - 0.25, first + 0.25),
                             QCPRange(0, shown_slot_count() - 1));
    else
      map_->data()->setRange(QCPRange(first, last), QCPRange(0, shown_slot_count() - 1));
    for (int c = 0; c < cells; ++c)
      for (int row = 0; row < shown_slot_count(); ++row) {
        const int bin = visible == 1 ? 0 : c;
        map_->data()->setCell(
            c, row,
            pooled_[static_cast<std::size_t>(bin) * static_cast<std::size_t>(shown_slot_count()) +
                    static_cast<std::size_t>(row)]);
      }
  } else {
    columns_per_cell_ = static_cast<double>(visible) / pixels;
    model_->pooledCodes(first, last, pixels, pooled_);
    map_->data()->setSize(pixels, shown_slot_count());
    const double half = columns_per_cell_ / 2;
    map_->data()->setRange(QCPRange(first - 0.5 + half, last + 0.5 - half),
                           QCPRange(0, shown_slot_count() - 1));
    for (int b = 0; b < pixels; ++b)
      for (int row = 0; row < shown_slot_count(); ++row)
        map_->data()->setCell(
            b, row,
            pooled_[static_cast<std::size_t>(b) * static_cast<std::size_t>(shown_slot_count()) +
                    static_cast<std::size_t>(row)]);
  }
  replot(QCustomPlot::rpQueuedReplot);
}

int GridPlot::shownCode(int slot, int column) const {
  const int row = row_of_slot(slot);
  if (columns_per_cell_ <= 1) return model_->code(row, column);
  const int bin = std::clamp(
      static_cast<int>((column - map_first_) / columns_per_cell_), 0,
      static_cast<int>(pooled_.size() / static_cast<std::size_t>(std::max(1, shown_slot_count()))) -
          1);
  return pooled_[static_cast<std::size_t>(bin) * static_cast<std::size_t>(shown_slot_count()) +
                 static_cast<std::size_t>(row)];
}

void GridPlot::setEmptyHint(const QString& text) {
  if (empty_->text() == text) return;
  empty_->setText(text);
  replot(rpQueuedReplot);
}

QString GridPlot::emptyHint() const {
  return empty_->text();
}

bool GridPlot::showsEmptyState() const {
  return empty_->visible();
}
int GridPlot::glyphsDrawn() const {
  return glyphs_->drawn;
}
int GridPlot::eventsWidened() const {
  return narrow_->drawn;
}

void GridPlot::placeSelection() {
  const bool on = sel_slot_ >= 0;
  const bool has_column = on && sel_column_ >= 0 && sel_column_ < model_->columnCount();
  const double row = on ? row_of_slot(sel_slot_) : 0;
  const double cols = std::max(1, model_->columnCount());
  sel_row_band_->setVisible(on);
  sel_row_band_->topLeft->setCoords(-0.5, row - 0.5);
  sel_row_band_->bottomRight->setCoords(cols - 0.5, row + 0.5);
  sel_column_band_->setVisible(has_column);
  sel_cell_->setVisible(has_column);
  if (!has_column) return;
  sel_column_band_->topLeft->setCoords(sel_column_ - 0.5, -0.5);
  sel_column_band_->bottomRight->setCoords(sel_column_ + 0.5, shown_slot_count() - 0.5);
  sel_cell_->topLeft->setCoords(sel_column_ - 0.5, row - 0.5);
  sel_cell_->bottomRight->setCoords(sel_column_ + 0.5, row + 0.5);
}

bool GridPlot::rowAt(const QPoint& pos, int& row) const {
  row = static_cast<int>(std::lround(yAxis->pixelToCoord(pos.y())));
  return axisRect()->rect().contains(pos) && row >= 0 && row < shown_slot_count();
}

bool GridPlot::cellAt(const QPoint& pos, int& row, int& column) const {
  column = static_cast<int>(std::lround(xAxis->pixelToCoord(pos.x())));
  row = static_cast<int>(std::lround(yAxis->pixelToCoord(pos.y())));
  return axisRect()->rect().contains(pos) && row >= 0 && row < shown_slot_count() && column >= 0 &&
         column < model_->columnCount();
}

void GridPlot::mouseMoveEvent(QMouseEvent* e) {
  int row, column;
  if (!(e->buttons() & Qt::LeftButton) && cellAt(e->pos(), row, column)) {
    QString tip = model_->data(model_->index(row, column), Qt::ToolTipRole).toString();
    if (columns_per_cell_ > 1)
      tip += QString("\n(this pixel pools %1 columns: %2; zoom in for each)")
                 .arg(columns_per_cell_, 0, 'f', 1)
                 .arg(cell_text(shownCode(SlotGridModel::slotOfRow(row), column)));
    QToolTip::showText(e->globalPosition().toPoint(), tip, this);
  }
  if (e->buttons() & Qt::LeftButton) {  // a drag pans the columns
    const double from = xAxis->pixelToCoord(drag_x_), to = xAxis->pixelToCoord(e->pos().x());
    if (dragging_ || std::abs(e->pos().x() - drag_x_) > 3) {
      dragging_ = true;
      const QCPRange r = xAxis->range();
      setColumnRange(r.lower + from - to, r.upper + from - to);
      drag_x_ = e->pos().x();
      userMovedView();
    }
  }
}

void GridPlot::mousePressEvent(QMouseEvent* e) {
  setFocus(Qt::MouseFocusReason);
  dragging_ = false;
  drag_x_ = e->pos().x();
}

void GridPlot::mouseReleaseEvent(QMouseEvent* e) {
  if (dragging_) {
    dragging_ = false;
    return;
  }
  int row, column;
  if (cellAt(e->pos(), row, column))
    Q_EMIT cellClicked(SlotGridModel::slotOfRow(row), column);
  else if (rowAt(e->pos(), row))
    Q_EMIT rowClicked(SlotGridModel::slotOfRow(row));
}

void GridPlot::wheelEvent(QWheelEvent* e) {
  if (e->angleDelta().y() == 0) return;
  const QCPRange r = wheel_zoomed(xAxis->range(), *xAxis, *e);
  setColumnRange(r.lower, r.upper);
  userMovedView();
  e->accept();
}

void GridPlot::userMovedView() {
  if (follow_ && !fitted_) {
    follow_ = false;
    Q_EMIT followChanged(false);
  }
  Q_EMIT columnRangeChangedByUser(xAxis->range().lower, xAxis->range().upper);
}

void GridPlot::keyPressEvent(QKeyEvent* e) {
  const int cols = model_->columnCount();
  if (cols == 0) return QCustomPlot::keyPressEvent(e);
  int row = sel_slot_ >= 0 ? row_of_slot(sel_slot_) : 0;
  int column = sel_column_ >= 0 ? sel_column_ : 0;
  switch (e->key()) {
    case Qt::Key_Left:
      column = std::max(0, column - 1);
      break;
    case Qt::Key_Right:
      column = std::min(cols - 1, column + 1);
      break;
    case Qt::Key_Up:
      row = std::max(0, row - 1);
      break;
    case Qt::Key_Down:
      row = std::min(shown_slot_count() - 1, row + 1);
      break;
    case Qt::Key_Home:
      column = 0;
      break;
    case Qt::Key_End:
      column = cols - 1;
      break;
    default:
      return QCustomPlot::keyPressEvent(e);
  }
  Q_EMIT cellClicked(SlotGridModel::slotOfRow(row), column);
  e->accept();
}

void GridPlot::resizeEvent(QResizeEvent* e) {
  QCustomPlot::resizeEvent(e);
  labelRows();   // the labels that fit the rows' new height
  rebuildMap();  // the pooling follows the pixels
}

}  // namespace nanscope::gui
