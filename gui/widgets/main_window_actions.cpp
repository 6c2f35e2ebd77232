// MainWindow: menus, the toolbar, the metrics panel's tools, the status bar and navigation (jump
// to the entry point, next and previous first fire, zoom to fit, follow the newest step), with
// the shortcuts docs/gui.md lists.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QStyle>
#include <QTableWidget>
#include <QToolBar>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "backend_choice.h"
#include "core/version.h"
#include "io/h5.h"
#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "session/scenarios.h"
#include "widgets/main_window.h"
#include "widgets/run_status_bar.h"

namespace nanscope::gui {

namespace {
QString with_shortcut(const QString& tip, const QKeySequence& key) {
  return key.isEmpty() ? tip : QString("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText));
}
}  // namespace

void MainWindow::buildActions() {
  auto* file = menuBar()->addMenu("&File");
  QAction* open = file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton),
                                  "&Open run file or dump...", QKeySequence::Open, this, [this] {
                                    const QString p = QFileDialog::getOpenFileName(
                                        this, "Open run file, dump or view", {},
                                        "nanscope files (*.h5 *.nsview);;All files (*)");
                                    if (!p.isEmpty()) UI_openFile(p);
                                  });
  open->setToolTip(
      with_shortcut("open a run file (offline) or a dump (inspector)", open->shortcut()));
  file->addAction("Open s&weep...", this,
                  [this] {
                    const QString d = QFileDialog::getExistingDirectory(
                        this, "Open a sweep directory (it holds sweep.toml)");
                    if (!d.isEmpty()) UI_openSweep(d);
                  })
      ->setToolTip("a sweep's tasks x folds, refreshed while they run (docs/sweeps.md)");
  file->addAction("Open &view...", this,
                  [this] {
                    const QString p = QFileDialog::getOpenFileName(this, "Open a view", {},
                                                                   "nanscope view (*.nsview)");
                    if (!p.isEmpty()) UI_openViewFile(p);
                  })
      ->setToolTip("open a saved view: its run file, selection, zoom, series and layout");
  file->addAction("&Save view...", this,
                  [this] {
                    const QString p = QFileDialog::getSaveFileName(
                        this, "Save the view", "view.nsview", "nanscope view (*.nsview)");
                    QString error;
                    if (!p.isEmpty() && !saveViewFile(p, &error)) showMessage(error);
                  })
      ->setToolTip("save the run file's name, the selection, zoom, series and layout, to share");
  recent_menu_ = file->addMenu("Recent");
  fillRecentMenu();
  live_action_ = file->addAction("Back to &live run", QKeySequence(Qt::CTRL | Qt::Key_L), this,
                                 [this] { UI_goLive(); });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  auto* edit = menuBar()->addMenu("&Edit");
  QAction* copy =
      edit->addAction("&Copy cell summary", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), this,
                      [this] { UI_copyCell(); });
  copy->setToolTip(with_shortcut(
      "copy the selected cell's fold, step, slot, state and health as text", copy->shortcut()));
  QAction* filter = edit->addAction("&Filter slots", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F),
                                    this, [this] {
                                      slot_filter_->setFocus();
                                      slot_filter_->selectAll();
                                    });
  filter->setToolTip(
      with_shortcut("type part of a slot's name: the Slots table shows the slots that match",
                    filter->shortcut()));
  auto* run = menuBar()->addMenu("&Run");
  auto* tb = addToolBar("Step controls");
  tb->setObjectName("controls");
  tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  scenario_ = new QComboBox;
  scenario_->setObjectName("scenarioBox");
  for (const auto& s : scenarios()) {
    scenario_->addItem(QString::fromStdString(s.name));
    scenario_->setItemData(scenario_->count() - 1, QString::fromStdString(s.mechanism),
                           Qt::ToolTipRole);
  }
  scenario_->setCurrentText(settings_.scenario);
  // A list that drops below the box (some styles open the list over the box, shifted to put the
  // current item under the pointer, where a click picks another item than the one aimed at).
  scenario_->setStyleSheet("QComboBox { combobox-popup: 0; }");
  auto describe = [this] {
    const Scenario* s = find_scenario(scenario_->currentText().toStdString());
    scenario_->setToolTip(QString("scenario preset (picking another restarts the run)%1")
                              .arg(s ? "\n" + QString::fromStdString(s->mechanism) : QString()));
  };
  describe();
  connect(scenario_, &QComboBox::currentTextChanged, this, describe);
  connect(scenario_, &QComboBox::textActivated, this, [this](const QString& name) {
    if (name == view_->scenario) return;
    confirmRestart(QString("Switch to scenario %1?").arg(name),
                   [this, name] { UI_configure(name); });
  });
  tb->addWidget(scenario_);
  auto add = [&](QStyle::StandardPixmap icon, const QString& text, QKeySequence key,
                 const QString& tip, auto fn) {
    QAction* a = run->addAction(style()->standardIcon(icon), text, key, this, fn);
    a->setToolTip(with_shortcut(tip, key));
    tb->addAction(a);
    live_actions_ << a;
    return a;
  };
  add(QStyle::SP_ArrowForward, "Step phase", QKeySequence(Qt::Key_F11),
      "run the next phase of the step", [this] { UI_stepPhase(); });
  add(QStyle::SP_MediaSkipForward, "Step", QKeySequence(Qt::Key_F10), "run the rest of the step",
      [this] { UI_step(); });
  add(QStyle::SP_MediaSeekForward, "Run to fold end", QKeySequence(Qt::CTRL | Qt::Key_F10),
      "run to the end of the fold", [this] { UI_run(EngineController::UntilFoldEnd); });
  add(QStyle::SP_MessageBoxWarning, "Run until fire", QKeySequence(Qt::Key_F5),
      "run until a slot fires for the first time in its fold",
      [this] { UI_run(EngineController::UntilFire); });
  add(QStyle::SP_MediaPlay, "Run", QKeySequence(Qt::CTRL | Qt::Key_F5),
      "run to the end (breakpoints stop it)", [this] { UI_run(EngineController::UntilEnd); });
  pause_action_ = add(QStyle::SP_MediaPause, "Pause", QKeySequence(Qt::Key_Escape),
                      "stop after the current step", [this] { UI_pause(); });
  pause_action_->setShortcuts({QKeySequence(Qt::Key_Escape), QKeySequence(Qt::Key_Pause)});
  QAction* stop =
      add(QStyle::SP_MediaStop, "Stop", QKeySequence(Qt::SHIFT | Qt::Key_F5),
          "stop and start the run again from fold 0, step 0", [this] {
            confirmRestart("Start the run again from fold 0, step 0?", [this] { UI_stop(); });
          });
  QAction* brk = add(QStyle::SP_DialogApplyButton, "Break on slot", QKeySequence(Qt::Key_F9),
                     "stop after the selected slot first fires in a fold",
                     [this] { UI_toggleBreakOnSelected(); });
  live_anytime_ = {stop, brk};  // usable while running, too
  run->addSeparator();
  graph_action_ = run->addAction("Graph mode (CUDA)");
  graph_action_->setCheckable(true);
  graph_action_->setChecked(false);
  graph_action_->setToolTip(
      "run whole steps as one captured CUDA graph; phase steps stay ungraphed");
  connect(graph_action_, &QAction::triggered, this, [this](bool on) {
    settings_.graph = on;
    post([on](EngineController* c) { c->RT_setGraph(on); });
  });
  buildNavigateTools();
  buildViewMenu();
  buildHelpMenu();
}

