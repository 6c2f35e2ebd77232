// Draws a SlotGridModel as a QCPColorMap: one discrete colour per cell code, rows labelled
// "index name" in dataflow order, the entry point outlined, a tooltip per cell, click to select.
#pragma once

#include "plots/qcp.h"

#include "models/slot_grid_model.h"

namespace nanscope::gui {

QColor cell_color(int code);

class GridPlot : public QCustomPlot {
  Q_OBJECT
 public:
  GridPlot(SlotGridModel* model, QWidget* parent = nullptr);
  void setRowLabelsVisible(bool on);
  // The cells to outline, (slot, column) each: the entry points shown.
  void setEntries(const std::vector<std::pair<int, int>>& cells);
  std::vector<std::pair<int, int>> entries() const { return entries_; }

 Q_SIGNALS:
  void cellClicked(int slot, int column);
  void rowClicked(int slot);  // a click on a row with no cell under it (an empty grid)

 private:
  void rebuild();
  bool cellAt(const QPoint& pos, int& row, int& column) const;
  bool rowAt(const QPoint& pos, int& row) const;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;

  SlotGridModel* model_;
  QCPColorMap* map_;
  std::vector<QCPItemRect*> outlines_;
  std::vector<std::pair<int, int>> entries_;
};

}  // namespace nanscope::gui
