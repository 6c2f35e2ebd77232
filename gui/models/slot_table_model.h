// The slot table: index, name, phase, state (in the shown fold), first fire, count, break-on
// toggle, check state. Rows in dataflow order; sortable through a proxy.
#pragma once

#include <QAbstractTableModel>

#include "models/snapshot.h"

namespace nanscope::gui {

class SlotTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // A slot's element type as the Type column shows it.
  QString typeOf(int slot) const;
  enum Column { Index, Name, Type, Phase, State, FirstFire, Count, BreakOn, Check, ColumnCount };

  explicit SlotTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  // The picture to show (owned by the window, outliving the model).
  void setView(const Snapshot* view);
  void refresh();
  void setFold(int fold);  // the fold whose states, first fires and counts are shown
  int fold() const { return fold_; }
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
  const Snapshot* view_ = nullptr;
  int fold_ = 0;
  std::uint64_t rows_for_ = 0;  // the shown table's generation the rows were made for
};

}  // namespace nanscope::gui
