// The workbench window. It wires docks to the models, the plots and the engine thread, keeps the
// picture it shows (models/snapshot.h) and says what it shows (viewState, --state-json).
//
// Two modes: live (the engine thread's session) and offline (a run file). Opening a run file puts
// the window offline, and no live update touches it until the user goes back to live (File > Back
// to live run); a window started on a run file builds no live session at all.
#pragma once

#include <QJsonObject>
#include <QLabel>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QThread>
#include <functional>
#include <set>

#include "controller/engine_controller.h"
#include "models/events_model.h"
#include "models/slot_grid_model.h"
#include "models/slot_table_model.h"
#include "models/sweep_model.h"
#include "widgets/view_selection.h"

class QComboBox;
class QStackedWidget;
class QProgressBar;
class QToolButton;
class QTableView;
class QAction;
class QLineEdit;
class QMenu;
class QSortFilterProxyModel;

namespace nanscope::gui {

// A run file as the window's title names it (main_window_view.cpp).
QString run_file_title(const QString& path);

class GridPlot;
class MagnitudePlot;
class ComparePanel;
class MetricsPlot;
class InspectorWidget;
class InjectionPanel;
class SweepPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // `open_file`: start offline on this run file (no live session is built); empty: live.
  explicit MainWindow(EngineSettings settings, const QString& open_file = {},
                      QWidget* parent = nullptr);
  ~MainWindow() override;

  // UI_ side: what the user does.
  void UI_configure(const QString& scenario);
  void UI_useDefaults();  // after a bad config: the scenario without --config and --set
  void UI_useCpu();       // after a device error: the same run on the CPU backend
  void UI_stepPhase();
  void UI_step();
  void UI_run(EngineController::RunKind kind);
  void UI_pause();
  void UI_stop();
  void UI_toggleBreakOnSelected();
  void UI_selectSlot(int slot);
  void UI_selectFold(int fold);
  void UI_openFile(const QString& path);     // a run file or a dump, told apart by content
  void UI_openRunFile(const QString& path);  // the same (kept for scripts and tests)
  void UI_openDump(const QString& path, int slot = -1);
  void UI_goLive();
  void UI_inject(const QString& spec);
  // Navigation: the run's entry point, the next or previous first fire (run order), a cell.
  void UI_jumpToEntry();
  void UI_nextFire(bool forward = true);
  void UI_selectCell(int slot, int fold, int step);
  void UI_zoomToFit();
  void UI_setFollow(bool on);
  // The slot x step grid's view: the state (cell codes) or the magnitude (log10 max |value|).
  void UI_showMagnitude(bool on);
  // Step compare in the selected fold: two steps the user picked, or the default pair back.
  void UI_compareSteps(int step_a, int step_b);
  void UI_compareDefault();
  // Navigation and export (main_window_tools.cpp). The selected slot's cell at (fold, step); fold
  // -1: the selected fold. The text form is "STEP" or "FOLD:STEP", as typed in the go-to box.
  void UI_goToStep(int fold, int step);
  // Time travel: the selected slot at the step before the selected one (Shift+F10).
  void UI_stepBack();
  // Step compare, element by element: the selected slot's buffers at steps A and B, recomputed.
  void UI_compareBuffers();
  // A sweep directory (docs/sweeps.md): the sweep view, refreshed while its tasks run.
  void UI_openSweep(const QString& dir);
  SweepPanel* sweepPanel() const { return sweep_; }
  bool sweepLoading() const { return !sweep_dir_.isEmpty() && !sweep_loaded_; }
  // The selected cell's buffer is still on its way: a dump being read or a recomputation.
  bool inspectPending() const;
  bool UI_goTo(const QString& text);
  // The slot table shows only the slots whose name contains `text` (any case); "" shows all.
  void UI_setSlotFilter(const QString& text);
  // The selected cell as text (fold, step, slot, state, kinds, health), as copied to the clipboard.
  QString cellSummary() const;
  void UI_copyCell();
  // A view file (.nsview, JSON): the run file, the selection, the zoom, the series and the dock
  // layout, for a colleague to open on the same run file. Opening one opens its run file first.
  bool saveViewFile(const QString& path, QString* error = nullptr) const;
  static bool isViewFile(const QString& path);  // JSON by its first byte, or named .nsview
  void UI_openViewFile(const QString& path);
  // Applies an update from the engine thread (or a benchmark); while offline, live ones are
  // ignored.
  void UI_applyUpdate(UpdatePtr u);

  // What the window shows, for scripts and tests (docs/gui.md lists the fields).
  QJsonObject viewState() const;
  bool writeViewState(const QString& path) const;

  // For tests and screenshots.
  SlotGridModel* foldGrid() const { return fold_grid_; }
  SlotGridModel* stepGrid() const { return step_grid_; }
  SlotTableModel* slotTable() const { return slot_table_; }
  QAbstractItemModel* events() const;
  SnapshotPtr snapshot() const { return have_view_ ? view_ : nullptr; }
  InspectorWidget* inspector() const { return inspector_; }
  MetricsPlot* metrics() const { return metrics_; }
  GridPlot* foldPlot() const { return fold_plot_; }
  GridPlot* stepPlot() const { return step_plot_; }
  MagnitudePlot* magnitudePlot() const { return magnitude_plot_; }
  bool magnitudeShown() const;
  ComparePanel* comparePanel() const { return compare_; }
  QString entryText() const { return entry_->text(); }
  QString backwardText() const { return backward_->text(); }
  QString statusText() const;
  QString stepGridLabel() const;
  bool running() const { return running_; }
  bool offline() const { return offline_; }
  bool hasLiveSession() const { return have_live_; }
  int selectedSlot() const { return sel_->slot(); }
  int selectedFold() const { return sel_->fold(); }
  QList<QAction*> liveActions() const { return live_actions_; }
  QAction* graphAction() const { return graph_action_; }
  QAction* followAction() const { return follow_action_; }
  int selectedStep() const { return sel_->step(); }
  QProgressBar* progressBar() const;
  QString armedText() const;
  EngineController* controller() const { return ctrl_; }

