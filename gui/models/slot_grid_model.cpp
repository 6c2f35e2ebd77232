#include "models/slot_grid_model.h"

namespace nanscope::gui {

int cell_code(SlotState state, std::uint8_t kinds) {
  switch (state) {
    case SlotState::Absent: return kCellAbsent;
    case SlotState::Deferred: return kCellDeferred;
    case SlotState::Disabled: return kCellDisabled;
    default: break;
  }
  if (kinds == 0) return kCellClean;
  if (kinds == kKindNaN) return kCellNaN;
  if (kinds == kKindPosInf) return kCellPosInf;
  if (kinds == kKindNegInf) return kCellNegInf;
  return kCellMixed;
}

QString cell_text(int code) {
  static const char* names[] = {"clean", "NaN", "+Inf", "-Inf", "mixed", "absent", "deferred", "disabled", "not run"};
  return code >= 0 && code < kCellCodeCount ? names[code] : "?";
}

void SlotGridModel::setSnapshot(SnapshotPtr s) {
  const int before = columns_;
  snap_ = std::move(s);
  rows_ = stepRows();
  int after = 0;
  if (snap_) after = mode_ == Folds ? static_cast<int>(snap_->folds.size()) : static_cast<int>(rows_.size());
  if (after != before) {
    beginResetModel();
    columns_ = after;
    endResetModel();
  } else if (after > 0) {
    Q_EMIT dataChanged(index(0, 0), index(kSlotCount - 1, after - 1));
  }
}

void SlotGridModel::setFold(int fold) {
  fold_ = fold;
  beginResetModel();
  rows_ = stepRows();
  columns_ = snap_ ? static_cast<int>(rows_.size()) : 0;
  endResetModel();
}

std::vector<std::size_t> SlotGridModel::stepRows() const {
  std::vector<std::size_t> rows;
  if (!snap_) return rows;
  for (std::size_t i = 0; i < snap_->step_fold.size(); ++i)
    if (snap_->step_fold[i] == fold_) rows.push_back(i);
  return rows;
}

int SlotGridModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kSlotCount; }
int SlotGridModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : columns_; }

int SlotGridModel::code(int row, int column) const {
  if (!snap_ || row < 0 || row >= kSlotCount || column < 0 || column >= columns_) return kCellNotRun;
  const int slot = slotOfRow(row);
  if (mode_ == Folds) {
    const SlotRecord& r = snap_->folds[static_cast<std::size_t>(column)].slots[slot];
    return cell_code(r.state, r.kinds);
  }
  return cell_code(snap_->setup[slot], snap_->step_flags[rows_[static_cast<std::size_t>(column)]][slot]);
}

QVariant SlotGridModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !snap_) return {};
  const int slot = slotOfRow(index.row());
  const int c = code(index.row(), index.column());
  if (role == CodeRole) return c;
  if (role == SlotRole) return slot;
  if (role == Qt::DisplayRole) return cell_text(c);
  if (role == Qt::ToolTipRole) {
    QString tip = QString("slot %1 %2\n").arg(slot).arg(QString::fromUtf8(slot_info(slot).name.data()));
    if (mode_ == Folds) {
      const SlotRecord& r = snap_->folds[static_cast<std::size_t>(index.column())].slots[slot];
      tip += QString("fold %1: %2").arg(index.column()).arg(QString::fromUtf8(state_name(r.state)));
      if (r.first_step >= 0)
        tip += QString("\nkinds %1\nfirst step %2\ncount %3").arg(cell_text(c)).arg(r.first_step).arg(r.count);
    } else {
      tip += QString("fold %1, step %2: %3").arg(fold_).arg(index.column()).arg(cell_text(c));
    }
    return tip;
  }
  return {};
}

QVariant SlotGridModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) {
    if (section < 0 || section >= kSlotCount) return {};
    const int slot = slotOfRow(section);
    return QString("%1 %2").arg(slot).arg(QString::fromUtf8(slot_info(slot).name.data()));
  }
  return mode_ == Folds ? QString("fold %1").arg(section) : QString::number(section);
}

}  // namespace nanscope::gui
