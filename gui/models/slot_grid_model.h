// The slot x fold grid and the slot x step grid of one fold, as a table model: rows are slots in
// dataflow order (labelled by index and name), columns folds or steps. The plot adapter draws it;
// tests read it.
#pragma once

#include <QAbstractTableModel>

#include "models/snapshot.h"

namespace nanscope::gui {

// Cell codes, one colour each in the grids.
enum CellCode : int {
  kCellClean = 0, kCellNaN, kCellPosInf, kCellNegInf, kCellMixed, kCellAbsent, kCellDeferred,
  kCellDisabled, kCellNotRun, kCellCodeCount
};
int cell_code(SlotState state, std::uint8_t kinds);
QString cell_text(int code);

class SlotGridModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Mode { Folds, Steps };
  static constexpr int CodeRole = Qt::UserRole + 1;
  static constexpr int SlotRole = Qt::UserRole + 2;

  explicit SlotGridModel(Mode mode, QObject* parent = nullptr) : QAbstractTableModel(parent), mode_(mode) {}

  void setSnapshot(SnapshotPtr s);
  void setFold(int fold);  // Steps mode: which fold's steps
  int fold() const { return fold_; }
  SnapshotPtr snapshot() const { return snap_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

  int code(int row, int column) const;  // kCell*
  static int slotOfRow(int row) { return dataflow_order()[static_cast<std::size_t>(row)]; }

 private:
  std::vector<std::size_t> stepRows() const;  // global step indices of the fold
  std::vector<std::size_t> rows_;              // stepRows(), cached per snapshot and fold
  Mode mode_;
  SnapshotPtr snap_;
  int fold_ = 0;
  int columns_ = 0;
};

}  // namespace nanscope::gui
