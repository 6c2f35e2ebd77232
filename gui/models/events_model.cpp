#include "models/events_model.h"

#include <QFileInfo>

#include "models/slot_grid_model.h"

namespace nanscope::gui {

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
                                     .arg(QString::fromUtf8(shown_slot(e.entry_slot).name.data()))
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
  if (e.kind == EventKind::FirstFire && e.entry_slot >= 0 && e.entry_slot < shown_slot_count()) {
    const auto [begin, end] = view_->fold_steps(e.fold);
    const std::size_t g = begin + static_cast<std::size_t>(std::max(e.step, 0));
    if (g < end) return kinds_text(view_->steps[g].flags[static_cast<std::size_t>(e.entry_slot)]);
  }
  return "-";
}

QVariant EventsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  // "slot": a first fire's is the slot that fired (the fold's entry point is the first of them),
  // a watch trip's the slot it watches.
  static const char* names[] = {"fold", "step", "event", "slot", "detail", "dump"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace nanscope::gui