void MainWindow::buildViewMenu() {
  auto* view = menuBar()->addMenu("&View");
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
  for (QToolBar* t : findChildren<QToolBar*>()) view->addAction(t->toggleViewAction());
  view->addSeparator();
  auto add = [&](const QString& text, QKeySequence key, const QString& tip, auto fn) {
    QAction* a = view->addAction(text, key, this, fn);
    a->setToolTip(with_shortcut(tip, key));
    return a;
  };
  add("Jump to entry point", QKeySequence(Qt::CTRL | Qt::Key_E),
      "select the run's entry point: its fold, step and slot", [this] { UI_jumpToEntry(); });
  add("Step back", QKeySequence(Qt::SHIFT | Qt::Key_F10),
      "select the step before the selected one (the newest step when none is): its buffer "
      "recomputed from a checkpoint",
      [this] { UI_stepBack(); });
  add("Next event", QKeySequence(Qt::Key_F8),
      "select the next first fire, watch trip or halt (any fold; which kinds: View > F8 walks)",
      [this] { UI_nextFire(true); });
  add("Previous event", QKeySequence(Qt::SHIFT | Qt::Key_F8), "select the previous one",
      [this] { UI_nextFire(false); });
  QMenu* walks = view->addMenu("F8 walks");
  for (auto [text, kinds] :
       {std::pair{"first fires", std::vector{EventKind::FirstFire}},
        {"watch trips", std::vector{EventKind::Watch}},
        {"halts and breakpoints", std::vector{EventKind::HaltNan, EventKind::HaltGradCollapse,
                                              EventKind::HaltWatch, EventKind::Breakpoint}}}) {
    QAction* a = walks->addAction(text);
    a->setCheckable(true);
    a->setChecked(true);
    connect(a, &QAction::toggled, this, [this, kinds](bool on) {
      for (EventKind k : kinds)
        if (on)
          walked_.insert(k);
        else
          walked_.erase(k);
    });
    for (EventKind k : kinds) walked_.insert(k);
  }
  add("Go to step...", QKeySequence(Qt::CTRL | Qt::Key_G),
      "the go-to box: STEP or FOLD:STEP selects the selected slot's cell there", [this] {
        go_to_->setFocus();
        go_to_->selectAll();
      });
  add("Zoom to fit", QKeySequence(Qt::CTRL | Qt::Key_0),
      "show every step of the fold and of the run", [this] { UI_zoomToFit(); });
  follow_action_ =
      add("Follow newest step", QKeySequence(Qt::CTRL | Qt::Key_F),
          "keep the newest step in view while running (off: scrub, the view stays put)",
          [this](bool on) { UI_setFollow(on); });
  follow_action_->setCheckable(true);
  follow_action_->setChecked(true);
  view->addSeparator();
  add("Step grid: state", QKeySequence(Qt::CTRL | Qt::Key_1),
      "the slot x step grid shows each cell's state", [this] { UI_showMagnitude(false); });
  add("Step grid: magnitude", QKeySequence(Qt::CTRL | Qt::Key_2),
      "the slot x step grid shows log10 of each slot's largest finite |value| per step",
      [this] { UI_showMagnitude(true); });
  add("Compare last clean / first bad", QKeySequence(Qt::CTRL | Qt::Key_D),
      "step compare: the selected fold's last clean step and its first bad one", [this] {
        UI_compareDefault();
        // Brought forward: Ctrl+D is asked for to be seen (the dock shares its tab with Events).
        if (auto* d = findChild<QDockWidget*>("compareDock")) {
          d->show();
          d->raise();
        }
      });
}

