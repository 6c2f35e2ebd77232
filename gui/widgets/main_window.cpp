#include "widgets/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QHeaderView>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

#include "models/offline.h"
#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "session/scenarios.h"
#include "widgets/injection_panel.h"
#include "widgets/inspector_widget.h"

namespace nanscope::gui {


MainWindow::MainWindow(EngineSettings settings, QWidget* parent)
    : QMainWindow(parent), settings_(std::move(settings)) {
  qRegisterMetaType<SnapshotPtr>();
  qRegisterMetaType<BufferStatsPtr>();
  qRegisterMetaType<EngineSettings>();
  setWindowTitle("nanscope");
  fold_grid_ = new SlotGridModel(SlotGridModel::Folds, this);
  step_grid_ = new SlotGridModel(SlotGridModel::Steps, this);
  slot_table_ = new SlotTableModel(this);
  events_ = new EventsModel(this);

  ctrl_ = new EngineController;
  ctrl_->moveToThread(&engine_thread_);
  connect(&engine_thread_, &QThread::finished, ctrl_, &QObject::deleteLater);
  connect(ctrl_, &EngineController::snapshotReady, this, &MainWindow::UI_showSnapshot, Qt::QueuedConnection);
  connect(ctrl_, &EngineController::errorOccurred, this, &MainWindow::onError, Qt::QueuedConnection);
  connect(ctrl_, &EngineController::inspectReady, this,
          [this](BufferStatsPtr s) { inspector_->setStats(std::move(s)); }, Qt::QueuedConnection);
  connect(ctrl_, &EngineController::runStateChanged, this, [this](bool r) { running_ = r; }, Qt::QueuedConnection);
  engine_thread_.start();

  // The two grids side by side share their rows: slots in dataflow order.
  auto* split = new QSplitter;
  fold_plot_ = new GridPlot(fold_grid_);
  fold_plot_->xAxis->setLabel("slot x fold");
  fold_plot_->setMinimumSize(330, 480);
  step_plot_ = new GridPlot(step_grid_);
  step_plot_->setRowLabelsVisible(false);
  step_plot_->xAxis->setLabel("slot x step (selected fold)");
  split->addWidget(fold_plot_);
  split->addWidget(step_plot_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  // Colour key of the grid cells.
  QString key;
  for (int c = 0; c < kCellNotRun; ++c)
    key += QString("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2&nbsp;&nbsp;&nbsp;")
               .arg(cell_color(c).name(), cell_text(c));
  auto* legend = new QLabel(key + "&nbsp;&nbsp;black frame: entry point");
  auto* central = new QWidget;
  auto* central_layout = new QVBoxLayout(central);
  central_layout->setContentsMargins(0, 0, 0, 0);
  central_layout->addWidget(split, 1);
  central_layout->addWidget(legend);
  setCentralWidget(central);
  buildDocks();
  buildActions();
  connect(slot_table_, &SlotTableModel::breakpointToggled, this, [this](int slot, bool on) {
    QMetaObject::invokeMethod(ctrl_, [c = ctrl_, slot, on] { c->RT_setBreakpoint(slot, on); }, Qt::QueuedConnection);
  });
  connect(slot_table_, &SlotTableModel::checkToggled, this, [this](int slot, bool on) {
    QMetaObject::invokeMethod(ctrl_, [c = ctrl_, slot, on] { c->RT_setChecked(slot, on); }, Qt::QueuedConnection);
  });
  connect(fold_plot_, &GridPlot::cellClicked, this, [this](int slot, int column) {
    step_grid_->setFold(column);
    UI_selectSlot(slot);
  });
  connect(step_plot_, &GridPlot::cellClicked, this, [this](int slot, int) { UI_selectSlot(slot); });

  QSettings qs("nanscope", "nanscope");
  restoreGeometry(qs.value("window/geometry").toByteArray());
  restoreState(qs.value("window/state").toByteArray());
  UI_configure(settings_.scenario);
}

MainWindow::~MainWindow() {
  ctrl_->requestPause();
  engine_thread_.quit();
  engine_thread_.wait();
}

QAbstractItemModel* MainWindow::events() const { return events_; }

void MainWindow::buildDocks() {
  auto dock = [this](const QString& title, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(title);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  slot_view_ = new QTableView;
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(slot_table_);
  slot_view_->setModel(proxy);
  slot_view_->setSortingEnabled(false);
  slot_view_->verticalHeader()->setVisible(false);
  slot_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  slot_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  slot_view_->setMinimumWidth(460);
  slot_view_->hideColumn(SlotTableModel::Phase);
  connect(slot_view_, &QTableView::clicked, this, [this, proxy](const QModelIndex& i) {
    UI_selectSlot(proxy->mapToSource(i).data(Qt::UserRole).toInt());
  });
  dock("Slots", slot_view_, Qt::LeftDockWidgetArea);

  inspector_ = new InspectorWidget;
  inspector_->setMinimumWidth(340);
  dock("Buffer inspector", inspector_, Qt::RightDockWidgetArea);

  metrics_ = new MetricsPlot;
  metrics_->setMinimumSize(640, 180);
  dock("Metrics", metrics_, Qt::BottomDockWidgetArea);

  auto* events_view = new QTableView;
  events_view->setModel(events_);
  events_view->verticalHeader()->setVisible(false);
  events_view->horizontalHeader()->setStretchLastSection(true);
  connect(events_view, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
    const QString path = i.data(EventsModel::DumpPathRole).toString();
    if (!path.isEmpty()) UI_openDump(path);
  });
  dock("Events", events_view, Qt::BottomDockWidgetArea);

  injection_ = new InjectionPanel;
  connect(injection_, &InjectionPanel::injectRequested, this, &MainWindow::UI_inject);
  auto* inject_dock = dock("Fault injection", injection_, Qt::LeftDockWidgetArea);

  auto* summary = new QWidget;
  auto* lay = new QVBoxLayout(summary);
  entry_ = new QLabel("entry point: -");
  backward_ = new QLabel("backward localisation: -");
  for (QLabel* l : {entry_, backward_}) {
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setWordWrap(true);
    lay->addWidget(l);
  }
  config_view_ = new QPlainTextEdit;
  config_view_->setReadOnly(true);
  lay->addWidget(config_view_);
  auto* summary_dock = dock("Entry point and config", summary, Qt::LeftDockWidgetArea);
  tabifyDockWidget(inject_dock, summary_dock);
  summary_dock->raise();

  status_backend_ = new QLabel;
  status_position_ = new QLabel;
  status_rate_ = new QLabel;
  statusBar()->addWidget(status_backend_);
  statusBar()->addWidget(status_position_, 1);
  statusBar()->addPermanentWidget(status_rate_);
}

void MainWindow::buildActions() {
  auto* file = menuBar()->addMenu("&File");
  auto* open = file->addAction("&Open run file...", QKeySequence::Open, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open run file or dump", {}, "HDF5 (*.h5)");
    if (p.isEmpty()) return;
    if (p.endsWith("run.h5")) UI_openRunFile(p);
    else UI_openDump(p);
  });
  recent_menu_ = file->addMenu("Recent");
  for (const QString& r : QSettings("nanscope", "nanscope").value("recentFiles").toStringList())
    recent_menu_->addAction(r, this, [this, r] { UI_openRunFile(r); });
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  auto* run = menuBar()->addMenu("&Run");
  auto* tb = addToolBar("Step controls");
  tb->setObjectName("controls");
  scenario_ = new QComboBox;
  for (const auto& s : scenarios()) scenario_->addItem(QString::fromStdString(s.name));
  scenario_->setCurrentText(settings_.scenario);
  scenario_->setToolTip("scenario preset (restarts the run)");
  connect(scenario_, &QComboBox::textActivated, this, &MainWindow::UI_configure);
  tb->addWidget(scenario_);
  auto add = [&](const QString& text, QKeySequence key, auto fn, bool live = true) {
    QAction* a = run->addAction(text, key, this, fn);
    tb->addAction(a);
    if (live) live_actions_ << a;
    return a;
  };
  add("Step phase", QKeySequence(Qt::Key_F11), [this] { UI_stepPhase(); });
  add("Step", QKeySequence(Qt::Key_F10), [this] { UI_step(); });
  add("Run to fold end", QKeySequence(), [this] { UI_run(EngineController::UntilFoldEnd); });
  add("Run until fire", QKeySequence(Qt::Key_F5), [this] { UI_run(EngineController::UntilFire); });
  add("Run", QKeySequence(Qt::CTRL | Qt::Key_F5), [this] { UI_run(EngineController::UntilEnd); });
  add("Pause", QKeySequence(Qt::Key_Pause), [this] { UI_pause(); });
  add("Stop", QKeySequence(Qt::SHIFT | Qt::Key_F5), [this] { UI_stop(); });
  add("Break on slot", QKeySequence(Qt::Key_F9), [this] { UI_toggleBreakOnSelected(); });
  graph_action_ = run->addAction("Graph mode (CUDA)");
  graph_action_->setCheckable(true);
  graph_action_->setChecked(settings_.graph);
  graph_action_->setToolTip("run whole steps as one captured CUDA graph; phase steps stay ungraphed");
  connect(graph_action_, &QAction::toggled, this, [this](bool on) {
    settings_.graph = on;
    QMetaObject::invokeMethod(ctrl_, [c = ctrl_, on] { c->RT_setGraph(on); }, Qt::QueuedConnection);
  });
  (void)open;
}

void MainWindow::UI_configure(const QString& scenario) {
  ctrl_->requestPause();  // a running loop stops first; the new run replaces it
  offline_ = false;
  setLiveControlsEnabled(true);
  settings_.scenario = scenario;
  last_seq_ = 0;
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_, s = settings_] { c->RT_configure(s); }, Qt::QueuedConnection);
}

