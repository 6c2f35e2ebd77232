// The slot x fold grid and the slot x step grid of one fold, as a table model: rows are slots in
// dataflow order (labelled by index and name), columns folds or steps. It reads the window's
// picture (models/snapshot.h) and grows by columns as updates append; the plot adapter draws it;
// tests read it.
#pragma once

#include <QAbstractTableModel>

#include "models/snapshot.h"
#include "style/cell_palette.h"

namespace nanscope::gui {

int cell_code(SlotState state, std::uint8_t kinds);
QString cell_text(int code);
QString kinds_text(std::uint8_t kinds);  // "NaN, +Inf" or "none"

class SlotGridModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Mode { Folds, Steps };
  static constexpr int CodeRole = Qt::UserRole + 1;
  static constexpr int SlotRole = Qt::UserRole + 2;

  explicit SlotGridModel(Mode mode, QObject* parent = nullptr)
      : QAbstractTableModel(parent), mode_(mode) {}

  // The picture to show (owned by the window, outliving the model); `reset`: it was replaced.
  void setView(const Snapshot* view);
  void refresh(bool reset);
  void setFold(int fold);  // Steps mode: which fold's steps
  int fold() const { return fold_; }
  const Snapshot* view() const { return view_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

  int code(int row, int column) const;  // kCell*
  // The codes of columns [first, last] pooled into `bins` equal runs of columns, bin-major
  // (out[bin * slot count + row]): the kinds of the run's cells ORed (any fire shows), else warned
  // when a watch tripped in the run, else clean when any cell of the run was checked, else the
  // state of the run's last cell.
  void pooledCodes(int first, int last, int bins, std::vector<int>& out) const;
  static int slotOfRow(int row) { return dataflow_order()[static_cast<std::size_t>(row)]; }

 private:
  int wantedColumns();  // and the fold's first step
  void collectWarned(bool from_scratch);
  bool warned(int column, int slot) const;
  Mode mode_;
  const Snapshot* view_ = nullptr;
  int fold_ = 0;
  int columns_ = 0;
  std::uint64_t rows_for_ = 0;     // the shown table's generation the rows were made for
  std::size_t first_ = 0;          // Steps mode: the fold's first step in the picture's steps
  std::vector<SlotSet> warned_;    // per column: the slots a watch tripped on (empty: none)
  std::size_t warned_events_ = 0;  // the picture's events already folded into warned_
};

}  // namespace nanscope::gui