void MainWindow::buildHelpMenu() {
  auto* help = menuBar()->addMenu("&Help");
  help->setObjectName("helpMenu");
  help->addAction("&Keyboard shortcuts", QKeySequence(Qt::Key_F1), this,
                  [this] { showShortcuts(); });
  help->addAction("&Documentation", this, [this] {
    // Installed docs first (the .deb), then the source tree's.
    for (const QString& dir : {QString("/usr/share/doc/nanscope"), QString(NANSCOPE_DOCS_DIR)})
      if (QFileInfo::exists(dir + "/gui.md")) {
        openPath(dir + "/gui.md", "the documentation");
        return;
      }
    openPath({}, "the documentation");
  });
  help->addAction("&About nanscope", this, [this] { showAbout(); });
}

void MainWindow::showShortcuts() {
  auto* d = new QDialog(this);
  d->setAttribute(Qt::WA_DeleteOnClose);
  d->setObjectName("shortcutsDialog");
  d->setWindowTitle("Keyboard shortcuts");
  auto* table = new QTableWidget(0, 3, d);
  table->setHorizontalHeaderLabels({"shortcut", "action", "what it does"});
  for (QAction* menu : menuBar()->actions())
    for (QAction* a : menu->menu()->actions()) {
      if (a->shortcuts().isEmpty()) continue;
      QStringList keys;
      for (const auto& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
      const int r = table->rowCount();
      table->insertRow(r);
      table->setItem(r, 0, new QTableWidgetItem(keys.join(", ")));
      table->setItem(r, 1, new QTableWidgetItem(QString(a->text()).remove('&')));
      table->setItem(r, 2,
                     new QTableWidgetItem(a->toolTip() == a->text() ? QString() : a->toolTip()));
    }
  for (const auto& [keys, what] : std::vector<std::pair<QString, QString>>{
           {"arrows, Home, End", "move the selected cell in a grid (click a grid first)"},
           {"wheel, drag", "zoom and pan the steps of a grid or the metrics"}}) {
    const int r = table->rowCount();
    table->insertRow(r);
    table->setItem(r, 0, new QTableWidgetItem(keys));
    table->setItem(r, 2, new QTableWidgetItem(what));
  }
  table->horizontalHeader()->setStretchLastSection(true);
  table->setWordWrap(true);  // a long description on two lines rather than cut with "..."
  table->setTextElideMode(Qt::ElideNone);
  table->resizeColumnsToContents();
  table->verticalHeader()->setVisible(false);
  auto* lay = new QVBoxLayout(d);
  lay->addWidget(table);
  d->resize(900, 560);
  d->show();
  table->resizeRowsToContents();  // once the last column has its width
}

void MainWindow::showAbout() {
  const QString text =
      QString(
          "<b>nanscope %1</b><br>Hunt NaNs in a distributional deep-RL trainer.<br><br>"
          "Qt %2<br>HDF5 %3<br>%4<br>device of this run: %5<br><br>GPL-3.0-or-later")
          .arg(kVersion, qVersion(), QString::fromStdString(h5::hdf5_version()),
               QString::fromStdString(cuda_description()).toHtmlEscaped(),
               view_->device.isEmpty() ? QString("-") : view_->device);
  auto* box = new QMessageBox(QMessageBox::NoIcon, "About nanscope", text, QMessageBox::Ok, this);
  box->setObjectName("aboutBox");
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

QWidget* MainWindow::buildMetricsPanel() {
  auto* panel = new QWidget;
  auto* lay = new QVBoxLayout(panel);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->setSpacing(0);
  auto* tools = new QToolBar;
  tools->setObjectName("metricsTools");
  tools->setWindowTitle("Metrics tools");  // its entry in View (untitled, it was a blank line)
  tools->setIconSize(QSize(16, 16));
  tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  auto* series = new QToolButton;
  series->setText("Series");
  series->setToolTip(
      "pick the series to plot: every loss term, the gradient norm and each group's, and the "
      "selected slot's health");
  series->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(series);
  for (int i = 0; i < MetricsPlot::kSeriesCount; ++i) {
    QAction* a = menu->addAction(MetricsPlot::seriesName(i));
    a->setCheckable(true);
    a->setData(i);
    a->setChecked(metrics_->seriesVisible(i));
    connect(a, &QAction::toggled, this, [this, i](bool on) { metrics_->setSeriesVisible(i, on); });
  }
  // The ticks follow the plot, whoever changed it (a view file, a script).
  connect(menu, &QMenu::aboutToShow, this, [this, menu] {
    for (QAction* a : menu->actions()) {
      const int i = a->data().isValid() ? a->data().toInt() : -1;
      if (i < 0) continue;
      const QSignalBlocker quiet(a);
      a->setChecked(metrics_->seriesVisible(i));
    }
  });
  menu->addSection("slot health (own axis)");
  buildHealthSeriesMenu(menu);
  series->setMenu(menu);
  tools->addWidget(series);
  QAction* log = tools->addAction("Log scale");
  log->setCheckable(true);
  log->setToolTip(
      "logarithmic value axes (non-positive values are not drawn; non-finite steps stay shaded)");
  connect(log, &QAction::toggled, metrics_, &MetricsPlot::setLogScale);
  connect(metrics_, &MetricsPlot::logScaleChanged, log, [log](bool on) {
    const QSignalBlocker quiet(log);
    log->setChecked(on);
  });
  tools
      ->addAction(style()->standardIcon(QStyle::SP_BrowserReload), "Fit", this,
                  [this] { UI_zoomToFit(); })
      ->setToolTip("show every step (Ctrl+0)");
  tools
      ->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), "PNG...", this,
                  [this] {
                    const QString p = QFileDialog::getSaveFileName(this, "Export the metrics view",
                                                                   "metrics.png", "PNG (*.png)");
                    if (!p.isEmpty() && !metrics_->savePng(p)) showMessage("could not write " + p);
                  })
      ->setToolTip("export the metrics view as it is shown, as PNG");
  tools
      ->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), "CSV...", this,
                  [this] {
                    const QString p = QFileDialog::getSaveFileName(this, "Export the series",
                                                                   "metrics.csv", "CSV (*.csv)");
                    if (!p.isEmpty() && !metrics_->exportCsv(p))
                      showMessage("could not write " + p);
                  })
      ->setToolTip(
          "export every series of every step as CSV (non-finite values as nan, inf, -inf)");
  lay->addWidget(tools);
  lay->addWidget(metrics_, 1);
  return panel;
}