 Q_SIGNALS:
  void snapshotShown(quint64 seq);
  void errorShown(const QString& message);

 public:
  // The class of the last error shown (ErrorClass): scripts exit with nanscope-run's code for it.
  int lastErrorClass() const { return last_error_class_; }

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildActions();  // main_window_actions.cpp: menus, toolbar, status bar, navigation
  void buildViewMenu();
  void buildNavigateTools();
  void buildHealthSeriesMenu(QMenu* menu);
  QWidget* buildSlotsPanel(QSortFilterProxyModel* proxy);
  void applyViewFile(const QJsonObject& v);
  void announceTrips(std::size_t first_new_event);
  void centreStep(int step);
  void buildHelpMenu();
  QWidget* buildMetricsPanel();
  void buildStatusBar();
  void connectNavigation();
  void showShortcuts();
  void showAbout();
  // Asks before a restart throws away a run's history; runs `then` if the user agrees (or there
  // is no history).
  void confirmRestart(const QString& what, std::function<void()> then);
  void buildDocks();
  void onError(int error_class, const QString& message);
  void onSessionLost(const QString& reason);
  void onRunFileLoaded(UpdatePtr u);
  void refreshViews(bool reset);
  void updateControls();
  void updateProgress();  // the status bar's texts and progress
  struct StatusMode statusMode() const;
  void updateEntries();
  void updateCompare();
  void showMessage(const QString& text);
  void addRecent(const QString& path);
  void post(std::function<void(EngineController*)> f);

  QThread engine_thread_;
  EngineController* ctrl_ = nullptr;
  EngineSettings settings_;
  std::shared_ptr<Snapshot> view_ = std::make_shared<Snapshot>();
  bool have_view_ = false;
  quint64 last_seq_ = 0;
  std::uint64_t epoch_ = 0;
  bool offline_ = false;
  bool have_live_ = false;
  bool running_ = false;
  // The inspector: which buffer the selection asks for, so that a buffer of another cell (a newer
  // live step, a dump of a file no longer shown) is never put on screen (main_window_inspect.cpp).
  struct InspectWanted {
    int slot = -1, fold = -1, step = -1;  // step -1 with `live`: the newest step, followed
    bool live = false;
    QString dump;           // absolute path of the dump asked for
    bool any_slot = false;  // a dump opened by hand: whatever slot it shows
    int travel = 0;         // the time-travel request asked for (0: none)
  };
  int travel_generation_ = 0;
  QVariantMap buffer_compare_;
  SweepPanel* sweep_ = nullptr;
  QString sweep_dir_;
  bool sweep_loaded_ = false;
  int pending_sweep_fold_ = -1;  // a task's run opened from the sweep view: the fold to select
  QTimer* sweep_timer_ = nullptr;
  void onSweepRead(const QString& dir, SweepStatusPtr status);
  QJsonValue sweepState() const;  // the element-wise compare asked for, then its answer
  void onBuffersCompared(const QVariantMap& result);
  void requestTravel();
  void onTravelProgress(int generation, int done, int total);
  InspectWanted inspect_want_;
  int last_error_class_ = -1;
  std::set<EventKind> walked_;  // the event kinds F8 and Shift+F8 walk (View > F8 walks)
  void inspectSelection();
  void markSelection();  // the table and the grids show the selected cell
  void openPath(const QString& path, const QString& what);
  void fillRecentMenu();
  void onInspectReady(BufferStatsPtr stats);
  // `why`: the reason no buffer is shown (default: none is kept).
  void showNoBuffer(const QString& why = {});
  // The slot's first-fire dump at (fold, step), if that is where it first fired in the fold.
  const SnapshotEvent* dumpOfCell(int slot, int fold, int step) const;
  // The newest finished step (fold, step in fold); (-1, -1) before the first.
  std::pair<int, int> newestCell() const;
  // The selected cell, the fold's pick and step compare's pair: the table and the grids mark it
  // whenever it changes.
  ViewSelection* sel_;
  bool syncing_ranges_ = false;
  QString problem_;  // why there is no live session, when there is none

  SlotGridModel* fold_grid_;
  SlotGridModel* step_grid_;
  SlotTableModel* slot_table_;
  class EventsModel* events_;
  GridPlot* fold_plot_;
  GridPlot* step_plot_;
  MagnitudePlot* magnitude_plot_;
  QStackedWidget* step_views_;
  QToolButton *show_state_, *show_magnitude_;
  ComparePanel* compare_;
  QString compare_how_;  // how the compared steps were chosen (the state file says it)
  MetricsPlot* metrics_;
  InspectorWidget* inspector_;
  InjectionPanel* injection_;
  QPlainTextEdit* config_view_;
  QComboBox* scenario_;
  QTableView* slot_view_;
  QLabel *entry_, *backward_;
  class RunStatusBar* status_ = nullptr;
  QAction* follow_action_ = nullptr;
  QList<QAction*> live_actions_;
  QAction* graph_action_ = nullptr;
  QAction* pause_action_ = nullptr;
  QList<QAction*> live_anytime_;  // step controls enabled while a run goes on (Stop, Break on slot)
  QAction* live_action_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QSortFilterProxyModel* slot_proxy_ = nullptr;
  QLineEdit* slot_filter_ = nullptr;
  QLineEdit* go_to_ = nullptr;
  // A view file waiting for its run file to load (applied when it has).
  std::optional<QJsonObject> pending_view_;
};

}  // namespace nanscope::gui