void MainWindow::UI_stepPhase() {
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_] { c->RT_stepPhase(); }, Qt::QueuedConnection);
}
void MainWindow::UI_step() {
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_] { c->RT_step(); }, Qt::QueuedConnection);
}
void MainWindow::UI_run(EngineController::RunKind kind) {
  running_ = true;
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_, kind] { c->RT_run(kind); }, Qt::QueuedConnection);
}
void MainWindow::UI_pause() { ctrl_->requestPause(); }
void MainWindow::UI_stop() {
  ctrl_->requestPause();
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_] { c->RT_stop(); }, Qt::QueuedConnection);
}
void MainWindow::UI_inject(const QString& spec) {
  ctrl_->requestPause();
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_, spec] { c->RT_addInjection(spec); }, Qt::QueuedConnection);
}

void MainWindow::UI_toggleBreakOnSelected() {
  if (selected_slot_ < 0 || !snapshot_) return;
  const bool on = !snapshot_->breakpoints.count(selected_slot_);
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_, s = selected_slot_, on] { c->RT_setBreakpoint(s, on); },
                            Qt::QueuedConnection);
}

void MainWindow::UI_selectSlot(int slot) {
  selected_slot_ = slot;
  const auto& order = dataflow_order();
  const int row = static_cast<int>(std::find(order.begin(), order.end(), slot) - order.begin());
  slot_view_->selectRow(row);
  if (offline_) {
    // Offline: the slot's buffer from the dump of its first fire in the shown fold, if any.
    if (!snapshot_) return;
    for (const auto& e : snapshot_->events)
      if (e.kind == "first_fire" && e.fold == step_grid_->fold() && !e.dump.isEmpty()) {
        const auto& f = snapshot_->folds[static_cast<std::size_t>(e.fold)].slots[slot];
        if (f.first_step == e.step) {
          UI_openDump(e.dump);
          return;
        }
      }
    return;
  }
  QMetaObject::invokeMethod(ctrl_, [c = ctrl_, slot] { c->RT_inspect(slot); }, Qt::QueuedConnection);
}