void MainWindow::buildStatusBar() {
  status_ = new RunStatusBar(statusBar());
  connect(status_, &RunStatusBar::pauseRequested, this, [this] { UI_pause(); });
  connect(status_, &RunStatusBar::folderRequested, this,
          [this](const QString& dir) { openPath(dir, "the run's folder"); });
}

StatusMode MainWindow::statusMode() const {
  return StatusMode{have_view_, offline_, have_live_, running_, problem_};
}

QString MainWindow::armedText() const {
  return armed_text(*view_);
}

QProgressBar* MainWindow::progressBar() const {
  return status_->progress();
}

void MainWindow::updateProgress() {
  status_->show(*view_, statusMode());
}

void MainWindow::confirmRestart(const QString& what, std::function<void()> then) {
  if (offline_ || !have_live_ || view_->global_step == 0) {
    then();
    return;
  }
  auto* box = new QMessageBox(
      QMessageBox::Question, "nanscope",
      QString("%1\nThe live run's %2 steps of history are dropped (its files stay).")
          .arg(what)
          .arg(view_->global_step),
      QMessageBox::NoButton, this);
  box->setObjectName("restartBox");
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box->addButton("Restart", QMessageBox::AcceptRole), &QPushButton::clicked, this, then);
  connect(box->addButton(QMessageBox::Cancel), &QPushButton::clicked, this,
          [this] { scenario_->setCurrentText(view_->scenario); });
  box->open();
}

