// Qt Test (offscreen) of the real window, what it shows: stepping, the grids live and offline,
// the inspector, injections, files opened by content, events, the state file and bad files. The
// walkthrough's findings (../shared/reviews/workbench-walkthrough.md, bugs 1-15) each have a test
// here or in workbench_run_test.cpp, named after what the window must do; they drive the window
// and assert what it shows.
#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "plots/magnitude_plot.h"
#include "widgets/window_placement.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

class WorkbenchTest : public QObject, public GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  // At 1280x800 and 1600x1000 each row of the fold grid, the step grid and the magnitude view is
  // at the same height on screen (a slot read across the grids is one slot), and no grid is
  // clipped: its last row is inside the window.
  void theGridsRowsLineUpAtEverySize() {
    MainWindow w(settings("healthy"), three_fold_run_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot(), 10000);
    const int last = static_cast<int>(shown_slot_count()) - 1;
    const auto row_y = [&](QCustomPlot* plot, int row) {
      plot->replot();
      return plot->mapTo(&w, QPoint(0, static_cast<int>(plot->yAxis->coordToPixel(row)))).y();
    };
    for (const QSize size : {QSize(1280, 800), QSize(1600, 1000), QSize(1000, 640)}) {
      w.resize(size);
      if (size.width() >= 1280) QCOMPARE(w.size(), size);  // a 1280x800 screen holds the window
      for (bool magnitude : {false, true}) {
        w.UI_showMagnitude(magnitude);
        QApplication::processEvents();
        QCustomPlot* beside = magnitude ? static_cast<QCustomPlot*>(w.magnitudePlot())
                                        : static_cast<QCustomPlot*>(w.stepPlot());
        for (int row : {0, last / 2, last}) {
          const int fold_y = row_y(w.foldPlot(), row), beside_y = row_y(beside, row);
          QVERIFY2(std::abs(fold_y - beside_y) <= 1,
                   qPrintable(QString("%1x%2: row %3 at %4 in the fold grid, %5 in the %6")
                                  .arg(size.width())
                                  .arg(size.height())
                                  .arg(row)
                                  .arg(fold_y)
                                  .arg(beside_y)
                                  .arg(magnitude ? "magnitude view" : "step grid")));
        }
      }
      w.UI_showMagnitude(false);
      // The fold grid's row labels never overprint: consecutive labels a line apart at least.
      const auto labels =
          qSharedPointerCast<QCPAxisTickerText>(w.foldPlot()->yAxis->ticker())->ticks().keys();
      QVERIFY(labels.size() >= 2);
      const double line = QFontMetrics(w.foldPlot()->yAxis->tickLabelFont()).height();
      for (int i = 1; i < labels.size(); ++i)
        QVERIFY2(std::abs(w.foldPlot()->yAxis->coordToPixel(labels[i]) -
                          w.foldPlot()->yAxis->coordToPixel(labels[i - 1])) >= line,
                 qPrintable(QString("%1x%2: labels of rows %3 and %4 overprint")
                                .arg(size.width())
                                .arg(size.height())
                                .arg(labels[i - 1])
                                .arg(labels[i])));
      const QWidget* area = w.foldPlot()->parentWidget();
      QVERIFY2(row_y(w.foldPlot(), last) < area->mapTo(&w, QPoint(0, area->height())).y(),
               qPrintable(QString("%1x%2: the fold grid's last row is cut off")
                              .arg(size.width())
                              .arg(size.height())));
    }
  }

  // A window larger than its screen (a size saved on a bigger one) opens within it: shrunk to the
  // available area, never below its minimum size, and moved inside.
  void theWindowOpensWithinItsScreen() {
    MainWindow w(settings("healthy"));
    w.resize(5000, 4000);
    w.move(3000, 2000);
    keep_within_screen(w);
    const QRect area = w.screen()->availableGeometry();
    QVERIFY(w.width() <= std::max(area.width(), w.minimumSize().width()));
    QVERIFY(w.height() <= std::max(area.height(), w.minimumSize().height()));
    QVERIFY(w.width() < 5000 && w.height() < 4000);
    QVERIFY2(area.contains(w.geometry().topLeft()),
             qPrintable(QString("%1,%2 outside the screen").arg(w.x()).arg(w.y())));
  }

  void initTestCase() { setUpCase(); }

  void steppingAdvancesTheStepAndTheGrid() {
    MainWindow w(settings("healthy"));
    QAbstractItemModelTester t1(w.foldGrid()), t2(w.stepGrid()), t3(w.slotTable()), t4(w.events());
    waitReady(w);
    QCOMPARE(w.snapshot()->global_step, 0);
    w.UI_stepPhase();
    QTRY_COMPARE(w.snapshot()->next_phase, QString("forward"));
    w.UI_step();  // finishes the phase-stepped step
    QTRY_COMPARE(w.snapshot()->global_step, 1);
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 2);
    QCOMPARE(w.stepGrid()->columnCount(), 2);
    QCOMPARE(w.foldGrid()->columnCount(), 1);
    QCOMPARE(w.foldGrid()->index(0, 0).data(SlotGridModel::CodeRole).toInt(), int(kCellClean));
    // Row labels: index and name, in dataflow order (slot 12 iqn_tau is finalised second).
    QCOMPARE(w.foldGrid()->headerData(1, Qt::Vertical, Qt::DisplayRole).toString(),
             QString("12 iqn_tau"));
    QCOMPARE(w.slotTable()->stateOf(kEnsembleDLogits), QString("deferred"));
    QCOMPARE(w.stepGridLabel(), QString("slot x step (fold 0)"));
  }

  void auxBlowupUntilFireThenTheSameGridOffline() {
    MainWindow w(settings("aux-blowup"));
    QAbstractItemModelTester t1(w.foldGrid()), t2(w.stepGrid()), t3(w.slotTable()), t4(w.events());
    waitReady(w);
    w.UI_run(EngineController::UntilFire);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->entry.has_value(), 20000);
    QCOMPARE(w.snapshot()->global_step, 2);  // fired at step 1
    QCOMPARE(w.slotTable()->stateOf(kBwDHS2Aux), QString("fired"));
    QCOMPARE(w.slotTable()->stateOf(kBwDHS2Main), QString("clean"));
    QVERIFY2(w.entryText().contains("aux_pred_nb"), qPrintable(w.entryText()));
    QVERIFY2(w.backwardText().contains("aux"), qPrintable(w.backwardText()));
    // Run until fire records the same halt event as the CLI's --until-fire (bug 15).
    QCOMPARE(w.events()->rowCount(), 2);
    QVERIFY(w.snapshot()->halt->kind == EventKind::HaltNan);
    const RunFileData file = read_run_file(w.snapshot()->run_file.toStdString());
    QCOMPARE(file.events.size(), std::size_t{2});
    QVERIFY(file.events[1].kind == EventKind::HaltNan);

    const QString dump = w.events()->index(0, 0).data(EventsModel::DumpPathRole).toString();
    QVERIFY(QFile::exists(dump));
    w.UI_openDump(dump, kAuxPredNb);
    QTRY_VERIFY(w.inspector()->stats() &&
                w.inspector()->stats()->source == BufferStats::Source::Dump);
    QCOMPARE(w.inspector()->stats()->slot, int(kAuxPredNb));
    QVERIFY(w.inspector()->stats()->nan + w.inspector()->stats()->posinf +
                w.inspector()->stats()->neginf >
            0);

    const auto live = grid_codes(w.foldGrid());
    const auto live_steps = grid_codes(w.stepGrid());
    w.UI_openFile(w.snapshot()->run_file);
    QTRY_VERIFY(w.offline());
    QCOMPARE(grid_codes(w.foldGrid()), live);
    QCOMPARE(grid_codes(w.stepGrid()), live_steps);
    QVERIFY(w.entryText().contains("aux_pred_nb"));
    QVERIFY(w.backwardText().contains("aux"));
  }

  // Bug 1: a run file on the command line opens offline, with no live session and no run folder;
  // File > Open during a live run is not overwritten by the run's last live update.

  void aRunFileOpensOfflineAndNoLiveUpdateTouchesIt() {
    QTemporaryDir out;
    EngineSettings s = settings("healthy");
    s.out_root = out.path();
    {
      MainWindow w(s, three_fold_run_);
      waitOffline(w, three_fold_run_);
      QTest::qWait(500);  // time for a live update to arrive, were there a live session
      QVERIFY(w.offline());
      QVERIFY(!w.hasLiveSession());
      QCOMPARE(w.foldGrid()->columnCount(), 3);
      QCOMPARE(w.events()->rowCount(), 3);
      QVERIFY2(w.statusText().startsWith("offline: "), qPrintable(w.statusText()));
      for (QAction* a : w.liveActions()) QVERIFY2(!a->isEnabled(), qPrintable(a->text()));
      QVERIFY(QDir(out.path())
                  .entryList(QDir::Dirs | QDir::NoDotAndDotDot)
                  .isEmpty());  // no runs/gui-*
    }
    MainWindow w(settings("healthy", {"run.steps_per_fold=100000"}));
    waitReady(w);
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->running && w.snapshot()->global_step > 2, 20000);
    w.UI_openFile(three_fold_run_);
    waitOffline(w, three_fold_run_);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running(), 5000);  // the live run paused; its last update comes
    QTest::qWait(400);
    QVERIFY(w.offline());
    QCOMPARE(w.events()->rowCount(), 3);
    QCOMPARE(w.foldGrid()->columnCount(), 3);
    // Even a whole new live picture (what the engine sends after a restart) leaves the file shown.
    QSignalSpy shown(&w, &MainWindow::snapshotShown);
    QMetaObject::invokeMethod(
        w.controller(), [c = w.controller()] { c->RT_resync(); }, Qt::QueuedConnection);
    QTest::qWait(400);
    QCOMPARE(shown.count(), 0);
    QVERIFY(w.offline());
    QCOMPARE(w.events()->rowCount(), 3);
    QVERIFY(w.snapshot()->source.endsWith("run.h5"));
    // Back to live: the paused live run as it was.
    w.UI_goLive();
    QTRY_VERIFY(!w.offline() && w.snapshot()->source == "live");
    QVERIFY(w.snapshot()->global_step > 2);
  }

  // A watch trip is a warning: the file's watch events are listed, and none is taken for the halt
  // that stopped the run (there was none).
  void aWatchTripIsListedAndIsNotAHalt() {
    ConfigBuilder b;
    for (const auto& x : kSmall) b.set(x.toStdString());
    b.set("run.folds=1");
    b.set("run.steps_per_fold=3");
    b.set("watch.grad_vanish=1e9");  // every group's norm is below it: each trips at step 0
    const Config c = b.build();
    SessionOptions o;
    o.out_dir = dir_.filePath("watch").toStdString();
    Session s(c, make_cpu_backend(c), o);
    s.run();
    QVERIFY(!s.halt());
    QVERIFY(!s.watch_trips().empty());
    const QString file = QString::fromStdString(s.run_file_path());
    MainWindow w(settings("healthy"), file);
    waitOffline(w, file);
    QVERIFY(!w.snapshot()->halt);
    QCOMPARE(w.events()->rowCount(), static_cast<int>(s.events().size()));
    int watches = 0;
    for (int r = 0; r < w.events()->rowCount(); ++r)
      watches += w.events()->index(r, EventsModel::Kind).data().toString() == "watch";
    QCOMPARE(watches, static_cast<int>(s.watch_trips().size()));
    // The grids show where: slot 21 warned in fold 0 and at step 0, clean at step 1 (a trip is
    // noted once per fold); every other slot as it was.
    const int row = row_of_slot(kGradNorm);
    auto code = [&](QAbstractItemModel* m, int r, int c) {
      return m->index(r, c).data(SlotGridModel::CodeRole).toInt();
    };
    QCOMPARE(code(w.foldGrid(), row, 0), int(kCellWarned));
    QCOMPARE(code(w.stepGrid(), row, 0), int(kCellWarned));
    QCOMPARE(code(w.stepGrid(), row, 1), int(kCellClean));
    QCOMPARE(code(w.stepGrid(), row_of_slot(kHS1), 0), int(kCellClean));
  }

  // Bugs 2 and 7: the inspector follows the selected slot at every step and names the step whose
  // buffer it shows (0-based, as the entry point, tooltips and dumps); never another run's buffer.

  void theInspectorFollowsTheSelectedSlotAndNamesItsStep() {
    MainWindow w(settings("aux-blowup"));
    waitReady(w);
    w.UI_selectSlot(kTotalLoss);
    QTRY_VERIFY(w.inspector()->stats() && w.inspector()->stats()->slot == kTotalLoss);
    QVERIFY(!w.inspector()->stats()->computed);  // before the first step: not computed yet
    QVERIFY(w.inspector()->summaryText().contains("not computed yet"));
    w.UI_step();
    QTRY_COMPARE(w.inspector()->stats()->step, 0);
    QVERIFY2(w.inspector()->summaryText().contains("live: fold 0, step 0"),
             qPrintable(w.inspector()->summaryText()));
    QCOMPARE(w.inspector()->stats()->nan, 0);
    w.UI_run(EngineController::UntilFire);  // aux_pred_nb first fires at step 1; so does total_loss
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->entry.has_value(), 20000);
    QTRY_COMPARE(w.inspector()->stats()->step, w.snapshot()->entry->step);
    QCOMPARE(w.slotTable()->stateOf(kTotalLoss), QString("fired"));
    QVERIFY(w.inspector()->stats()->nan + w.inspector()->stats()->posinf +
                w.inspector()->stats()->neginf >
            0);
    w.UI_selectSlot(kAuxPredNb);
    QTRY_COMPARE(w.inspector()->stats()->slot, int(kAuxPredNb));
    QVERIFY2(w.inspector()->summaryText().contains("live: fold 0, step 1"),
             qPrintable(w.inspector()->summaryText()));
    // Stop: a new run; the inspector shows that run's buffer (not computed yet), not the old one.
    w.UI_stop();
    QTRY_VERIFY(w.inspector()->stats() && !w.inspector()->stats()->computed);
    QTRY_COMPARE(w.snapshot()->global_step, 0);
    w.UI_configure("log-zero");
    QTRY_COMPARE(w.snapshot()->scenario, QString("log-zero"));
    QVERIFY(!w.inspector()->stats() || !w.inspector()->stats()->computed);
  }

  // Bug 3: an invalid injection is refused before anything is rebuilt: the session stays, the
  // spec stays out, and a valid one afterwards works.

  void anInvalidInjectionKeepsTheSessionAndStaysOut() {
    MainWindow w(settings("healthy"));
    waitReady(w);
    QSignalSpy errors(&w, &MainWindow::errorShown);
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 1);
    w.UI_inject("slot:batch@0:999:nan:0");
    QTRY_COMPARE(errors.count(), 1);
    QVERIFY(errors.at(0).at(0).toString().contains("step 999 is beyond the fold"));
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 2);  // the same session goes on
    QVERIFY(w.snapshot()->injections.empty());
    w.UI_inject("slot:aux_loss@0:4");
    QTRY_VERIFY(w.snapshot()->injections.size() == 1 && w.snapshot()->global_step == 0);
    QCOMPARE(errors.count(), 1);
    QCOMPARE(QString::fromStdString(w.snapshot()->injections[0]), QString("slot:aux_loss@0:4"));
    // Bug 14: the injection is part of the run's recorded config, shown and written.
    QVERIFY(w.snapshot()->config_toml.contains("slot:aux_loss@0:4"));
    // Named once, beside the position (the status text no longer counts them).
    QVERIFY2(w.armedText().contains("injections: slot:aux_loss@0:4"), qPrintable(w.armedText()));
    QVERIFY(!w.statusText().contains("injection"));
    const RunFileData file = read_run_file(w.snapshot()->run_file.toStdString());
    QVERIFY(QString::fromStdString(file.config_toml).contains("slot:aux_loss@0:4"));
  }

  // Bugs 4, 5: offline, the C51 loss is the file's; clicking a fold's cell shows that fold in the
  // step grid (label, entry frame) and the slot table; every fold's entry is framed.

  void offlineShowsTheSelectedFoldAndTheFilesLosses() {
    MainWindow w(settings("healthy"), three_fold_run_);
    waitOffline(w, three_fold_run_);
    const RunFileData file = read_run_file(three_fold_run_.toStdString());
    QCOMPARE(w.snapshot()->steps.size(), file.steps.size());
    for (std::size_t i = 0; i < file.steps.size(); ++i) {
      QCOMPARE(w.snapshot()->steps[i].losses.c51, file.steps[i].losses.c51);
      QVERIFY(file.steps[i].losses.c51 > 1.0);
    }
    QCOMPARE(w.foldPlot()->entries().size(), std::size_t{3});  // each fold's entry framed
    QCOMPARE(w.selectedFold(), 0);                             // the run's entry fold
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.foldPlot()->replot(QCustomPlot::rpImmediateRefresh);
    QTest::mouseClick(w.foldPlot(), Qt::LeftButton, {}, cell_pixel(w.foldPlot(), 1, kAuxPredNb));
    QCOMPARE(w.selectedFold(), 1);
    QCOMPARE(w.selectedSlot(), int(kAuxPredNb));
    QCOMPARE(w.stepGridLabel(), QString("slot x step (fold 1)"));
    QCOMPARE(w.stepPlot()->xAxis->label(), QString("slot x step (fold 1)"));
    const auto frame = w.stepPlot()->entries();
    QCOMPARE(frame.size(), std::size_t{1});
    QCOMPARE(frame[0], std::make_pair(int(kAuxPredNb), 3));
    QCOMPARE(w.slotTable()->stateOf(kAuxPredNb), QString("fired"));
    QCOMPARE(w.slotTable()->stateOf(kBnDConcat), QString("clean"));  // fold 0's fire, not fold 1's
    QTRY_VERIFY(w.inspector()->stats() &&
                w.inspector()->stats()->source == BufferStats::Source::Dump);
    QCOMPARE(w.inspector()->stats()->fold, 1);
    QCOMPARE(w.inspector()->stats()->slot, int(kAuxPredNb));
  }

  // Bug 6: steps whose loss is not finite are shaded, the axis holds every step, fires are marked.

  void theMetricsShowNonFiniteStepsAndFireMarks() {
    MainWindow w(settings("aux-blowup"));
    waitReady(w);
    // The events table says what will appear in it until something does.
    auto* no_events = w.findChild<QLabel*>("eventsEmpty");
    QVERIFY(no_events && !no_events->isHidden());
    w.UI_run(EngineController::UntilFoldEnd);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->global_step == 20, 30000);
    const auto bad = w.metrics()->nonfiniteRanges();
    QVERIFY(!bad.empty());
    QCOMPARE(bad.back().second, 19);
    QCOMPARE(w.metrics()->xAxis->range().upper, 19.5);
    QCOMPARE(w.metrics()->xAxis->range().lower, -0.5);
    const auto fires = w.metrics()->fireMarks();
    QVERIFY(!fires.empty());
    QCOMPARE(fires.front(), 1);
    // What the plot shows: the band over steps 1-19 (under the series), the fire's line at step 1,
    // and no band over step 0, whose loss is finite.
    MetricsPlot* m = w.metrics();
    const QImage img = m->toPixmap().toImage();
    const QRect r = m->axisRect()->rect();
    auto colour_at = [&](double step, int y) {
      return QColor(img.pixel(static_cast<int>(std::lround(m->xAxis->coordToPixel(step))), y));
    };
    int band = 0, clear = 0;
    for (int y = r.top() + 2; y < r.bottom() - 2; y += 7) {
      band += colour_at(10.3, y) == MetricsPlot::nonfiniteBandColour();
      clear += colour_at(-0.3, y) == QColor(Qt::white);
    }
    const int rows = (r.height() - 4 + 6) / 7;
    QVERIFY2(band > rows * 3 / 4, qPrintable(QString("band at %1 of %2 rows").arg(band).arg(rows)));
    QVERIFY2(clear > rows * 3 / 4,
             qPrintable(QString("white at %1 of %2 rows").arg(clear).arg(rows)));
    QCOMPARE(colour_at(1, r.center().y() + 3), MetricsPlot::fireMarkColour());
    QVERIFY(no_events->isHidden());
  }

  // Bug 8: Run until fire stops at a new first fire; a breakpoint stops once per slot and fold.

  void fileOpenDecidesByContent() {
    MainWindow w(settings("healthy"));
    waitReady(w);
    const QString renamed = dir_.filePath("copy_of_run_fold3.h5");
    QFile::remove(renamed);
    QVERIFY(QFile::copy(three_fold_run_, renamed));
    w.UI_openFile(renamed);
    waitOffline(w, renamed);
    QCOMPARE(w.events()->rowCount(), 3);
    const RunFileData file = read_run_file(three_fold_run_.toStdString());
    const QString dump = QFileInfo(three_fold_run_).absolutePath() + "/" +
                         QString::fromStdString(file.events[0].dump);
    const QString named_like_a_run = dir_.filePath("dump_named_run.h5");
    QFile::remove(named_like_a_run);
    QVERIFY(QFile::copy(dump, named_like_a_run));
    w.UI_openFile(named_like_a_run);
    QTRY_VERIFY(w.inspector()->stats() &&
                w.inspector()->stats()->path.endsWith("dump_named_run.h5"));
    QCOMPARE(w.inspector()->stats()->slot, int(kBnDConcat));
  }

  // Bug 10: a bad config says what is wrong, no control pretends to work, and defaults recover.

  void doubleClickingAnEventOpensItsSlotInItsDump() {
    MainWindow w(settings("aux-blowup"));
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    waitReady(w);
    w.UI_run(EngineController::UntilFire);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->entry.has_value(), 20000);
    w.UI_selectSlot(kTotalLoss);  // selected, and in the dump too
    auto* view = w.findChild<QTableView*>("eventsView");
    QVERIFY(view);
    const QRect row = view->visualRect(view->model()->index(0, 2));
    QSignalSpy dbl(view, &QAbstractItemView::doubleClicked);
    // A double click as the user makes it: a click, then the second press arrives as a double
    // click.
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, row.center());
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, row.center());
    QCOMPARE(dbl.count(), 1);
    QTRY_VERIFY(w.inspector()->stats() &&
                w.inspector()->stats()->source == BufferStats::Source::Dump);
    QCOMPARE(w.inspector()->stats()->slot, int(kAuxPredNb));
    QCOMPARE(w.selectedSlot(), int(kAuxPredNb));
  }

  // Bug 12: clicking an empty grid selects the row; F9 says what it did.

  void clickingAnEmptyGridSelectsTheRowAndF9SaysWhatItDid() {
    MainWindow w(settings("healthy"));
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    waitReady(w);
    w.UI_toggleBreakOnSelected();  // nothing selected yet
    QVERIFY2(w.statusBar()->currentMessage().contains("select a slot first"),
             qPrintable(w.statusBar()->currentMessage()));
    w.foldPlot()->replot(QCustomPlot::rpImmediateRefresh);
    QTest::mouseClick(w.foldPlot(), Qt::LeftButton, {}, cell_pixel(w.foldPlot(), 0, kAuxDHS2Nb));
    QCOMPARE(w.selectedSlot(), int(kAuxDHS2Nb));
    w.UI_toggleBreakOnSelected();
    QVERIFY2(w.statusBar()->currentMessage().contains("breakpoint on slot 30 aux_dh_s2_nb set"),
             qPrintable(w.statusBar()->currentMessage()));
    QTRY_VERIFY(w.snapshot()->breakpoints.count(kAuxDHS2Nb));
  }

  // Bug 13: unticking a check changes the steps from the next one on, never the history.

  void theStateFileSaysWhatTheWindowShows() {
    const QString shot = dir_.filePath("s.png"), state = dir_.filePath("s.json");
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    const QString config_home = dir_.filePath("config-home");  // where the user's layout would go
    env.insert("XDG_CONFIG_HOME", config_home);
    p.setProcessEnvironment(env);
    p.start(QString(NANSCOPE_GUI_BINARY),
            {three_fold_run_, "--screenshot", shot, "--screenshot-after", "steps:0", "--state-json",
             state, "--out-root", dir_.filePath("unused")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(QFile::exists(shot));
    QVERIFY(!QDir(dir_.filePath("unused")).exists());  // no live session, no run folder
    QVERIFY(
        !QFile::exists(config_home + "/nanscope/nanscope.conf"));  // the user's layout untouched
    QFile f(state);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(o["mode"].toString(), QString("offline"));
    QVERIFY(o["source"].toString().endsWith("run.h5"));
    QCOMPARE(o["folds"].toArray().size(), 3);
    QCOMPARE(o["events"].toArray().size(), 3);
    for (const auto& e : o["events"].toArray())  // first fires: the kinds at their step
      QVERIFY2(e.toObject()["detail"].toString() != "-",
               qPrintable(e.toObject()["detail"].toString()));
    QCOMPARE(o["entry_frames"].toArray().size(), 3);
    const int want_slot[3] = {kBnDConcat, kAuxPredNb, kC51Loss}, want_step[3] = {5, 3, 7};
    for (int k = 0; k < 3; ++k) {
      const QJsonObject fold = o["folds"].toArray()[k].toObject();
      QCOMPARE(fold["entry"].toObject()["slot"].toInt(), want_slot[k]);
      QCOMPARE(fold["entry"].toObject()["step"].toInt(), want_step[k]);
      QCOMPARE(fold["slots"].toArray().size(), kBuiltinSlotCount);
    }
    const QJsonObject grid = o["step_grid"].toObject();
    QCOMPARE(grid["fold"].toInt(), 0);
    QCOMPARE(grid["last_step"].toInt(), 11);
    QVERIFY(o["status"].toString().startsWith("offline: "));
    for (const char* key : {"fold", "inspector", "events", "step_grid"})
      QVERIFY2(o.contains(key), key);
  }

  // Bug 15: `nanscope --help` works without a display.

  void smallDetailsTellTheTruth() {
    QVERIFY(cell_color(kCellAbsent) != cell_color(kCellNotRun));
    QVERIFY(cell_color(kCellAbsent).lightness() < 220);
    MainWindow w(settings("aux-blowup"));
    waitReady(w);
    QVERIFY(!w.graphAction()->isEnabled());
    QVERIFY(!w.graphAction()->isChecked());
    w.UI_run(EngineController::UntilFire);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->entry.has_value(), 20000);
    w.UI_selectSlot(kTotalLoss);  // one element, NaN
    QTRY_VERIFY(w.inspector()->stats() && w.inspector()->stats()->slot == kTotalLoss &&
                w.inspector()->stats()->nan == 1);
    QVERIFY(w.inspector()->stats()->histogram.empty());
  }

  void badFilesGiveAMessageNotACrash() {
    MainWindow w(settings("healthy"));
    waitReady(w);
    QSignalSpy errors(&w, &MainWindow::errorShown);
    QFile junk(dir_.filePath("junk.h5"));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("this is not HDF5");
    junk.close();
    w.UI_openFile(junk.fileName());
    QTRY_COMPARE(errors.count(), 1);
    QVERIFY(errors.at(0).at(0).toString().contains("not an HDF5 file"));
    auto* box = error_box(w);
    QVERIFY(box && box->isVisible());
    box->close();
    w.UI_openFile(dir_.filePath("missing/run.h5"));
    QTRY_COMPARE(errors.count(), 2);
    w.UI_openDump(junk.fileName());
    QTRY_COMPARE(errors.count(), 3);
    QVERIFY(!w.offline());
    w.UI_step();  // the live session still works
    QTRY_COMPARE(w.snapshot()->global_step, 1);
  }
};

NANSCOPE_GUI_TEST("workbench", WorkbenchTest);
#include "workbench_test.moc"
