// The workbench's step compare (docs/gui.md, "Step compare"): which two steps of the selected fold
// are compared (by default the last clean step and the first bad one, session/step_compare.h) and
// the table of every slot's health at both, what went non-finite or jumped first, as a table model.
#pragma once

#include <QAbstractTableModel>
#include <optional>
#include <utility>

#include "models/snapshot.h"
#include "session/step_compare.h"

namespace nanscope::gui {

// The default pair of a fold in the picture: its steps' flags and its first watch trip.
std::optional<DefaultCompareSteps> default_compare_steps(const Snapshot& view, int fold);

// The comparison of two steps of a fold in the picture; nullopt when either step is not there.
std::optional<StepComparison> compare_in_view(const Snapshot& view, int fold, int step_a,
                                              int step_b);

class StepCompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // What makes a row stand out is beside its name: its non-finite counts at both steps, then its
  // growth; the rest after.
  enum Column {
    Slot,
    NonfiniteA,
    NonfiniteB,
    Growth,
    AbsMaxA,
    AbsMaxB,
    MeanA,
    MeanB,
    MeanChange,
    kColumnCount
  };
  static constexpr int SlotRole = Qt::UserRole + 1;
  static constexpr int JumpedRole = Qt::UserRole + 2;

  using QAbstractTableModel::QAbstractTableModel;
  void setComparison(std::optional<StepComparison> c);
  const std::optional<StepComparison>& comparison() const { return c_; }
  // The slots that jumped between the two steps (drawn outlined in the grids at step B).
  std::vector<int> jumpedSlots() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::optional<StepComparison> c_;
};

// A growth as the table writes it: "x12.5", "from 0", "nothing finite" (at the later step).
QString growth_text(const SlotChange& r);

}  // namespace nanscope::gui