// The step grid shows the selected fold's steps, the metrics every step of the run: a zoom or pan
// of one moves the other to the same steps (offset by the fold's first global step).
void MainWindow::connectNavigation() {
  connect(step_plot_, &GridPlot::columnRangeChangedByUser, this, [this](double lo, double hi) {
    if (syncing_ranges_) return;
    syncing_ranges_ = true;
    const double begin = static_cast<double>(view_->fold_steps(sel_->fold()).first);
    metrics_->setStepRange(begin + lo, begin + hi);
    syncing_ranges_ = false;
  });
  connect(metrics_, &MetricsPlot::stepRangeChangedByUser, this, [this](double lo, double hi) {
    if (syncing_ranges_) return;
    syncing_ranges_ = true;
    const double begin = static_cast<double>(view_->fold_steps(sel_->fold()).first);
    step_plot_->setColumnRange(lo - begin, hi - begin);
    syncing_ranges_ = false;
  });
  for (auto* p : {step_plot_, fold_plot_})
    connect(p, &GridPlot::followChanged, this, [this](bool on) {
      if (!on) UI_setFollow(false);
    });
  connect(metrics_, &MetricsPlot::followChanged, this, [this](bool on) {
    if (!on) UI_setFollow(false);
  });
}

void MainWindow::UI_setFollow(bool on) {
  follow_action_->setChecked(on);
  step_plot_->setFollow(on);
  fold_plot_->setFollow(on);
  metrics_->setFollow(on);
}

