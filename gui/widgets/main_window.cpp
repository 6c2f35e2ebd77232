// MainWindow: construction, docks, actions and the user's commands. What it shows (updates, the
// views, the state file) is in main_window_view.cpp.
#include "widgets/main_window.h"
#include "widgets/sweep_panel.h"

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <cctype>

#include "plots/grid_plot.h"
#include "plots/magnitude_plot.h"
#include "plots/metrics_plot.h"
#include "session/scenarios.h"
#include "widgets/compare_panel.h"
#include "widgets/injection_panel.h"
#include "widgets/inspector_widget.h"

namespace nanscope::gui {

MainWindow::MainWindow(EngineSettings settings, const QString& open_file, QWidget* parent)
    : QMainWindow(parent), settings_(std::move(settings)) {
  qRegisterMetaType<SnapshotPtr>();
  qRegisterMetaType<UpdatePtr>();
  qRegisterMetaType<BufferStatsPtr>();
  qRegisterMetaType<EngineSettings>();
  qRegisterMetaType<SweepStatusPtr>();
  setWindowTitle("nanscope");
  sel_ = new ViewSelection(this);
  fold_grid_ = new SlotGridModel(SlotGridModel::Folds, this);
  step_grid_ = new SlotGridModel(SlotGridModel::Steps, this);
  slot_table_ = new SlotTableModel(this);
  events_ = new EventsModel(this);
  fold_grid_->setView(view_.get());
  step_grid_->setView(view_.get());
  slot_table_->setView(view_.get());
  events_->setView(view_.get());

  ctrl_ = new EngineController;
  ctrl_->setFileValidator(settings_.validator);
  ctrl_->moveToThread(&engine_thread_);
  connect(&engine_thread_, &QThread::finished, ctrl_, &QObject::deleteLater);
  connect(ctrl_, &EngineController::updateReady, this, &MainWindow::UI_applyUpdate,
          Qt::QueuedConnection);
  connect(ctrl_, &EngineController::runFileLoaded, this, &MainWindow::onRunFileLoaded,
          Qt::QueuedConnection);
  connect(ctrl_, &EngineController::errorOccurred, this, &MainWindow::onError,
          Qt::QueuedConnection);
  connect(ctrl_, &EngineController::sessionLost, this, &MainWindow::onSessionLost,
          Qt::QueuedConnection);
  connect(ctrl_, &EngineController::inspectReady, this, &MainWindow::onInspectReady,
          Qt::QueuedConnection);
  connect(ctrl_, &EngineController::travelProgress, this, &MainWindow::onTravelProgress,
          Qt::QueuedConnection);
  connect(ctrl_, &EngineController::sweepRead, this, &MainWindow::onSweepRead,
          Qt::QueuedConnection);
  connect(
      ctrl_, &EngineController::runStateChanged, this,
      [this](bool r) {
        running_ = r;
        updateControls();
      },
      Qt::QueuedConnection);
  engine_thread_.start();

  // The two grids side by side share their rows: slots in dataflow order. Side by side in one
  // splitter they are always one height, and their plot areas keep the same margins
  // (plots/row_axis.h), so a row is at one height in both; the minimum height is the splitter's.
  auto* split = new QSplitter;
  split->setMinimumHeight(240);
  fold_plot_ = new GridPlot(fold_grid_);
  fold_plot_->xAxis->setLabel("slot x fold");
  fold_plot_->setMinimumWidth(280);
  step_plot_ = new GridPlot(step_grid_);
  step_plot_->setRowLabelsVisible(false);
  step_plot_->xAxis->setLabel("slot x step (fold 0)");
  // Beside the state view, the magnitude view of the same columns (the buttons under the grids
  // switch between them; they keep the same columns, selection and marks).
  magnitude_plot_ = new MagnitudePlot;
  magnitude_plot_->setView(view_.get());
  magnitude_plot_->xAxis->setLabel(step_plot_->xAxis->label());
  step_views_ = new QStackedWidget;
  step_views_->addWidget(step_plot_);
  step_views_->addWidget(magnitude_plot_);
  split->addWidget(fold_plot_);
  split->addWidget(step_views_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  // Colour key of the grid cells (each swatch framed, so a light one is still seen); an item never
  // breaks across lines.
  auto item = [](const QString& html) {
    return "<span style='white-space:nowrap'>" + html + "</span>&nbsp;&nbsp; ";
  };
  QString key;
  for (int c = 0; c < kCellNotRun; ++c)
    key += item(QString("<span style='background:%1; border:1px solid "
                        "#555'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2")
                    .arg(cell_color(c).name(), cell_text(c)));
  key += item("black frame: entry point");
  key += item("<span style='color:" + jump_outline().name() + "'><b>- - -</b></span>&nbsp;jumped");
  key += item("magnitude: white unmeasured, <span style='color:" + cell_color(kCellNaN).name() +
              "'><b>&#9632;</b></span>&nbsp;non-finite values");
  auto* legend = new QLabel(key);
  legend->setObjectName("cellColourKey");
  legend->setWordWrap(true);
  show_state_ = new QToolButton;
  show_state_->setText("State");
  show_state_->setToolTip("the slot x step grid shows each cell's state (Ctrl+1)");
  show_magnitude_ = new QToolButton;
  show_magnitude_->setText("Magnitude");
  show_magnitude_->setToolTip(
      "the slot x step grid shows log10 of each slot's largest finite |value| per step (Ctrl+2)");
  for (QToolButton* b : {show_state_, show_magnitude_}) {
    b->setCheckable(true);
    b->setAutoExclusive(true);
  }
  show_state_->setChecked(true);
  connect(show_state_, &QToolButton::clicked, this, [this] { UI_showMagnitude(false); });
  connect(show_magnitude_, &QToolButton::clicked, this, [this] { UI_showMagnitude(true); });
  auto* under = new QHBoxLayout;
  under->addWidget(new QLabel("step grid:"));
  under->addWidget(show_state_);
  under->addWidget(show_magnitude_);
  under->addWidget(legend, 1);
  auto* central = new QWidget;
  auto* central_layout = new QVBoxLayout(central);
  central_layout->setContentsMargins(0, 0, 0, 0);
  central_layout->addWidget(split, 1);
  central_layout->addLayout(under);
  setCentralWidget(central);
  buildDocks();
  buildActions();
  connect(slot_table_, &SlotTableModel::breakpointToggled, this, [this](int slot, bool on) {
    post([slot, on](EngineController* c) { c->RT_setBreakpoint(slot, on); });
  });
  connect(slot_table_, &SlotTableModel::checkToggled, this, [this](int slot, bool on) {
    post([slot, on](EngineController* c) { c->RT_setChecked(slot, on); });
  });
  connect(fold_plot_, &GridPlot::cellClicked, this, [this](int slot, int column) {
    sel_->setFoldChosen(true);
    UI_selectFold(column);
    UI_selectSlot(slot);
  });
  // A cell clicked is a cell of its fold: a live run going on into the next fold leaves it selected
  // (the grids and the inspector stay on it) rather than moving it to the same step of another.
  connect(step_plot_, &GridPlot::cellClicked, this, [this](int slot, int column) {
    sel_->setFoldChosen(true);
    sel_->setStep(column);
    UI_selectSlot(slot);
  });
  connectNavigation();
  connect(sel_, &ViewSelection::changed, this, &MainWindow::markSelection);
  connect(magnitude_plot_, &MagnitudePlot::cellClicked, this, [this](int slot, int column) {
    sel_->setFoldChosen(true);
    sel_->setStep(column);
    UI_selectSlot(slot);
  });
  // The magnitude view shows the state view's columns; its wheel zooms both.
  connect(step_plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          [this](const QCPRange& r) { magnitude_plot_->setColumnRange(r.lower, r.upper); });
  connect(magnitude_plot_, &MagnitudePlot::columnRangeRequested, this,
          [this](double lo, double hi) {
            UI_setFollow(false);
            step_plot_->setColumnRange(lo, hi);
            Q_EMIT step_plot_->columnRangeChangedByUser(step_plot_->xAxis->range().lower,
                                                        step_plot_->xAxis->range().upper);
          });
  connect(compare_, &ComparePanel::stepsPicked, this, &MainWindow::UI_compareSteps);
  connect(compare_, &ComparePanel::defaultPicked, this, &MainWindow::UI_compareDefault);
  connect(compare_, &ComparePanel::buffersAsked, this, &MainWindow::UI_compareBuffers);
  connect(ctrl_, &EngineController::buffersCompared, this, &MainWindow::onBuffersCompared,
          Qt::QueuedConnection);
  connect(compare_, &ComparePanel::slotPicked, this, [this](int slot, int step) {
    sel_->setStep(step);
    UI_selectSlot(slot);
  });
  connect(fold_plot_, &GridPlot::rowClicked, this, &MainWindow::UI_selectSlot);
  connect(step_plot_, &GridPlot::rowClicked, this, &MainWindow::UI_selectSlot);

  QSettings qs;
  restoreGeometry(qs.value("window/geometry").toByteArray());
  restoreState(qs.value("window/state").toByteArray());
  // The saved layout keeps the Sweep dock's place; the dock itself shows only with a sweep.
  findChild<QDockWidget*>("sweepDock")->hide();
  refreshViews(true);
  if (open_file.isEmpty())
    UI_configure(settings_.scenario);
  else  // offline from the start: no live session, no run folder. Opened once the event loop
        // runs, so that a refusal reaches whoever listens to errorShown (screenshot mode)
    QMetaObject::invokeMethod(
        this, [this, open_file] { UI_openFile(open_file); }, Qt::QueuedConnection);
}

MainWindow::~MainWindow() {
  ctrl_->requestPause();
  engine_thread_.quit();
  engine_thread_.wait();
}

QAbstractItemModel* MainWindow::events() const {
  return events_;
}

void MainWindow::post(std::function<void(EngineController*)> f) {
  QMetaObject::invokeMethod(
      ctrl_, [c = ctrl_, f = std::move(f)] { f(c); }, Qt::QueuedConnection);
}

void MainWindow::buildDocks() {
  // Docks are found by object name (scripts, tests, the saved layout), never by their titles.
  auto dock = [this](const char* name, const QString& title, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  slot_view_ = new QTableView;
  slot_view_->setObjectName("slotTable");
  auto* proxy = slot_proxy_ = new QSortFilterProxyModel(this);
  proxy->setSourceModel(slot_table_);
  slot_view_->setModel(proxy);
  slot_view_->setSortingEnabled(false);
  slot_view_->verticalHeader()->setVisible(false);
  slot_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  slot_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  slot_view_->setMinimumWidth(400);
  slot_view_->hideColumn(SlotTableModel::Phase);
  connect(slot_view_, &QTableView::clicked, this, [this, proxy](const QModelIndex& i) {
    UI_selectSlot(proxy->mapToSource(i).data(Qt::UserRole).toInt());
  });
  dock("slotsDock", "Slots", buildSlotsPanel(proxy), Qt::LeftDockWidgetArea);

  inspector_ = new InspectorWidget;
  inspector_->setMinimumWidth(300);
  inspector_->setTypeOf([this](int slot, const QString& name) {
    // A dump of another trainer's table names a slot that is not the shown run's.
    const bool shown_runs_slot =
        shown_table().contains(slot) &&
        (name.isEmpty() || QString::fromStdString(shown_slot(slot).name) == name);
    return shown_runs_slot ? slot_table_->typeOf(slot) : QString();
  });
  dock("inspectorDock", "Buffer inspector", inspector_, Qt::RightDockWidgetArea);
  connect(inspector_, &InspectorWidget::stepChosen, this, &MainWindow::UI_selectCell);

  metrics_ = new MetricsPlot;
  metrics_->setMinimumSize(560, 180);
  metrics_->setView(view_.get());
  auto* metrics_dock =
      dock("metricsDock", "Metrics", buildMetricsPanel(), Qt::BottomDockWidgetArea);

  compare_ = new ComparePanel;
  auto* compare_dock = dock("compareDock", "Step compare", compare_, Qt::BottomDockWidgetArea);

  auto* events_view = new QTableView;
  events_view->setObjectName("eventsView");
  events_view->setModel(events_);
  events_view->verticalHeader()->setVisible(false);
  events_view->horizontalHeader()->setStretchLastSection(true);
  events_view->setWordWrap(false);
  // Fixed widths (measuring every row's text would cost as much as the rows, and a long run can
  // hold thousands): the numbers narrow, the detail wide, its whole text in the tooltip.
  // (Wide enough for a 6-digit step and the longest slot name after its index.)
  for (auto [column, chars] : {std::pair{EventsModel::Fold, 6},
                               {EventsModel::Step, 9},
                               {EventsModel::Kind, 12},
                               {EventsModel::Entry, 25},
                               {EventsModel::Detail, 44}})
    events_view->setColumnWidth(column, events_view->fontMetrics().averageCharWidth() * chars);
  connect(events_view, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
    // The event's own cell (fold, step, slot) is selected, as a click in the grid would: the
    // inspector shows its dump (a first fire) or says what is kept of it (a watch trip).
    const int slot = i.data(EventsModel::SlotRole).toInt();
    const int fold = i.sibling(i.row(), EventsModel::Fold).data().toInt();
    const int step = i.sibling(i.row(), EventsModel::Step).data().toInt();
    if (slot < 0) {
      showMessage("this event names no slot");
      return;
    }
    sel_->setFoldChosen(true);
    UI_selectCell(slot, fold, step);
  });
  // Until something happens the table says what will appear in it.
  auto* no_events =
      new QLabel("nothing yet: first fires, halts, breakpoints and watch trips appear here");
  no_events->setObjectName("eventsEmpty");
  no_events->setAlignment(Qt::AlignCenter);
  no_events->setWordWrap(true);
  no_events->setStyleSheet("color: rgb(90, 90, 90);");
  no_events->setAttribute(Qt::WA_TransparentForMouseEvents);
  (new QVBoxLayout(events_view->viewport()))->addWidget(no_events);
  auto show_if_empty = [this, no_events] { no_events->setVisible(events_->rowCount() == 0); };
  connect(events_, &QAbstractItemModel::modelReset, this, show_if_empty);
  connect(events_, &QAbstractItemModel::rowsInserted, this, show_if_empty);
  connect(events_, &QAbstractItemModel::rowsRemoved, this, show_if_empty);
  // The sweep view: hidden until a sweep directory is opened (File > Open sweep).
  sweep_ = new SweepPanel;
  connect(sweep_, &SweepPanel::runOpened, this, [this](const QString& file, int fold) {
    pending_sweep_fold_ = fold;
    UI_openFile(file);
  });
  connect(sweep_, &SweepPanel::nothingToOpen, this, &MainWindow::showMessage);
  auto* sweep_dock = dock("sweepDock", "Sweep", sweep_, Qt::BottomDockWidgetArea);
  sweep_dock->hide();
  sweep_timer_ = new QTimer(this);
  sweep_timer_->setInterval(2000);
  connect(sweep_timer_, &QTimer::timeout, this, [this] {
    const QString dir = sweep_dir_;
    post([dir](EngineController* c) { c->RT_readSweep(dir); });
  });
  auto* events_dock = dock("eventsDock", "Events", events_view, Qt::BottomDockWidgetArea);
  tabifyDockWidget(compare_dock, events_dock);
  events_dock->raise();
  // The Events and Step compare docks wide enough for their columns' text at the default layout
  // (a 6-digit step, the longest slot name, a watch's detail, the start of a dump's name; the
  // whole texts in the tooltips) beside a vertical scroll bar; the metrics take the rest.
  const int events_width =
      events_view->fontMetrics().averageCharWidth() * (6 + 9 + 12 + 25 + 44 + 16) +
      events_view->style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 64;
  resizeDocks({metrics_dock, events_dock}, {640, events_width}, Qt::Horizontal);

  injection_ = new InjectionPanel;
  connect(injection_, &InjectionPanel::injectRequested, this, &MainWindow::UI_inject);
  auto* inject_dock = dock("injectionDock", "Fault injection", injection_, Qt::LeftDockWidgetArea);

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
  auto* summary_dock =
      dock("summaryDock", "Entry point and config", summary, Qt::LeftDockWidgetArea);
  tabifyDockWidget(inject_dock, summary_dock);
  summary_dock->raise();

  buildStatusBar();
}

void MainWindow::UI_configure(const QString& scenario) {
  // Picking the scenario already running does nothing (Stop starts it again).
  if (have_live_ && !offline_ && scenario == settings_.scenario && view_->scenario == scenario)
    return;
  ctrl_->requestPause();  // a running chain stops first; the new run replaces it
  offline_ = false;
  settings_.scenario = scenario;
  scenario_->setCurrentText(scenario);
  sel_->setFoldChosen(false);
  post([s = settings_](EngineController* c) { c->RT_configure(s); });
}

void MainWindow::UI_useDefaults() {
  settings_.sets.clear();
  settings_.config_file.clear();
  if (!find_scenario(settings_.scenario.toStdString())) settings_.scenario = "healthy";
  have_live_ = false;  // so that the same scenario name is configured again
  UI_configure(settings_.scenario);
}

void MainWindow::UI_useCpu() {
  settings_.cpu_only = true;
  have_live_ = false;
  UI_configure(settings_.scenario);
}

void MainWindow::UI_stepPhase() {
  post([](EngineController* c) { c->RT_stepPhase(); });
}
void MainWindow::UI_step() {
  post([](EngineController* c) { c->RT_step(); });
}
void MainWindow::UI_run(EngineController::RunKind kind) {
  running_ = true;
  updateControls();  // Pause (Esc) works at once, the step keys rest, before the engine answers
  ctrl_->clearPause();
  post([kind](EngineController* c) { c->RT_run(kind); });
}
void MainWindow::UI_pause() {
  ctrl_->requestPause();
}
void MainWindow::UI_stop() {
  ctrl_->requestPause();
  post([](EngineController* c) { c->RT_stop(); });
}
void MainWindow::UI_inject(const QString& spec) {
  ctrl_->requestPause();
  post([spec](EngineController* c) { c->RT_addInjection(spec); });
}

void MainWindow::UI_toggleBreakOnSelected() {
  if (sel_->slot() < 0) {
    showMessage("F9: select a slot first (table or grid), then F9 sets a breakpoint on it");
    return;
  }
  const bool on = !view_->breakpoints.count(sel_->slot());
  const int slot = sel_->slot();
  post([slot, on](EngineController* c) { c->RT_setBreakpoint(slot, on); });
  showMessage(QString("F9: breakpoint on slot %1 %2 %3")
                  .arg(slot)
                  .arg(QString::fromUtf8(shown_slot(slot).name.data()))
                  .arg(on ? "set" : "cleared"));
}

// A view file is JSON: told apart from HDF5 by its first byte, whatever its name.
bool MainWindow::isViewFile(const QString& path) {
  QFile probe(path);
  char first = 0;
  if (probe.open(QIODevice::ReadOnly))
    while (probe.getChar(&first) && std::isspace(static_cast<unsigned char>(first))) {
    }
  return first == '{' || QFileInfo(path).suffix() == "nsview";
}

void MainWindow::UI_openFile(const QString& path) {
  if (QFileInfo(path).isDir()) {  // a sweep directory
    UI_openSweep(path);
    return;
  }
  if (isViewFile(path)) {
    UI_openViewFile(path);
    return;
  }
  pending_view_.reset();  // a file opened by hand is shown as it is
  const int slot = sel_->slot();
  // A dump opened by hand is shown whatever its slot: the selection follows it.
  inspect_want_ = InspectWanted{};
  inspect_want_.dump = QFileInfo(path).absoluteFilePath();
  inspect_want_.any_slot = true;
  post([path, slot](EngineController* c) { c->RT_openFile(path, slot); });
}

void MainWindow::UI_openRunFile(const QString& path) {
  UI_openFile(path);
}

void MainWindow::UI_openDump(const QString& path, int slot) {
  inspect_want_ = InspectWanted{};
  inspect_want_.slot = slot;
  inspect_want_.dump = QFileInfo(path).absoluteFilePath();
  post([path, slot](EngineController* c) { c->RT_openDump(path, slot); });
}

void MainWindow::UI_goLive() {
  if (!offline_ && have_live_) return;
  offline_ = false;
  sel_->setFoldChosen(false);
  setWindowTitle("nanscope");
  if (have_live_)
    post([](EngineController* c) { c->RT_resync(); });
  else
    UI_configure(settings_.scenario);
  updateControls();
}

void MainWindow::onRunFileLoaded(UpdatePtr u) {
  ctrl_->requestPause();  // a live run stops; its session waits for "Back to live run"
  offline_ = true;
  sel_->setFoldChosen(false);
  // Nothing of the previous source stays: no selection, no buffer in the inspector.
  sel_->setSlot(-1);
  sel_->setStep(-1);
  inspect_want_ = InspectWanted{};
  ctrl_->requestInspect(-1);
  inspector_->clear();
  // The name filter and the go-to box were about the other file's slots and steps (a view file
  // sets its own filter as the file is shown).
  slot_filter_->clear();
  go_to_->clear();
  UI_applyUpdate(std::move(u));
  addRecent(view_->source);
  if (pending_sweep_fold_ >= 0 &&
      static_cast<std::size_t>(pending_sweep_fold_) < view_->folds.size()) {
    sel_->setFold(pending_sweep_fold_);  // the fold double-clicked in the sweep view
    sel_->setFoldChosen(true);
    refreshViews(false);
  }
  pending_sweep_fold_ = -1;
}

void MainWindow::onError(int error_class, const QString& message) {
  pending_view_.reset();  // a view waiting for a run file that was refused is not applied later
  // Non-modal: the engine and the window go on; the box names the file, key or slot and offers
  // what can be done about it.
  auto* box = new QMessageBox(QMessageBox::Warning, "nanscope", message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setObjectName("errorBox");
  const auto cls = static_cast<ErrorClass>(error_class);
  last_error_class_ = error_class;
  if (cls == ErrorClass::Device) {
    box->setInformativeText("The CUDA device is not used again in this session.");
    connect(box->addButton("Use the CPU backend", QMessageBox::AcceptRole), &QPushButton::clicked,
            this, &MainWindow::UI_useCpu);
    connect(box->addButton("Open a run file (offline)...", QMessageBox::ActionRole),
            &QPushButton::clicked, this, [this] {
              const QString p =
                  QFileDialog::getOpenFileName(this, "Open run file or dump", {}, "HDF5 (*.h5)");
              if (!p.isEmpty()) UI_openFile(p);
            });
  } else if (cls == ErrorClass::Config && !have_live_) {
    box->setInformativeText(
        "Fix the config, or run the scenario with its defaults, or pick another scenario.");
    connect(box->addButton("Use defaults", QMessageBox::AcceptRole), &QPushButton::clicked, this,
            &MainWindow::UI_useDefaults);
  }
  box->open();
  if (!have_view_ && !have_live_) {  // nothing shown yet (a refused file on the command line, say)
    problem_ = (cls == ErrorClass::File ? "no file shown: " : "no run: ") + message +
               " (File > Open, or File > Back to live run)";
    refreshViews(false);
  }
  Q_EMIT errorShown(message);
}

void MainWindow::onSessionLost(const QString& reason) {
  have_live_ = false;
  problem_ = reason;
  if (!offline_) {  // nothing live to show: no controls that would silently do nothing
    running_ = false;
    *view_ = Snapshot{};
    have_view_ = false;
    inspector_->clear();
    refreshViews(true);
  }
  updateControls();
}

void MainWindow::addRecent(const QString& path) {
  QSettings qs;
  QStringList r = qs.value("recentFiles").toStringList();
  r.removeAll(path);
  r.prepend(path);
  while (r.size() > 8) r.removeLast();
  qs.setValue("recentFiles", r);
  fillRecentMenu();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings qs;
  qs.setValue("window/geometry", saveGeometry());
  qs.setValue("window/state", saveState());
  QMainWindow::closeEvent(e);
}

}  // namespace nanscope::gui
