// The slot table: index, name, phase, state (in the shown fold), first fire, count, break-on
// toggle, check state. Rows in dataflow order; sortable through a proxy.
#pragma once

#include <QAbstractTableModel>

#include "models/snapshot.h"

namespace nanscope::gui {

class SlotTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Name, Phase, State, FirstFire, Count, BreakOn, Check, ColumnCount };

  explicit SlotTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setSnapshot(SnapshotPtr s);
  void setFold(int fold);  // -1: the latest fold
  SnapshotPtr snapshot() const { return snap_; }
  // The state shown for a slot ("clean", "fired", "absent", ...).
  QString stateOf(int slot) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 Q_SIGNALS:
  void breakpointToggled(int slot, bool on);
  void checkToggled(int slot, bool on);

 private:
  const SlotRecord* record(int slot) const;
  SnapshotPtr snap_;
  int fold_ = -1;
};

class EventsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Fold, Step, Kind, Entry, Dump, ColumnCount };
  static constexpr int DumpPathRole = Qt::UserRole + 1;
  explicit EventsModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setSnapshot(SnapshotPtr s);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  SnapshotPtr snap_;
  int rows_ = 0;
};

}  // namespace nanscope::gui