void MainWindow::UI_zoomToFit() {
  for (GridPlot* p : {fold_plot_, step_plot_}) p->zoomToFit();
  metrics_->zoomToFit();
}

void MainWindow::UI_selectCell(int slot, int fold, int step) {
  sel_->setFoldChosen(true);  // a cell of this fold, which updates then leave where it is
  if (fold != sel_->fold()) UI_selectFold(fold);
  sel_->setStep(step);
  UI_selectSlot(slot);
}

void MainWindow::UI_jumpToEntry() {
  if (!view_->entry) {
    showMessage("no entry point: nothing has fired");
    return;
  }
  UI_selectCell(view_->entry->slot, view_->entry->fold, view_->entry->step);
  centreStep(view_->entry->step);
}

void MainWindow::UI_nextFire(bool forward) {
  // The walked events (View > F8 walks) in run order: (fold, step); the current position is the
  // selected fold and step.
  const std::pair<int, int> at{sel_->fold(), sel_->step()};
  const SnapshotEvent* best = nullptr;
  for (const auto& e : view_->events) {
    if (!walked_.count(e.kind)) continue;
    const std::pair<int, int> p{e.fold, e.step};
    if (forward ? p > at && (!best || p < std::pair{best->fold, best->step})
                : p < at && (!best || p > std::pair{best->fold, best->step}))
      best = &e;
  }
  if (!best) {
    showMessage(forward ? "no later event of the kinds F8 walks"
                        : "no earlier event of the kinds F8 walks");
    return;
  }
  showMessage(
      QString("%1 at fold %2, step %3").arg(kind_text(best->kind)).arg(best->fold).arg(best->step));
  // An event without a slot (a gradient collapse) keeps the selected slot.
  UI_selectCell(best->entry_slot >= 0 ? best->entry_slot : std::max(sel_->slot(), 0), best->fold,
                best->step);
}

// Opens a file or folder with the desktop's program for it; where there is none (no desktop, no
// launcher) it says so and gives the path to copy, instead of failing silently.
void MainWindow::openPath(const QString& path, const QString& what) {
  if (!path.isEmpty() && QDesktopServices::openUrl(QUrl::fromLocalFile(path))) return;
  auto* box = new QMessageBox(
      QMessageBox::Information, "nanscope",
      path.isEmpty() ? QString("%1 is not installed (no gui.md found).").arg(what)
                     : QString("No program to open %1 was found on this desktop.").arg(what),
      QMessageBox::Ok, this);
  box->setObjectName("openPathBox");
  box->setAttribute(Qt::WA_DeleteOnClose);
  if (!path.isEmpty()) box->setInformativeText("Its path (select to copy):\n" + path);
  box->setTextInteractionFlags(Qt::TextSelectableByMouse);
  box->open();
}

// File > Recent: the files opened, newest first, as they are opened in this session too.
void MainWindow::fillRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& r : recent) recent_menu_->addAction(r, this, [this, r] { UI_openFile(r); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

}  // namespace nanscope::gui
