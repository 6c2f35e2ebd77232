// The sweep view (docs/sweeps.md, docs/gui.md "Sweeps"): a summary line (the tasks by state, the
// slots that fired first most often), a variant filter, the first-fire sort, and the task x fold
// table; double-clicking a task's fold opens that run in the usual views.
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QWidget>

#include "models/sweep_model.h"

namespace nanscope::gui {

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SweepPanel(QWidget* parent = nullptr);
  SweepModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QString summary() const { return summary_->text(); }
  void setStatus(SweepStatusPtr s);
  void filterVariant(const QString& variant);  // empty: every variant
  void sortByFirstFire();

 Q_SIGNALS:
  void runOpened(const QString& run_file, int fold);
  // Why a double-clicked task opens nothing (it has not started, or left no run file).
  void nothingToOpen(const QString& why);

 private:
  SweepModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLabel* summary_;
  QComboBox* variant_;
};

}  // namespace nanscope::gui
