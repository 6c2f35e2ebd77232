// The workbench window. It only wires docks to the models, the plots and the engine thread.
#pragma once

#include <QLabel>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QThread>

#include "controller/engine_controller.h"
#include "models/slot_grid_model.h"
#include "models/slot_table_model.h"

class QComboBox;
class QTableView;
class QAction;

namespace nanscope::gui {

class GridPlot;
class MetricsPlot;
class InspectorWidget;
class InjectionPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(EngineSettings settings, QWidget* parent = nullptr);
  ~MainWindow() override;

  // UI_ side: what the user does.
  void UI_configure(const QString& scenario);
  void UI_stepPhase();
  void UI_step();
  void UI_run(EngineController::RunKind kind);
  void UI_pause();
  void UI_stop();
  void UI_toggleBreakOnSelected();
  void UI_selectSlot(int slot);
  void UI_openRunFile(const QString& path);
  void UI_openDump(const QString& path);
  void UI_inject(const QString& spec);
  // Shows a snapshot (from the engine thread, a file, or a benchmark); stale ones are dropped.
  void UI_showSnapshot(SnapshotPtr s);

  // For tests and screenshots.
  SlotGridModel* foldGrid() const { return fold_grid_; }
  SlotGridModel* stepGrid() const { return step_grid_; }
  SlotTableModel* slotTable() const { return slot_table_; }
  QAbstractItemModel* events() const;
  SnapshotPtr snapshot() const { return snapshot_; }
  InspectorWidget* inspector() const { return inspector_; }
  QString entryText() const { return entry_->text(); }
  QString backwardText() const { return backward_->text(); }
  bool running() const { return running_; }
  int selectedSlot() const { return selected_slot_; }

 Q_SIGNALS:
  void snapshotShown(quint64 seq);
  void errorShown(const QString& message);

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildActions();
  void buildDocks();
  void onError(const QString& message);
  void setLiveControlsEnabled(bool on);
  void addRecent(const QString& path);

  QThread engine_thread_;
  EngineController* ctrl_ = nullptr;
  EngineSettings settings_;
  SnapshotPtr snapshot_;
  quint64 last_seq_ = 0;
  bool offline_ = false;
  bool running_ = false;
  int selected_slot_ = -1;

  SlotGridModel* fold_grid_;
  SlotGridModel* step_grid_;
  SlotTableModel* slot_table_;
  class EventsModel* events_;
  GridPlot* fold_plot_;
  GridPlot* step_plot_;
  MetricsPlot* metrics_;
  InspectorWidget* inspector_;
  InjectionPanel* injection_;
  QPlainTextEdit* config_view_;
  QComboBox* scenario_;
  QTableView* slot_view_;
  QLabel *entry_, *backward_, *status_backend_, *status_position_, *status_rate_;
  QList<QAction*> live_actions_;
  QAction* graph_action_ = nullptr;
  QMenu* recent_menu_ = nullptr;
};

}  // namespace nanscope::gui
