// Qt Test (offscreen) of the real window: stepping, running until a fire, breakpoints, pause,
// offline files, bad files, and QAbstractItemModelTester on every model.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "widgets/inspector_widget.h"
#include "widgets/main_window.h"

using namespace nanscope;
using namespace nanscope::gui;

namespace {
const QStringList kSmall = {"data.bars=600",     "model.batch=16",     "model.hidden=16",
                            "model.bottleneck=8", "model.iqn_n=4",      "model.iqn_n_target=4",
                            "model.iqn_k=4",      "model.iqn_cos=8",    "model.aux_hidden=8",
                            "run.folds=2",        "run.steps_per_fold=20"};

std::vector<int> grid_codes(SlotGridModel* m) {
  std::vector<int> out;
  for (int r = 0; r < m->rowCount(); ++r)
    for (int c = 0; c < m->columnCount(); ++c) out.push_back(m->index(r, c).data(SlotGridModel::CodeRole).toInt());
  return out;
}
}  // namespace

class WorkbenchTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  EngineSettings settings(const QString& scenario, QStringList extra = {}) {
    EngineSettings s;
    s.scenario = scenario;
    s.sets = kSmall + extra;
    s.out_root = dir_.path();
    return s;
  }
  static void waitReady(MainWindow& w) { QTRY_VERIFY_WITH_TIMEOUT(w.snapshot() != nullptr, 10000); }

 private Q_SLOTS:
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
    QCOMPARE(w.foldGrid()->headerData(1, Qt::Vertical, Qt::DisplayRole).toString(), QString("12 iqn_tau"));
    QCOMPARE(w.slotTable()->stateOf(kEnsembleDLogits), QString("deferred"));
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
    QCOMPARE(w.events()->rowCount(), 1);
    // The inspector shows the entry buffer from its dump.
    const QString dump = w.events()->index(0, 0).data(EventsModel::DumpPathRole).toString();
    QVERIFY(QFile::exists(dump));
    w.UI_selectSlot(kAuxPredNb);
    w.UI_openDump(dump);
    QVERIFY(w.inspector()->stats() && w.inspector()->stats()->slot == kAuxPredNb);
    QVERIFY(w.inspector()->stats()->nan + w.inspector()->stats()->posinf + w.inspector()->stats()->neginf > 0);

    const auto live = grid_codes(w.foldGrid());
    const auto live_steps = grid_codes(w.stepGrid());
    w.UI_openRunFile(w.snapshot()->run_file);
    QVERIFY(w.snapshot()->offline);
    QCOMPARE(grid_codes(w.foldGrid()), live);
    QCOMPARE(grid_codes(w.stepGrid()), live_steps);
    QVERIFY(w.entryText().contains("aux_pred_nb"));
    QVERIFY(w.backwardText().contains("aux"));
  }

  void breakOnSlotStopsWhereTheEngineSays() {
    MainWindow w(settings("healthy", {"inject.faults=[\"slot:aux_loss@0:1\", \"slot:aux_dh_s2_nb@0:4\"]"}));
    waitReady(w);
    const auto& order = dataflow_order();
    const int row = static_cast<int>(std::find(order.begin(), order.end(), kAuxDHS2Nb) - order.begin());
    QVERIFY(w.slotTable()->setData(w.slotTable()->index(row, SlotTableModel::BreakOn), Qt::Checked, Qt::CheckStateRole));
    QTRY_VERIFY(w.snapshot()->breakpoints.count(kAuxDHS2Nb));
    QCOMPARE(w.slotTable()->index(row, SlotTableModel::BreakOn).data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && w.snapshot()->halt.has_value(), 20000);
    QCOMPARE(w.snapshot()->halt->kind, QString("breakpoint"));
    QCOMPARE(w.snapshot()->halt->fold, 0);
    QCOMPARE(w.snapshot()->halt->step, 4);  // aux_loss fired at step 1 and did not stop the run
    QCOMPARE(w.snapshot()->global_step, 5);
    QVERIFY(w.entryText().contains("aux_loss"));
  }

  void checkToggleTurnsASlotOffAndOn() {
    MainWindow w(settings("healthy", {"inject.faults=[\"slot:aux_loss@0:2\"]"}));
    waitReady(w);
    const auto& order = dataflow_order();
    const int row = static_cast<int>(std::find(order.begin(), order.end(), kAuxLoss) - order.begin());
    const QModelIndex check = w.slotTable()->index(row, SlotTableModel::Check);
    QCOMPARE(check.data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QVERIFY(w.slotTable()->setData(check, Qt::Unchecked, Qt::CheckStateRole));
    QTRY_COMPARE(w.slotTable()->stateOf(kAuxLoss), QString("disabled"));
    QVERIFY(w.snapshot()->config_toml.contains("disabled = [ 18 ]"));
    for (int i = 0; i < 3; ++i) w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, 3);
    QCOMPARE(w.slotTable()->stateOf(kAuxLoss), QString("disabled"));  // not checked: not fired
    QCOMPARE(w.slotTable()->stateOf(kTotalLoss), QString("fired"));   // the fault still travels
    // Absent slots cannot be switched on; the deferred slot 31 can.
    const int r31 = static_cast<int>(std::find(order.begin(), order.end(), kEnsembleDLogits) - order.begin());
    QVERIFY(w.slotTable()->setData(w.slotTable()->index(r31, SlotTableModel::Check), Qt::Checked, Qt::CheckStateRole));
    QTRY_COMPARE(w.slotTable()->stateOf(kEnsembleDLogits), QString("clean"));
  }

  void pauseTakesEffectWhileRunning() {
    MainWindow w(settings("healthy", {"run.steps_per_fold=100000"}));
    waitReady(w);
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->running && w.snapshot()->global_step > 3, 20000);
    w.UI_pause();
    QTRY_VERIFY_WITH_TIMEOUT(!w.running() && !w.snapshot()->running, 5000);
    const auto at = w.snapshot()->global_step;
    QVERIFY(at < 200000);
    QTest::qWait(300);
    QCOMPARE(w.snapshot()->global_step, at);  // it stays paused
    w.UI_step();
    QTRY_COMPARE(w.snapshot()->global_step, at + 1);
    // Picking another scenario while running stops the run and starts the new one at step 0.
    w.UI_run(EngineController::UntilEnd);
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->running, 20000);
    w.UI_configure("log-zero");
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot()->scenario == "log-zero" && w.snapshot()->global_step == 0, 20000);
  }

  void badFilesGiveAMessageNotACrash() {
    MainWindow w(settings("healthy"));
    waitReady(w);
    QSignalSpy errors(&w, &MainWindow::errorShown);
    QFile junk(dir_.filePath("junk.h5"));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("this is not HDF5");
    junk.close();
    w.UI_openRunFile(junk.fileName());
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.at(0).at(0).toString().contains("not an HDF5 file"));
    auto* box = w.findChild<QMessageBox*>("errorBox");
    QVERIFY(box && box->isVisible());
    box->close();
    w.UI_openRunFile(dir_.filePath("missing/run.h5"));
    QCOMPARE(errors.count(), 2);
    w.UI_openDump(junk.fileName());
    QCOMPARE(errors.count(), 3);
    w.UI_step();  // the live session still works
    QTRY_COMPARE(w.snapshot()->global_step, 1);
  }
};

QTEST_MAIN(WorkbenchTest)
#include "workbench_test.moc"
