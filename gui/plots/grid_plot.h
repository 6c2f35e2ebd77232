// Draws a SlotGridModel: one colour per cell code (style/cell_palette.h), rows labelled "index
// name" in dataflow order, the entry points outlined, a glyph per kind on cells large enough to
// hold one, the selected cell highlighted with its row and column, a tooltip per cell.
//
// Any size stays readable: the wheel zooms and a drag pans the columns, and when more columns are
// visible than the plot has pixels, each pixel column shows the pooled cells it covers (the OR of
// their kinds: a single fire among thousands of clean steps still colours its pixel). Only the
// visible range is drawn, so a zoomed repaint costs the pixels, not the run. In follow mode the
// newest column stays in view as columns are added; a zoom or pan by the user leaves it (scrub).
// Arrow keys move the selected cell, Home/End go to the first/last column.
#pragma once

#include <memory>

#include "plots/qcp.h"

#include "models/slot_grid_model.h"

namespace nanscope::gui {

class GridGlyphs;
class NarrowEvents;
class CellOutlines;

class GridPlot : public QCustomPlot {
  Q_OBJECT
 public:
  GridPlot(SlotGridModel* model, QWidget* parent = nullptr);
  ~GridPlot() override;
  void setRowLabelsVisible(bool on);
  // The cells to outline, (slot, column) each: the entry points shown.
  void setEntries(const std::vector<std::pair<int, int>>& cells);
  std::vector<std::pair<int, int>> entries() const { return entries_; }
  // The cells to mark as jumped (step compare), (slot, column) each: a dashed outline.
  void setMarks(const std::vector<std::pair<int, int>>& cells);
  std::vector<std::pair<int, int>> marks() const { return marks_; }

  // The highlighted cell (slot -1: none); the view pans to it when it is out of view.
  void setSelection(int slot, int column);
  std::pair<int, int> selection() const { return {sel_slot_, sel_column_}; }

  // The visible columns, [first, last] (fractional at the edges), and setting them.
  QCPRange columnRange() const { return xAxis->range(); }
  void setColumnRange(double first, double last);
  void zoomToFit();
  // Follow: the newest column stays in view while columns are added (on at start; a user's zoom
  // or pan turns it off).
  void setFollow(bool on);
  bool follow() const { return follow_; }
  // Columns per drawn map cell now (1 or less: every column drawn; above 1: pooled).
  double columnsPerCell() const { return columns_per_cell_; }
  // The code drawn at a column (the pooled code of the pixel column holding it when pooled).
  int shownCode(int slot, int column) const;
  bool showsEmptyState() const;
  // What the empty plot says: how to start a run, or why there is none.
  void setEmptyHint(const QString& text);
  QString emptyHint() const;
  int glyphsDrawn() const;
  // Fired or warned cells drawn wider than their column in the last draw (narrow columns).
  int eventsWidened() const;
  SlotGridModel* model() const { return model_; }

 Q_SIGNALS:
  void cellClicked(int slot, int column);
  void rowClicked(int slot);  // a click on a row with no cell under it (an empty grid)
  // The user zoomed or panned (not emitted for setColumnRange).
  void columnRangeChangedByUser(double first, double last);
  void followChanged(bool on);

 private:
  void rebuild();
  void rebuildMap();
  void clampRange();
  void placeSelection();
  bool cellAt(const QPoint& pos, int& row, int& column) const;
  bool rowAt(const QPoint& pos, int& row) const;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void userMovedView();
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

  SlotGridModel* model_;
  QCPColorMap* map_;
  GridGlyphs* glyphs_;
  NarrowEvents* narrow_;
  QCPItemText* empty_;
  std::unique_ptr<CellOutlines> entry_frames_, jump_marks_;
  std::vector<std::pair<int, int>> entries_, marks_;
  QCPItemRect *sel_row_band_, *sel_column_band_, *sel_cell_;
  int sel_slot_ = -1, sel_column_ = -1;
  int shown_columns_ = 0;  // the model's columns at the last rebuild
  bool follow_ = true;
  bool fitted_ = true;          // the whole run is in view (kept so while following)
  bool setting_range_ = false;  // the range is being set by the plot itself
  double columns_per_cell_ = 1;
  int map_first_ = 0;  // the first column the map holds
  void labelRows();
  std::uint64_t labelled_table_ = ~std::uint64_t{0};  // shown_table_generation() of the labels
  int labelled_every_ = 0;                            // and the rows between two labels
  std::vector<int> pooled_;  // the map's codes, cell-major (a row per slot of the shown table)
  bool dragging_ = false;
  int drag_x_ = 0;
};

}  // namespace nanscope::gui
