#include "models/slot_table_model.h"

namespace nanscope::gui {

void SlotTableModel::setView(const Snapshot* view) {
  beginResetModel();
  view_ = view;
  rows_for_ = shown_table_generation();
  endResetModel();
}

void SlotTableModel::refresh() {
  if (rows_for_ != shown_table_generation()) {  // another table: other rows
    beginResetModel();
    rows_for_ = shown_table_generation();
    endResetModel();
    return;
  }
  if (view_) Q_EMIT dataChanged(index(0, 0), index(shown_slot_count() - 1, ColumnCount - 1));
}

void SlotTableModel::setFold(int fold) {
  fold_ = fold;
  refresh();
}

const SlotRecord* SlotTableModel::record(int slot) const {
  if (!view_ || fold_ < 0 || fold_ >= static_cast<int>(view_->folds.size())) return nullptr;
  return &view_->folds[static_cast<std::size_t>(fold_)].slots[slot];
}

QString SlotTableModel::stateOf(int slot) const {
  if (const SlotRecord* r = record(slot)) return QString::fromUtf8(state_name(r->state));
  if (!view_) return {};
  const SlotState s = view_->setup[slot];
  return s == SlotState::Clean ? QString("active") : QString::fromUtf8(state_name(s));
}

QString SlotTableModel::typeOf(int slot) const {
  const QByteArray builtin = view_ ? view_->builtin_type.toUtf8() : QByteArray("float32");
  const std::string_view type =
      slot_type_name(shown_table(), slot, std::string_view(builtin.constData(), builtin.size()));
  return QString::fromUtf8(type.data(), static_cast<qsizetype>(type.size()));
}

int SlotTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : shown_slot_count();
}
int SlotTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant SlotTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const int slot = dataflow_order()[static_cast<std::size_t>(index.row())];
  const SlotInfo& info = shown_slot(slot);
  const SlotRecord* r = record(slot);
  if (role == Qt::CheckStateRole && index.column() == BreakOn)
    return view_ && view_->breakpoints.count(slot) ? Qt::Checked : Qt::Unchecked;
  if (role == Qt::CheckStateRole && index.column() == Check)
    return view_ && view_->setup[slot] == SlotState::Clean ? Qt::Checked : Qt::Unchecked;
  if (role == Qt::UserRole) return slot;
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Index:
      return slot;
    case Name:
      return QString::fromUtf8(info.name.data(), static_cast<int>(info.name.size()));
    case Type:
      return typeOf(slot);
    case Phase: {
      const std::string_view phase = slot_phase(info);  // an SDK trainer's own phase name
      return QString::fromUtf8(phase.data(), static_cast<qsizetype>(phase.size()));
    }
    case State:
      return stateOf(slot);
    case FirstFire:
      return r && r->first_step >= 0 ? QVariant(static_cast<qlonglong>(r->first_step))
                                     : QVariant(QString("-"));
    case Count:
      if (!r || r->first_step < 0)
        return role == Qt::ToolTipRole ? QVariant(QString("no fire in this fold"))
                                       : QVariant(QString("-"));
      return role == Qt::ToolTipRole
                 ? QVariant(QString("%1 non-finite values in the buffer at its first fire (step %2 "
                                    "of fold %3)")
                                .arg(r->count)
                                .arg(r->first_step)
                                .arg(fold_))
                 : QVariant(static_cast<qlonglong>(r->count));
    case BreakOn:
      return role == Qt::ToolTipRole
                 ? QVariant(QString("stop after the first step in which this slot fires (F9)"))
                 : QVariant();
    case Check: {
      if (!view_) return {};
      const SlotState s = view_->setup[slot];
      return s == SlotState::Clean ? QString("on") : QString::fromUtf8(state_name(s));
    }
  }
  return {};
}

bool SlotTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::CheckStateRole) return false;
  const int slot = dataflow_order()[static_cast<std::size_t>(index.row())];
  const bool on = value.toInt() == Qt::Checked;
  if (index.column() == BreakOn)
    Q_EMIT breakpointToggled(slot, on);
  else if (index.column() == Check && view_ && view_->setup[slot] != SlotState::Absent)
    Q_EMIT checkToggled(slot, on);
  else
    return false;
  return true;
}

Qt::ItemFlags SlotTableModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  // A file shown offline has no run to break or check: its boxes are drawn disabled.
  if ((index.column() == BreakOn || index.column() == Check) && view_ && view_->offline)
    return Qt::ItemIsSelectable;
  if (index.column() == BreakOn) f |= Qt::ItemIsUserCheckable;
  if (index.column() == Check && view_ &&
      view_->setup[dataflow_order()[static_cast<std::size_t>(index.row())]] != SlotState::Absent)
    f |= Qt::ItemIsUserCheckable;
  return f;
}

QVariant SlotTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  static const char* names[] = {"#",          "name",  "type",  "phase", "state",
                                "first fire", "count", "break", "check"};
  static const char* tips[] = {
      "the slot's index",
      "the slot's name (docs/slots.md)",
      "the element type its buffer holds, checked in that type: float32, float64, bfloat16 or "
      "float16",
      "the phase whose call site checks it",
      "its state in the selected fold: clean, fired, absent, deferred or disabled",
      "the step of its first fire in the selected fold",
      "how many of its buffer's values were non-finite at that first fire",
      "stop after the first step in which this slot fires (F9)",
      "check this slot (off: its state is disabled from the next step on)"};
  if (role == Qt::DisplayRole) return QString(names[section]);
  if (role == Qt::ToolTipRole) return QString(tips[section]);
  return {};
}

}  // namespace nanscope::gui
