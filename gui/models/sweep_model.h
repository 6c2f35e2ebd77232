// The sweep view's table (docs/sweeps.md): a row per task (variant x seed), its state and first
// fire, then a column per fold coloured as the slot grid colours a cell (fired with its kinds,
// warned, clean; running, failed, not started), the fold's entry slot on hover. Sorting by the
// first-fire column puts the tasks that broke first on top; the slots that fired first most often
// across the sweep are counted for the summary.
#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <utility>
#include <vector>

#include "sweep/sweep_status.h"

namespace nanscope::gui {

using SweepStatusPtr = std::shared_ptr<const SweepStatus>;

class SweepModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Task, Variant, Seed, State, FirstFire, Note, FoldColumns };
  static constexpr int SortRole = Qt::UserRole + 1;     // first fire: (fold, step); none last
  static constexpr int RunFileRole = Qt::UserRole + 2;  // the task's run file
  static constexpr int CellRole = Qt::UserRole + 3;     // a fold cell's state name
  explicit SweepModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setStatus(SweepStatusPtr s);
  const SweepStatusPtr& status() const { return status_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;
  // The tasks' entry slots, most frequent first (ties in slot order): (slot, tasks).
  std::vector<std::pair<int, int>> firstFiringSlots() const;
  static int cellCode(const FoldOutcome& f);  // the slot grid's colour code (cell_palette.h)

 private:
  SweepStatusPtr status_;
};

}  // namespace nanscope::gui

Q_DECLARE_METATYPE(nanscope::gui::SweepStatusPtr)
