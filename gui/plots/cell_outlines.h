// Outlined cells on a slot grid (rows in dataflow order, a column per fold or step): the entry
// points' frames and step compare's jumped slots. The items are kept and moved, never recreated
// (creating and removing items costs in proportion to all of the plot's items).
#pragma once

#include <utility>
#include <vector>

#include "models/snapshot.h"
#include "plots/qcp.h"
#include "style/cell_palette.h"

namespace nanscope::gui {

class CellOutlines {
 public:
  CellOutlines(QCustomPlot* plot, QPen pen) : plot_(plot), pen_(std::move(pen)) {}
  // Outlines the cells (slot, column) with column in [0, columns); the rest are hidden.
  void place(const std::vector<std::pair<int, int>>& cells, int columns) {
    std::size_t used = 0;
    for (const auto& [slot, column] : cells) {
      if (slot < 0 || column < 0 || column >= columns) continue;
      if (used == items_.size()) {
        auto* o = new QCPItemRect(plot_);
        o->setPen(pen_);
        o->setBrush(Qt::NoBrush);
        o->setClipToAxisRect(true);
        items_.push_back(o);
      }
      const double row = row_of_slot(slot);
      QCPItemRect* o = items_[used++];
      o->setVisible(true);
      o->topLeft->setCoords(column - 0.5, row - 0.5);
      o->bottomRight->setCoords(column + 0.5, row + 0.5);
    }
    for (std::size_t i = used; i < items_.size(); ++i) items_[i]->setVisible(false);
  }

 private:
  QCustomPlot* plot_;
  QPen pen_;
  std::vector<QCPItemRect*> items_;
};

// The pens: the entry point's frame and a jumped slot's mark.
inline QPen entry_pen() {
  return QPen(Qt::black, 3);
}
inline QPen jump_pen() {
  return QPen(jump_outline(), 2, Qt::DashLine);
}

}  // namespace nanscope::gui
