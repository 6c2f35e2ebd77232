// Qt Test (offscreen) of the real window, how it runs: run until fire and breakpoints once per new
// fire, a bad config, check and break toggles, pause, the engine answering within a step during a
// run, a device error and --help without a display.
#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

class WorkbenchRunTest : public QObject, public GuiFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { setUpCase(); }

  void runUntilFireAndBreakpointsStopOncePerNewFire() {
    // c51_loss fires at every step, from step 0; no fold-end halt (the config's policy)
    MainWindow w(settings("log-zero", {"halt.on_fire=never"}));
    waitReady(w);
    w.UI_run(EngineController::UntilFire);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->halt.has_value(), 20000);
    QCOMPARE(w.snapshot()->global_step, 1);
    w.UI_run(EngineController::UntilFire);  // nothing new in fold 0: on to fold 1's first fire
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->global_step > 1, 20000);
    QCOMPARE(w.snapshot()->halt->fold, 1);
    QCOMPARE(w.snapshot()->halt->step, 0);
    QCOMPARE(w.snapshot()->global_step, 21);

    w.UI_stop();
    QTRY_COMPARE(w.snapshot()->global_step, 0);
    w.UI_selectSlot(kC51Loss);
    w.UI_toggleBreakOnSelected();
    QTRY_VERIFY(w.snapshot()->breakpoints.count(kC51Loss));
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->global_step == 1, 20000);
    QVERIFY(w.snapshot()->halt->kind == EventKind::Breakpoint);
    w.UI_run(EngineController::UntilEnd);  // Continue: once per slot and fold, so on to fold 1
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->global_step == 21, 20000);
    QCOMPARE(w.snapshot()->halt->fold, 1);
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->finished, 20000);
    int breaks = 0;
    for (const auto& e : w.snapshot()->events) breaks += e.kind == EventKind::Breakpoint;
    QCOMPARE(breaks, 2);
    // A finished run says so, and the controls that cannot act are off (bug 15).
    QVERIFY2(w.statusText().contains("finished"), qPrintable(w.statusText()));
    for (QAction* a : w.liveActions())
      QCOMPARE(a->isEnabled(), a->text() == "Stop" || a->text() == "Break on slot");
  }

  // Bug 9: File > Open tells a run file from a dump by content, whatever the names.

  void aBadConfigSaysWhatAndOffersDefaults() {
    MainWindow w(settings("healthy", {"run.folds=abc"}));
    QTRY_VERIFY_WITH_TIMEOUT(error_box(w) != nullptr, 10000);
    QMessageBox* box = error_box(w);
    QVERIFY2(box->text().contains("run.folds"), qPrintable(box->text()));
    QTRY_VERIFY(!w.hasLiveSession());
    for (QAction* a : w.liveActions()) QVERIFY2(!a->isEnabled(), qPrintable(a->text()));
    QVERIFY2(w.statusText().contains("no run"), qPrintable(w.statusText()));
    QPushButton* defaults = button(box, "Use defaults");
    QVERIFY(defaults);
    defaults->click();
    waitReady(w);
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 1);
    QCOMPARE(w.snapshot()->steps_per_fold, 400);  // the defaults, without the --set overrides
  }

  // Bug 11: double-clicking an event opens that event's slot in its dump.

  // F10 answers with the step at once; the run file follows when the stepping pauses, and a
  // window closed right after a step still leaves that step in the file.
  void steppedRunsKeepTheirFileCurrent() {
    QString path;
    {
      MainWindow w(settings("healthy"));
      waitReady(w);
      for (int i = 0; i < 3; ++i) w.UI_step();
      QTRY_COMPARE(w.snapshot()->global_step, 3);
      path = w.snapshot()->run_file;
      QTRY_COMPARE_WITH_TIMEOUT(read_run_file(path.toStdString()).steps.size(), std::size_t{3},
                                5000);
      w.UI_step();
      QTRY_COMPARE(w.snapshot()->global_step, 4);
    }  // closed before the pause
    QCOMPARE(read_run_file(path.toStdString()).steps.size(), std::size_t{4});
  }

  void uncheckingASlotChangesOnlyLaterSteps() {
    MainWindow w(settings("healthy"));
    waitReady(w);
    for (int i = 0; i < 3; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 3);
    QVERIFY(w.slotTable()->setData(
        w.slotTable()->index(row_of_slot(kBwDHS2Main), SlotTableModel::Check), Qt::Unchecked,
        Qt::CheckStateRole));
    QTRY_COMPARE(w.slotTable()->stateOf(kBwDHS2Main), QString("disabled"));
    for (int i = 0; i < 2; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 5);
    for (int s = 0; s < 3; ++s) QCOMPARE(step_code(w, kBwDHS2Main, s), int(kCellClean));
    for (int s = 3; s < 5; ++s) QCOMPARE(step_code(w, kBwDHS2Main, s), int(kCellDisabled));
  }

  void checkToggleTurnsASlotOffAndOn() {
    MainWindow w(settings("healthy", {"inject.faults=[\"slot:aux_loss@0:2\"]"}));
    waitReady(w);
    const QModelIndex check = w.slotTable()->index(row_of_slot(kAuxLoss), SlotTableModel::Check);
    QCOMPARE(check.data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QVERIFY(w.slotTable()->setData(check, Qt::Unchecked, Qt::CheckStateRole));
    QTRY_COMPARE(w.slotTable()->stateOf(kAuxLoss), QString("disabled"));
    QVERIFY(w.snapshot()->config_toml.contains("disabled = [ 18 ]"));
    for (int i = 0; i < 3; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 3);
    QCOMPARE(w.slotTable()->stateOf(kAuxLoss), QString("disabled"));  // not checked: not fired
    QCOMPARE(w.slotTable()->stateOf(kTotalLoss), QString("fired"));   // the fault still travels
    QVERIFY(w.slotTable()->setData(
        w.slotTable()->index(row_of_slot(kEnsembleDLogits), SlotTableModel::Check), Qt::Checked,
        Qt::CheckStateRole));
    QTRY_COMPARE(w.slotTable()->stateOf(kEnsembleDLogits), QString("clean"));
  }

  void breakOnSlotStopsWhereTheEngineSays() {
    MainWindow w(
        settings("healthy", {"inject.faults=[\"slot:aux_loss@0:1\", \"slot:aux_dh_s2_nb@0:4\"]"}));
    waitReady(w);
    const int row = row_of_slot(kAuxDHS2Nb);
    QVERIFY(w.slotTable()->setData(w.slotTable()->index(row, SlotTableModel::BreakOn), Qt::Checked,
                                   Qt::CheckStateRole));
    QTRY_VERIFY(w.snapshot()->breakpoints.count(kAuxDHS2Nb));
    QCOMPARE(w.slotTable()->index(row, SlotTableModel::BreakOn).data(Qt::CheckStateRole).toInt(),
             int(Qt::Checked));
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->halt.has_value(), 20000);
    QVERIFY(w.snapshot()->halt->kind == EventKind::Breakpoint);
    QCOMPARE(w.snapshot()->halt->fold, 0);
    QCOMPARE(w.snapshot()->halt->step, 4);  // aux_loss fired at step 1 and did not stop the run
    QCOMPARE(w.snapshot()->global_step, 5);
    QVERIFY(w.entryText().contains("aux_loss"));
  }

  void pauseTakesEffectWhileRunning() {
    MainWindow w(settings("healthy", {"run.steps_per_fold=100000"}));
    waitReady(w);
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->running && w.snapshot()->global_step > 3, 20000);
    w.UI_pause();
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && !w.snapshot()->running, 5000);
    const auto at = w.snapshot()->global_step;
    QTest::qWait(300);
    QCOMPARE(w.snapshot()->global_step, at);  // it stays paused
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, at + 1);
    // Picking another scenario while running stops the run and starts the new one at step 0.
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->running, 20000);
    w.UI_configure("log-zero");
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->scenario == "log-zero" && w.snapshot()->global_step == 0,
                             20000);
    // Picking the scenario that is running does not restart it (bug 15).
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 1);
    w.UI_configure("log-zero");
    QTest::qWait(300);
    QCOMPARE(w.snapshot()->global_step, 1);
  }

  // What to build 2: during a run of the default config on the CPU backend (~75 ms a step), a
  // breakpoint takes effect and an inspect is answered within one step of the request (plus the
  // step in flight), measured in steps.

  void theEngineAnswersWithinAStepDuringARun() {
    EngineSettings s;
    s.scenario = "healthy";
    s.out_root = dir_.path();
    MainWindow w(s);
    waitReady(w);
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->running && w.snapshot()->global_step >= 3, 30000);
    const std::int64_t asked = w.snapshot()->global_step;  // the newest step the window has seen
    w.UI_selectSlot(kTotalLoss);
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->stats() && w.inspector()->stats()->slot == kTotalLoss,
                             5000);
    const std::int64_t answered = w.inspector()->stats()->step;  // fold 0: the global step
    QVERIFY2(answered <= asked + 2,
             qPrintable(QString("asked at %1, answered at %2").arg(asked).arg(answered)));
    const std::int64_t set_at = w.snapshot()->global_step;
    w.slotTable()->setData(w.slotTable()->index(row_of_slot(kAuxLoss), SlotTableModel::BreakOn),
                           Qt::Checked, Qt::CheckStateRole);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->breakpoints.count(kAuxLoss), 5000);
    QVERIFY2(w.snapshot()->global_step <= set_at + 2,
             qPrintable(
                 QString("set at %1, in effect at %2").arg(set_at).arg(w.snapshot()->global_step)));
    QVERIFY(w.snapshot()->running);  // answered while the run goes on
    w.UI_pause();
    QTRY_VERIFY_WITH_TIMEOUT(!w.running(), 5000);
  }

  // What to build 4: after a device error the window offers the CPU backend, and the device is
  // not used again.

  void aDeviceErrorOffersTheCpuBackend() {
    EngineSettings s = settings("healthy");
    auto made = std::make_shared<int>(0);
    s.make_backend = [made](const Config& c) {
      ++*made;
      return std::unique_ptr<Backend>(std::make_unique<FailingDevice>(c, 2));
    };
    MainWindow w(s);
    waitReady(w);
    QCOMPARE(w.snapshot()->backend, QString("cuda"));
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(error_box(w) != nullptr, 20000);
    QMessageBox* box = error_box(w);
    QVERIFY2(box->text().contains("illegal memory access"), qPrintable(box->text()));
    QTRY_VERIFY(!w.hasLiveSession());
    for (QAction* a : w.liveActions()) QVERIFY(!a->isEnabled());
    QVERIFY(button(box, "Open a run file (offline)..."));
    QPushButton* cpu = button(box, "Use the CPU backend");
    QVERIFY(cpu);
    cpu->click();
    waitReady(w);
    QCOMPARE(w.snapshot()->backend, QString("cpu"));
    for (int i = 0; i < 4; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 4);
    QCOMPARE(*made, 1);  // the failing device was built once, never again
  }

  // What to build 5 and Done when 2: the window says what it shows; on the command line with a
  // 3-fold run file, a screenshot and the state file show offline mode, every event and each
  // fold's entry framed.

  void helpWorksWithoutADisplay() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("DISPLAY");
    env.remove("WAYLAND_DISPLAY");
    env.remove("QT_QPA_PLATFORM");
    p.setProcessEnvironment(env);
    p.start(QString(NANSCOPE_GUI_BINARY), {"--help"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("--state-json"));
  }

  // Bug 15 (details): the absent swatch is seen; Graph mode is not ticked where it cannot act; a
  // buffer with no finite value draws its own empty histogram.
};

NANSCOPE_GUI_TEST("workbench_run", WorkbenchRunTest);
#include "workbench_run_test.moc"
