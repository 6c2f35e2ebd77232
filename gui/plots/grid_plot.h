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
  // The cell to outline (slot, column), or none.
  void setEntry(int slot, int column);

 Q_SIGNALS:
  void cellClicked(int slot, int column);

 private:
  void rebuild();
  bool cellAt(const QPoint& pos, int& row, int& column) const;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;

  SlotGridModel* model_;
  QCPColorMap* map_;
  QCPItemRect* outline_;
  int entry_slot_ = -1, entry_column_ = -1;
};

}  // namespace nanscope::gui