void MainWindow::UI_openRunFile(const QString& path) {
  try {
    SnapshotPtr s = load_run_snapshot(path);
    ctrl_->requestPause();
    offline_ = true;
    setLiveControlsEnabled(false);
    last_seq_ = 0;
    UI_showSnapshot(s);
    addRecent(path);
    setWindowTitle("nanscope — " + path);
  } catch (const std::exception& e) {
    onError(QString::fromStdString(e.what()));
  }
}

void MainWindow::UI_openDump(const QString& path) {
  try {
    const int slot = selected_slot_;
    BufferStatsPtr s = load_dump_stats(path, slot);
    if (!s->exists) s = load_dump_stats(path);  // the selected slot is not in this dump
    inspector_->setStats(s);
  } catch (const std::exception& e) {
    onError(QString::fromStdString(e.what()));
  }
}

void MainWindow::UI_showSnapshot(SnapshotPtr s) {
  if (s->seq != 0 && s->seq < last_seq_) return;  // stale
  last_seq_ = s->seq;
  snapshot_ = s;
  running_ = s->running;
  fold_grid_->setSnapshot(s);
  const int fold = s->step_fold.empty() ? 0 : s->step_fold.back();
  step_grid_->setSnapshot(s);
  if (step_grid_->fold() != fold && !offline_) step_grid_->setFold(fold);
  else if (offline_) step_grid_->setFold(s->entry ? s->entry->fold : fold);
  step_plot_->xAxis->setLabel(QString("slot x step (fold %1)").arg(step_grid_->fold()));
  slot_table_->setSnapshot(s);
  events_->setSnapshot(s);
  metrics_->setSnapshot(s);
  if (s->entry) {
    entry_->setText(QString("entry point: slot %1 %2 (fold %3, step %4)")
                        .arg(s->entry->slot).arg(QString::fromUtf8(slot_info(s->entry->slot).name.data()))
                        .arg(s->entry->fold).arg(s->entry->step));
    fold_plot_->setEntry(s->entry->slot, s->entry->fold);
    step_plot_->setEntry(step_grid_->fold() == s->entry->fold ? s->entry->slot : -1, s->entry->step);
  } else {
    entry_->setText("entry point: - (nothing fired)");
    fold_plot_->setEntry(-1, -1);
    step_plot_->setEntry(-1, -1);
  }
  backward_->setText(s->backward_entry
                         ? QString("backward localisation: %1 (slot %2 fired first, fold %3, step %4)")
                               .arg(QString::fromUtf8(backward_stage_description(s->backward_entry->slot))).arg(s->backward_entry->slot)
                               .arg(s->backward_entry->fold).arg(s->backward_entry->step)
                         : QString("backward localisation: -"));
  if (s->halt) entry_->setText(entry_->text() + QString("\nstopped: %1 at fold %2, step %3").arg(s->halt->kind).arg(s->halt->fold).arg(s->halt->step));
  if (config_view_->toPlainText() != s->config_toml) config_view_->setPlainText(s->config_toml);
  status_backend_->setText(QString("%1 [%2]%3").arg(s->backend, s->device, s->graph ? " graph" : ""));
  graph_action_->setEnabled(!s->offline && s->backend == "cuda");
  status_position_->setText(s->offline ? QString("offline: %1").arg(s->source)
                                       : QString("%1 fold %2/%3, step %4/%5, next phase %6")
                                             .arg(s->scenario).arg(s->fold).arg(s->folds_total)
                                             .arg(s->step).arg(s->steps_per_fold).arg(s->next_phase));
  status_rate_->setText(s->running ? QString("%1 steps/s").arg(s->steps_per_second, 0, 'f', 1) : QString());
  Q_EMIT snapshotShown(s->seq);
}

void MainWindow::onError(const QString& message) {
  // Non-modal: the engine and the window go on; the box names the file, key or slot.
  auto* box = new QMessageBox(QMessageBox::Warning, "nanscope", message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setObjectName("errorBox");
  box->open();
  Q_EMIT errorShown(message);
}

void MainWindow::setLiveControlsEnabled(bool on) {
  for (QAction* a : live_actions_) a->setEnabled(on);
  injection_->setEnabled(on);
}

void MainWindow::addRecent(const QString& path) {
  QSettings qs("nanscope", "nanscope");
  QStringList r = qs.value("recentFiles").toStringList();
  r.removeAll(path);
  r.prepend(path);
  while (r.size() > 8) r.removeLast();
  qs.setValue("recentFiles", r);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings qs("nanscope", "nanscope");
  qs.setValue("window/geometry", saveGeometry());
  qs.setValue("window/state", saveState());
  QMainWindow::closeEvent(e);
}

}  // namespace nanscope::gui
