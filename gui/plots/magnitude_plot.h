// The magnitude view of the slot x step grid (docs/gui.md, "Magnitude view"): each cell is log10 of
// the slot's finite absolute maximum at that step, on a continuous scale (viridis, keyed by a
// colour scale), so a buffer growing towards float overflow reads as a brightening row long before
// anything fires. White: not measured at that step (not checked, or sentinel.health off); a cell
// with no finite value at all is drawn in the state view's NaN colour, a band above the scale. It
// shows the columns the state view shows (the window keeps the two in step); when more columns are
// visible than it has pixels, each pixel column shows the largest magnitude among the steps it
// covers, so a spike never disappears. The entry point is framed and step compare's jumped slots
// marked as in the state view.
#pragma once

#include <memory>

#include "models/snapshot.h"
#include "plots/qcp.h"

namespace nanscope::gui {

class CellOutlines;

class MagnitudePlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit MagnitudePlot(QWidget* parent = nullptr);
  ~MagnitudePlot() override;
  void setView(const Snapshot* view) { view_ = view; }
  void setFold(int fold);
  // The picture changed: new steps (read incrementally), or a new picture (resetCache first).
  void refresh();
  void resetCache();
  void setColumnRange(double first, double last);
  void setSelection(int slot, int column);
  void setEntries(const std::vector<std::pair<int, int>>& cells);
  void setMarks(const std::vector<std::pair<int, int>>& cells);

  // For tests and the state file: the columns, the value drawn for a cell (magnitude_of), the
  // scale's range (log10), the colour of a cell's value.
  int columnCount() const { return columns_; }
  double value(int slot, int column) const;
  // A cell with non-finite values: how many, and the largest finite |value| beside them.
  QString nonfiniteText(int slot, int column) const;
  // A measured cell's margin to overflow in its slot's type (", 3.2 bits (x9.2) below the type's
  // largest finite value"), empty where it is not measured.
  QString marginText(int slot, int column) const;
  QCPRange scaleRange() const { return scale_range_; }
  QColor colourOf(double value) const;
  QCPRange barRange() const;           // the colour bar's numbers: the finite scale alone
  double drawnAt(double value) const;  // the value's place on the colour bar

 Q_SIGNALS:
  void cellClicked(int slot, int column);
  // The wheel asked for these columns (the window applies them to both views).
  void columnRangeRequested(double first, double last);

 private:
  void rebuildMap();
  void placeSelection();
  bool cellAt(const QPoint& pos, int& row, int& column) const;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void showEvent(QShowEvent* e) override;

  const Snapshot* view_ = nullptr;
  int fold_ = 0, columns_ = 0;
  std::size_t first_ = 0;    // the fold's first step in the picture's steps
  std::vector<float> mags_;  // magnitude_of per step and row (dataflow order), the fold's steps
  int cached_ = 0;           // the steps in mags_
  double finite_lo_ = INFINITY, finite_hi_ = -INFINITY;  // over mags_' finite values
  bool gradient_set_ = false;
  bool map_stale_ = true;  // the map was not built while hidden
  QCPColorMap* map_;
  QCPColorScale* scale_;
  QCPRange scale_range_{0, 1};      // the finite magnitudes' part of the bar (whole decades)
  double nothing_finite_band_ = 1;  // the band above it: cells with no finite value
  QCPItemRect* sel_cell_;
  int sel_slot_ = -1, sel_column_ = -1;
  std::unique_ptr<CellOutlines> entry_frames_, jump_marks_;
  std::vector<std::pair<int, int>> entries_, marks_;
};

}  // namespace nanscope::gui
