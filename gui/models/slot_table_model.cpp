#include "models/slot_table_model.h"

#include <QFileInfo>

#include "models/slot_grid_model.h"

namespace nanscope::gui {

void SlotTableModel::setView(const Snapshot* view) {
  beginResetModel();
  view_ = view;
  endResetModel();
}

void SlotTableModel::refresh() {
  if (view_) Q_EMIT dataChanged(index(0, 0), index(kSlotCount - 1, ColumnCount - 1));
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

int SlotTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kSlotCount;
}
int SlotTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant SlotTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const int slot = dataflow_order()[static_cast<std::size_t>(index.row())];
  const SlotInfo& info = slot_info(slot);
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
    case Phase:
      return QString::fromUtf8(phase_name(info.phase).data());
    case State:
      return stateOf(slot);
    case FirstFire:
      return r && r->first_step >= 0 ? QVariant(static_cast<qlonglong>(r->first_step))
                                     : QVariant(QString("-"));
    case Count:
      return r && r->first_step >= 0 ? QVariant(static_cast<qlonglong>(r->count))
                                     : QVariant(QString("-"));
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
  if (index.column() == BreakOn) f |= Qt::ItemIsUserCheckable;
  if (index.column() == Check && view_ &&
      view_->setup[dataflow_order()[static_cast<std::size_t>(index.row())]] != SlotState::Absent)
    f |= Qt::ItemIsUserCheckable;
  return f;
}

QVariant SlotTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  static const char* names[] = {"#",          "name",  "phase", "state",
                                "first fire", "count", "break", "check"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

void EventsModel::setView(const Snapshot* view) {
  beginResetModel();
  view_ = view;
  rows_ = view_ ? static_cast<int>(view_->events.size()) : 0;
  endResetModel();
}

void EventsModel::refresh(bool reset) {
  const int n = view_ ? static_cast<int>(view_->events.size()) : 0;
  if (reset || n < rows_) {
    beginResetModel();
    rows_ = n;
    endResetModel();
  } else if (n > rows_) {
    beginInsertRows({}, rows_, n - 1);
    rows_ = n;
    endInsertRows();
  }
}

int EventsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : rows_;
}
int EventsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !view_ || index.row() >= rows_) return {};
  const SnapshotEvent& e = view_->events[static_cast<std::size_t>(index.row())];
  if (role == DumpPathRole) return e.dump;
  if (role == SlotRole) return e.entry_slot;
  if (role == Qt::ToolTipRole && index.column() == Detail) return detail(e);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Fold:
      return e.fold;
    case Step:
      return e.step;
    case Kind:
      return kind_text(e.kind);
    case Entry:
      return e.entry_slot >= 0 ? QString("%1 %2")
                                     .arg(e.entry_slot)
                                     .arg(QString::fromUtf8(slot_info(e.entry_slot).name.data()))
                               : QString("-");
    case Detail:
      return detail(e);
    case Dump:
      return e.dump.isEmpty() ? QString("-") : QFileInfo(e.dump).fileName();
  }
  return {};
}

// What a row cannot say in its other columns: a watch's condition, group, value and threshold (two
// trips at one step on one slot, the encoder's and the aux group's norms, differ only here); the
// kinds a first fire found at its step.
QString EventsModel::detail(const SnapshotEvent& e) const {
  if (e.watch) return QString::fromStdString(watch_trip_text(*e.watch, false));  // slot: Entry
  if (e.kind == EventKind::FirstFire && e.entry_slot >= 0 && e.entry_slot < kSlotCount) {
    const auto [begin, end] = view_->fold_steps(e.fold);
    const std::size_t g = begin + static_cast<std::size_t>(std::max(e.step, 0));
    if (g < end) return kinds_text(view_->steps[g].flags[static_cast<std::size_t>(e.entry_slot)]);
  }
  return "-";
}

QVariant EventsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  static const char* names[] = {"fold", "step", "event", "entry point", "detail", "dump"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace nanscope::gui
