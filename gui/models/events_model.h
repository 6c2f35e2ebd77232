// The events table: every first fire, halt, breakpoint and watch trip of the picture, a row each,
// with what the other columns cannot say in its detail; appending updates add rows.
#pragma once

#include <QAbstractTableModel>

#include "models/snapshot.h"

namespace nanscope::gui {

class EventsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Fold, Step, Kind, Entry, Detail, Dump, ColumnCount };
  static constexpr int DumpPathRole = Qt::UserRole + 1;
  explicit EventsModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setView(const Snapshot* view);
  void refresh(bool reset);  // appending updates add rows
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;
  static constexpr int SlotRole = Qt::UserRole + 2;  // the event's slot (its entry slot)

 private:
  QString detail(const SnapshotEvent& e) const;
  const Snapshot* view_ = nullptr;
  int rows_ = 0;
};

}  // namespace nanscope::gui
