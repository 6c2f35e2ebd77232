#include "plots/grid_plot.h"

#include <QToolTip>

namespace nanscope::gui {

QColor cell_color(int code) {
  switch (code) {
    case kCellClean: return QColor(76, 175, 80);       // green
    case kCellNaN: return QColor(211, 47, 47);         // red
    case kCellPosInf: return QColor(255, 143, 0);      // orange
    case kCellNegInf: return QColor(123, 31, 162);     // purple
    case kCellMixed: return QColor(136, 14, 79);       // dark magenta
    case kCellAbsent: return QColor(176, 190, 197);    // blue-grey: seen against the white of "not run"
    case kCellDeferred: return QColor(255, 235, 59);   // yellow
    case kCellDisabled: return QColor(158, 158, 158);  // grey
    default: return QColor(255, 255, 255);
  }
}

GridPlot::GridPlot(SlotGridModel* model, QWidget* parent) : QCustomPlot(parent), model_(model) {
  map_ = new QCPColorMap(xAxis, yAxis);
  QCPColorGradient g;
  g.setLevelCount(kCellCodeCount);
  g.clearColorStops();
  for (int c = 0; c < kCellCodeCount; ++c)
    g.setColorStopAt(static_cast<double>(c) / (kCellCodeCount - 1), cell_color(c));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  map_->setGradient(g);
  map_->setInterpolate(false);
  map_->setDataRange(QCPRange(0, kCellCodeCount - 1));
  yAxis->setRangeReversed(true);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int r = 0; r < kSlotCount; ++r) {
    const int slot = SlotGridModel::slotOfRow(r);
    ticker->addTick(r, QString("%1 %2").arg(slot).arg(QString::fromUtf8(slot_info(slot).name.data())));
  }
  yAxis->setTicker(ticker);
  QSharedPointer<QCPAxisTickerFixed> columns(new QCPAxisTickerFixed);
  columns->setTickStep(1.0);
  columns->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole folds/steps only
  xAxis->setTicker(columns);
  yAxis->setTickLabelFont(QFont(font().family(), 7));
  yAxis->grid()->setVisible(false);
  xAxis->grid()->setVisible(false);
  setMouseTracking(true);
  connect(model_, &QAbstractItemModel::modelReset, this, &GridPlot::rebuild);
  connect(model_, &QAbstractItemModel::dataChanged, this, &GridPlot::rebuild);
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

void GridPlot::rebuild() {
  // Two map cells per column (centres at c -/+ 0.25), so that a single column still has a width.
  const int cols = std::max(1, model_->columnCount());
  map_->data()->setSize(2 * cols, kSlotCount);
  map_->data()->setRange(QCPRange(-0.25, cols - 0.75), QCPRange(0, kSlotCount - 1));
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < kSlotCount; ++r) {
      const int code = model_->code(r, c);
      map_->data()->setCell(2 * c, r, code);
      map_->data()->setCell(2 * c + 1, r, code);
    }
  xAxis->setRange(-0.5, cols - 0.5);
  yAxis->setRange(-0.5, kSlotCount - 0.5);
  // One outline per shown entry; the items are kept and moved (creating and removing items
  // costs in proportion to all the plot's items).
  std::size_t used = 0;
  for (const auto& [slot, column] : entries_) {
    if (slot < 0 || column < 0 || column >= model_->columnCount()) continue;
    if (used == outlines_.size()) {
      auto* o = new QCPItemRect(this);
      o->setPen(QPen(Qt::black, 3));
      o->setBrush(Qt::NoBrush);
      outlines_.push_back(o);
    }
    const double row = row_of_slot(slot);
    QCPItemRect* o = outlines_[used++];
    o->setVisible(true);
    o->topLeft->setCoords(column - 0.5, row - 0.5);
    o->bottomRight->setCoords(column + 0.5, row + 0.5);
  }
  for (std::size_t i = used; i < outlines_.size(); ++i) outlines_[i]->setVisible(false);
  replot(QCustomPlot::rpQueuedReplot);
}

bool GridPlot::rowAt(const QPoint& pos, int& row) const {
  row = static_cast<int>(std::lround(yAxis->pixelToCoord(pos.y())));
  return axisRect()->rect().contains(pos) && row >= 0 && row < kSlotCount;
}

bool GridPlot::cellAt(const QPoint& pos, int& row, int& column) const {
  column = static_cast<int>(std::lround(xAxis->pixelToCoord(pos.x())));
  row = static_cast<int>(std::lround(yAxis->pixelToCoord(pos.y())));
  return row >= 0 && row < kSlotCount && column >= 0 && column < model_->columnCount();
}

void GridPlot::mouseMoveEvent(QMouseEvent* e) {
  int row, column;
  if (cellAt(e->pos(), row, column))
    QToolTip::showText(e->globalPosition().toPoint(),
                       model_->data(model_->index(row, column), Qt::ToolTipRole).toString(), this);
  QCustomPlot::mouseMoveEvent(e);
}

void GridPlot::mousePressEvent(QMouseEvent* e) {
  int row, column;
  if (cellAt(e->pos(), row, column)) Q_EMIT cellClicked(SlotGridModel::slotOfRow(row), column);
  else if (rowAt(e->pos(), row)) Q_EMIT rowClicked(SlotGridModel::slotOfRow(row));
  QCustomPlot::mousePressEvent(e);
}

}  // namespace nanscope::gui
